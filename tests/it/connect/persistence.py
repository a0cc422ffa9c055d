"""Saving and loading pyspark.ml objects and DataFrames through hearth's server, as a PySpark user writes it:
models Spark saved (its own layout) load and predict; a pipeline fitted here saves, loads and predicts the
same; estimators keep their params; df.write writes what spark.read reads back; mistakes raise.

usage: python persistence.py sc://HOST:PORT SPARK_SAVED_DIR SPARK_SAVED_JSON WORK_DIR
    -> prints one JSON object of what it saw
"""

import json
import os
import sys

from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.classification import (
    LogisticRegression,
    LogisticRegressionModel,
    MultilayerPerceptronClassificationModel,
)
from pyspark.ml.clustering import KMeansModel
from pyspark.ml.feature import StandardScalerModel, StringIndexerModel
from pyspark.ml.regression import LinearRegressionModel
from pyspark.sql import SparkSession

from outcome import error_of

url, saved, saved_json, work = sys.argv[1:5]
spark = SparkSession.builder.remote(url).getOrCreate()
with open(saved_json) as f:
    spark_said = json.load(f)
rows = spark.createDataFrame(spark_said["rows"], ["cat", "x", "y", "label"])


def outputs(df, columns):
    collected = df.select(*columns).collect()
    return {c: [list(map(float, r[c])) if hasattr(r[c], "toArray") else r[c] for r in collected] for c in columns}


seen = {}

# Models Spark saved, loaded and applied here.
from_spark = PipelineModel.load(os.path.join(saved, "pipeline"))
seen["spark_pipeline_stages"] = [type(s).__name__ for s in from_spark.stages]
seen["spark_pipeline"] = outputs(from_spark.transform(rows), ["features", "rawPrediction", "probability", "prediction"])
features = PipelineModel(stages=from_spark.stages[:4]).transform(rows)
seen["spark_linreg"] = outputs(LinearRegressionModel.load(os.path.join(saved, "linreg")).transform(features), ["prediction"])
seen["spark_lrmulti"] = outputs(
    LogisticRegressionModel.load(os.path.join(saved, "lrmulti")).transform(features), ["probability", "prediction"]
)
seen["spark_mlp"] = outputs(
    MultilayerPerceptronClassificationModel.load(os.path.join(saved, "mlp")).transform(features),
    ["probability", "prediction"],
)
seen["spark_kmeans"] = outputs(KMeansModel.load(os.path.join(saved, "kmeans")).transform(features), ["prediction"])
unfitted = Pipeline.load(os.path.join(saved, "unfitted"))
seen["spark_unfitted"] = [
    [type(s).__name__, s.uid, {p.name: v for p, v in s.extractParamMap().items() if s.isSet(p)}]
    for s in unfitted.getStages()
]

# A pipeline fitted here: saved, loaded, applied.
fitted = unfitted.fit(rows)
before = outputs(fitted.transform(rows), ["probability", "prediction"])
path = os.path.join(work, "pipeline_model")
fitted.write().overwrite().save(path)
fitted.write().overwrite().save(path)
reloaded = PipelineModel.load(path)
seen["round_trip_same"] = outputs(reloaded.transform(rows), ["probability", "prediction"]) == before
seen["round_trip_uids"] = [s.uid for s in reloaded.stages] == [s.uid for s in fitted.stages]
seen["round_trip_labels"] = reloaded.stages[0].labels == fitted.stages[0].labels
seen["round_trip_mean"] = list(reloaded.stages[3].mean) == list(fitted.stages[3].mean)
seen["round_trip_coefficients"] = list(reloaded.stages[4].coefficients) == list(fitted.stages[4].coefficients)
seen["saved_layout"] = sorted(os.listdir(path)) + sorted(os.listdir(os.path.join(path, "stages")))
with open([os.path.join(path, "stages", d, "metadata", f) for d in sorted(os.listdir(os.path.join(path, "stages")))[:1]
           for f in os.listdir(os.path.join(path, "stages", d, "metadata")) if f.startswith("part-")][0]) as f:
    seen["indexer_metadata"] = json.loads(f.readline())

# One model and one estimator alone.
scaler_path = os.path.join(work, "scaler")
fitted.stages[3].save(scaler_path)
seen["scaler_std"] = list(StandardScalerModel.load(scaler_path).std) == list(fitted.stages[3].std)
lr = LogisticRegression(maxIter=7, regParam=0.5, labelCol="label")
lr.save(os.path.join(work, "lr"))
lr_back = LogisticRegression.load(os.path.join(work, "lr"))
seen["estimator"] = [lr_back.uid == lr.uid, lr_back.getMaxIter(), lr_back.getRegParam(), lr_back.isSet("tol")]

# LogisticRegression within bounds (Spark's L-BFGS-B): fitted, saved and loaded; an estimator keeps its dense
# and sparse bounds through a save.
from pyspark.ml.linalg import Matrices, Vectors

weighted = spark.createDataFrame(
    [
        (1.0, 1.0, Vectors.dense(0.0, 5.0)),
        (0.0, 2.0, Vectors.dense(1.0, 2.0)),
        (1.0, 3.0, Vectors.dense(2.0, 1.0)),
        (0.0, 4.0, Vectors.dense(3.0, 3.0)),
    ],
    ["label", "weight", "features"],
)
bounded = LogisticRegression(
    regParam=0.01,
    weightCol="weight",
    lowerBoundsOnCoefficients=Matrices.dense(1, 2, [-1.0, -1.0]),
    upperBoundsOnIntercepts=Vectors.dense(0.0),
).fit(weighted)
bounded.write().save(os.path.join(work, "bounded"))
bounded_back = LogisticRegressionModel.load(os.path.join(work, "bounded"))
seen["bounded"] = [list(bounded.coefficients), bounded.intercept, list(bounded_back.coefficients), bounded_back.intercept]
box = LogisticRegression(
    maxIter=1,
    lowerBoundsOnIntercepts=Vectors.dense([1, 2, 3, 4]),
    upperBoundsOnIntercepts=Vectors.sparse(4, [(1, 1.0), (3, 5.5)]),
    lowerBoundsOnCoefficients=Matrices.dense(3, 2, [0, 1, 4, 5, 9, 10]),
    upperBoundsOnCoefficients=Matrices.sparse(1, 1, [0, 1], [0], [2.0]),
)
box.save(os.path.join(work, "box"))
box_back = LogisticRegression.load(os.path.join(work, "box"))
getters = ["LowerBoundsOnIntercepts", "UpperBoundsOnIntercepts", "LowerBoundsOnCoefficients", "UpperBoundsOnCoefficients"]
seen["box_round_trip"] = [getattr(box, "get" + g)() == getattr(box_back, "get" + g)() for g in getters]
seen["box_types"] = [type(getattr(box_back, "get" + g)()).__name__ for g in getters]
metadata = os.path.join(work, "box", "metadata")
with open(os.path.join(metadata, [f for f in os.listdir(metadata) if f.startswith("part-")][0])) as f:
    seen["box_metadata"] = json.loads(f.readline())["paramMap"]
seen["box_fit"] = error_of(lambda: box.fit(weighted))

# An evaluator.
from pyspark.ml.evaluation import BinaryClassificationEvaluator

evaluator = BinaryClassificationEvaluator(metricName="areaUnderPR", numBins=50)
evaluator.save(os.path.join(work, "evaluator"))
evaluator_back = BinaryClassificationEvaluator.load(os.path.join(work, "evaluator"))
seen["evaluator"] = [evaluator_back.uid == evaluator.uid, evaluator_back.getMetricName(), evaluator_back.getNumBins()]

# Mistakes.
seen["exists"] = error_of(lambda: fitted.stages[3].save(scaler_path))
seen["wrong_class"] = error_of(lambda: StringIndexerModel.load(scaler_path))
seen["missing"] = error_of(lambda: StandardScalerModel.load(os.path.join(work, "nothing-here")))

# df.write, read back by spark.read.
small = spark.createDataFrame([(1, "a", 0.5), (2, "b", None), (3, "c", 2.25)], ["id", "s", "v"])
for fmt in ["parquet", "json"]:
    out = os.path.join(work, "out_" + fmt)
    small.write.format(fmt).save(out)
    seen["write_" + fmt] = sorted(tuple(r) for r in spark.read.format(fmt).load(out).select("id", "s", "v").collect())
small.write.csv(os.path.join(work, "out_csv"), header=True)
seen["write_csv"] = spark.read.csv(os.path.join(work, "out_csv"), header=True).count()
small.select("s").write.text(os.path.join(work, "out_text"))
seen["write_text"] = sorted(r[0] for r in spark.read.text(os.path.join(work, "out_text")).collect())
out = os.path.join(work, "out_parquet")
seen["write_exists"] = error_of(lambda: small.write.parquet(out))
small.write.mode("append").parquet(out)
seen["write_append"] = spark.read.parquet(out).count()
small.write.mode("ignore").parquet(out)
seen["write_ignore"] = spark.read.parquet(out).count()
small.limit(1).write.mode("overwrite").parquet(out)
seen["write_overwrite"] = spark.read.parquet(out).count()
seen["write_text_columns"] = error_of(lambda: small.write.text(os.path.join(work, "two_columns")))
seen["write_partitioned"] = error_of(lambda: small.write.partitionBy("s").parquet(os.path.join(work, "parts")))

spark.stop()
print(json.dumps(seen))
