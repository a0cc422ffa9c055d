"""The Spark Connect benchmark's client script: one PySpark ML pipeline, run unchanged against hearth's server
(`sc://127.0.0.1:PORT`) or against Spark's own Connect server (`local[2]`, which PySpark starts), timed after
the session has started.

usage: python3 connect_pipeline.py REMOTE PARQUET RUNS FEATURE,FEATURE,…   -> prints one JSON report
"""

import json
import statistics
import sys
import time

from pyspark.ml import Pipeline
from pyspark.ml.classification import LogisticRegression
from pyspark.ml.evaluation import BinaryClassificationEvaluator, MulticlassClassificationEvaluator
from pyspark.ml.feature import StandardScaler, StringIndexer, VectorAssembler
from pyspark.sql import SparkSession

remote, parquet, runs, features = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
spark = SparkSession.builder.remote(remote).getOrCreate()
spark.range(1).count()  # the session is up: everything below is timed

round_trips = []
for _ in range(20):
    started = time.perf_counter()
    spark.range(1).count()
    round_trips.append(time.perf_counter() - started)


def pipeline():
    """Read, index the label, assemble, scale, fit LogisticRegression, predict, evaluate twice."""
    events = spark.read.parquet(parquet)
    model = Pipeline(stages=[
        StringIndexer(inputCol="Label", outputCol="label", stringOrderType="alphabetAsc"),
        VectorAssembler(inputCols=features, outputCol="raw"),
        StandardScaler(inputCol="raw", outputCol="features"),
        LogisticRegression(maxIter=100),
    ]).fit(events)
    predictions = model.transform(events)
    accuracy = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(predictions)
    auc = BinaryClassificationEvaluator().evaluate(predictions)
    return model, accuracy, auc


times = []
for _ in range(runs):
    started = time.perf_counter()
    model, accuracy, auc = pipeline()
    times.append(time.perf_counter() - started)
report = {
    "seconds": times,
    "round_trip_ms": statistics.median(round_trips) * 1000,
    "accuracy": accuracy,
    "auc": auc,
    "coefficients": list(model.stages[-1].coefficients),
    "intercept": model.stages[-1].intercept,
    "client": __import__("pyspark").__version__,
}
spark.stop()
print(json.dumps(report))
