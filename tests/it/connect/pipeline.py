"""A PySpark ML pipeline as a PySpark user writes it — StringIndexer, OneHotEncoder, VectorAssembler,
StandardScaler, LogisticRegression in a Pipeline, evaluated by Spark's evaluators — against hearth's server.

usage: python pipeline.py sc://HOST:PORT CREDIT_CSV   -> prints one JSON object of what it saw
"""

import contextlib
import io
import json
import sys

from pyspark.ml import Pipeline
from pyspark.ml.classification import LogisticRegression, MultilayerPerceptronClassifier
from pyspark.ml.clustering import KMeans
from pyspark.ml.evaluation import BinaryClassificationEvaluator, MulticlassClassificationEvaluator, RegressionEvaluator
from pyspark.ml.feature import OneHotEncoder, StandardScaler, StringIndexer, VectorAssembler
from pyspark.ml.regression import LinearRegression
from pyspark.sql import SparkSession

from outcome import error_of

url, credit_csv = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.remote(url).getOrCreate()
credit = spark.read.csv(credit_csv, header=True, inferSchema=True)
train, test = credit.randomSplit([0.8, 0.2], seed=42)
stages = [
    StringIndexer(inputCol="class", outputCol="label"),
    StringIndexer(inputCol="purpose", outputCol="purpose_idx"),
    OneHotEncoder(inputCols=["purpose_idx"], outputCols=["purpose_vec"]),
    VectorAssembler(inputCols=["duration", "credit_amount", "age", "purpose_vec"], outputCol="raw"),
    StandardScaler(inputCol="raw", outputCol="features"),
    LogisticRegression(maxIter=100, regParam=0.01),
]
model = Pipeline(stages=stages).fit(train)
predictions = model.transform(test)
seen = {
    "labels": model.stages[0].labels,
    "category_sizes": model.stages[2].categorySizes,
    "mean": list(model.stages[4].mean),
    "std": list(model.stages[4].std),
    "coefficients": list(model.stages[5].coefficients),
    "intercept": model.stages[5].intercept,
    "uid": model.stages[5].uid == stages[5].uid,
    "columns": predictions.columns,
    "rows": predictions.count(),
    "accuracy": MulticlassClassificationEvaluator(metricName="accuracy").evaluate(predictions),
    "f1": MulticlassClassificationEvaluator().evaluate(predictions),
    "auc": BinaryClassificationEvaluator().evaluate(predictions),
}
# The fitted model's training summary, on the training rows.
summary = model.stages[5].summary
roc = summary.roc.collect()
seen["summary"] = {
    "type": type(summary).__name__,
    "accuracy": summary.accuracy,
    "area_under_roc": summary.areaUnderROC,
    "roc": [len(roc), list(roc[0]), list(roc[-1])],
    "objective_history": summary.objectiveHistory,
    "total_iterations": summary.totalIterations,
    "labels": summary.labels,
    "predictions": summary.predictions.count(),
    "weighted_recall": summary.weightedRecall,
    "label_col": summary.labelCol,
}


seen["missing_column"] = error_of(lambda: StringIndexer(inputCol="class", outputCol="l").fit(train.withColumnRenamed("class", "klass")))
seen["unsupported_class"] = error_of(
    lambda: __import__("pyspark.ml.feature", fromlist=["Bucketizer"]).Bucketizer(
        splits=[0, 10, 100], inputCol="age", outputCol="b"
    ).transform(train).collect()
)
first = predictions.select("features", "probability").first()
seen["vectors"] = [type(first.features).__name__, len(first.features), type(first.probability).__name__]
assembled = VectorAssembler(inputCols=["a", "b"], outputCol="v").transform(
    spark.createDataFrame([(1.0, 0.1), (2.5, 1e-4)], ["a", "b"])
)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assembled.show()
seen["assembled_show"] = out.getvalue()
seen["assembled"] = [list(r.v) for r in assembled.collect()]
# The other estimators, on two numeric columns.
numbers = VectorAssembler(inputCols=["duration", "age"], outputCol="features").transform(
    StringIndexer(inputCol="class", outputCol="label").fit(credit).transform(credit)
)
linear = LinearRegression(labelCol="credit_amount").fit(numbers)
seen["linear"] = [len(linear.coefficients), RegressionEvaluator(labelCol="credit_amount").evaluate(linear.transform(numbers))]
seen["linear_summary"] = [linear.summary.rootMeanSquaredError, linear.summary.numInstances, linear.summary.r2]
seen["linear_statistics"] = [linear.summary.degreesOfFreedom, linear.summary.pValues, linear.summary.tValues]
kmeans = KMeans(k=3, seed=1).fit(numbers)
seen["kmeans_clusters"] = kmeans.transform(numbers).select("prediction").distinct().count()
seen["kmeans_summary"] = [kmeans.summary.k, sum(kmeans.summary.clusterSizes), kmeans.summary.cluster.count()]
seen["kmeans_centers"] = [len(kmeans.clusterCenters()), [len(c) for c in kmeans.clusterCenters()]]
# Clients from 4.1 can evict a model from the server's memory; it stays usable.
import inspect

if "evict_only" in inspect.signature(spark.client._delete_ml_cache).parameters:
    spark.client._delete_ml_cache([kmeans._java_obj._ref_id], evict_only=True)
seen["kmeans_after_eviction"] = kmeans.transform(numbers).count()
seen["labels_array"] = [list(labels) for labels in model.stages[0].labelsArray]
perceptron = MultilayerPerceptronClassifier(layers=[2, 5, 2], seed=1, maxIter=50).fit(numbers)
seen["weighted"] = len(
    LogisticRegression(weightCol="w", maxIter=5).fit(numbers.withColumn("w", numbers.duration * 0 + 1.0)).coefficients
)
seen["perceptron_accuracy"] = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(perceptron.transform(numbers))
# Vectors sent by the client, dense and sparse (Spark's StandardScaler test: mean 1.6667, std 1.5275).
from pyspark.ml.linalg import Vectors

sent = spark.createDataFrame(
    [(1, Vectors.dense([0.0])), (2, Vectors.dense([2.0])), (3, Vectors.sparse(1, [(0, 3.0)]))], ["index", "features"]
)
scaler = StandardScaler(inputCol="features", outputCol="scaled").fit(sent)
seen["sent_vectors"] = [list(scaler.mean), list(scaler.std), [list(r.features) for r in sent.orderBy("index").collect()]]
# A param set on a fitted model, a summary on other rows, one vector predicted.
lr_model = model.stages[5]
positives = lambda threshold: lr_model.setThreshold(threshold).transform(model.transform(test).drop("rawPrediction", "probability", "prediction")).filter("prediction = 1").count()
seen["threshold"] = [positives(0.99), positives(0.01)]
lr_model.setThreshold(0.5)
features_test = model.transform(test).drop("rawPrediction", "probability", "prediction")
seen["evaluate"] = [lr_model.evaluate(features_test).accuracy, MulticlassClassificationEvaluator(metricName="accuracy").evaluate(lr_model.transform(features_test))]
seen["predict"] = [kmeans.predict(Vectors.dense([24.0, 35.0])) in (0, 1, 2), lr_model.predict(first.features) in (0.0, 1.0)]
# LIBSVM text, as the PySpark ML guide's examples read it.
import os
import tempfile

libsvm = os.path.join(tempfile.mkdtemp(), "sample.txt")
with open(libsvm, "w") as f:
    f.write("0 1:0.5 3:1.0\n1 2:2.0\n1 1:1.5 2:1.0 3:0.25\n0 3:3.0\n")
svm = spark.read.format("libsvm").load(libsvm)
seen["libsvm"] = [svm.columns, [[r.label, list(r.features)] for r in svm.collect()]]
seen["libsvm_fit"] = len(LogisticRegression(maxIter=5).fit(svm).coefficients)
other = SparkSession.builder.remote(url).create()
other_rows = other.read.csv(credit_csv, header=True, inferSchema=True)
seen["other_session"] = error_of(lambda: model.transform(other_rows).collect())
other.stop()
spark.stop()
print(json.dumps(seen))
