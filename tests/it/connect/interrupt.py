"""A training stage stopped from the client: a MultilayerPerceptronClassifier fit that would run for minutes,
interrupted by `spark.interruptAll()` from another thread, raises Spark's OPERATION_CANCELED soon after; the
server then trains the next model as fast as before.

usage: python interrupt.py sc://HOST:PORT   -> prints one JSON object
"""

import json
import random
import sys
import threading
import time

from pyspark.ml.classification import MultilayerPerceptronClassifier
from pyspark.ml.linalg import Vectors
from pyspark.sql import SparkSession

from outcome import error_of

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
rng = random.Random(7)
rows = [(Vectors.dense([rng.gauss(0, 1) for _ in range(8)]), float(rng.randrange(3))) for _ in range(2000)]
df = spark.createDataFrame(rows, ["features", "label"]).cache()


def perceptron(iterations):
    return MultilayerPerceptronClassifier(layers=[8, 32, 3], solver="gd", stepSize=0.01, tol=0.0,
                                          maxIter=iterations, seed=1)


seen = {}
start = time.monotonic()
short = perceptron(20).fit(df)
seen["short_seconds"] = time.monotonic() - start
seen["short_iterations"] = short.summary().totalIterations if short.hasSummary else None

outcome = {}


def long_fit():
    began = time.monotonic()
    outcome["error"] = error_of(lambda: perceptron(10_000_000).fit(df))
    outcome["seconds"] = time.monotonic() - began


fitting = threading.Thread(target=long_fit, daemon=True)
fitting.start()
time.sleep(2)
# The fit's operation may not have reached the server yet on a loaded machine: interrupt until one is.
interrupted, deadline = [], time.monotonic() + 60
while not interrupted and time.monotonic() < deadline:
    interrupted = spark.interruptAll()
    if not interrupted:
        time.sleep(0.5)
interrupted_at = time.monotonic()
seen["interrupted"] = len(interrupted)
fitting.join(timeout=60)
seen["stopped_within"] = time.monotonic() - interrupted_at
seen["still_fitting"] = fitting.is_alive()
seen["long_fit"] = outcome

start = time.monotonic()
again = perceptron(20).fit(df)
seen["again_seconds"] = time.monotonic() - start
seen["same_model"] = list(again.weights) == list(short.weights)
print(json.dumps(seen))
