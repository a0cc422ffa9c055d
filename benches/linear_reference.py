"""PySpark ML's and scikit-learn's fits of the linear benchmark's models, for its comparison with hearth: read
the Parquet file of feature columns, `label` (0/1) and `target`; fit LogisticRegression (no penalty, Spark's
defaults: L-BFGS, 100 iterations, tol 1e-6, standardization) on `label` and LinearRegression (solver "normal")
on `target`, each RUNS times in one session, so the JVM is warm (its start is excluded); then scikit-learn's
LogisticRegression (penalty None, lbfgs) on the same rows standardized as Spark standardizes them (its
coefficients mapped back to the features' units) and LinearRegression (least squares) on the raw matrix.

Prints one JSON object: {"spark": version, "sklearn": version, "<tool>_<model>": {"seconds": best fit,
"iterations": n, "coefficients": [...], "intercept": b}, ...}.

usage: python3 benches/linear_reference.py PARQUET RUNS PARTITIONS
"""

import json
import sys
import time


def spark_fits(path, runs, partitions):
    import pyspark
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.regression import LinearRegression
    from pyspark.ml.classification import LogisticRegression
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{partitions}]")
        .config("spark.driver.memory", "8g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rows = spark.read.parquet(path)
    features = [c for c in rows.columns if c not in ("label", "target")]
    assembled = VectorAssembler(inputCols=features, outputCol="features").transform(rows)
    estimators = {
        "logistic": LogisticRegression(labelCol="label", regParam=0.0),
        "linear": LinearRegression(labelCol="target", solver="normal", regParam=0.0),
    }
    out = {"spark": pyspark.__version__}
    for name, estimator in estimators.items():
        best, model = None, None
        for _ in range(runs):
            started = time.perf_counter()
            model = estimator.fit(assembled)
            seconds = time.perf_counter() - started
            best = seconds if best is None else min(best, seconds)
        out[f"spark_{name}"] = {
            "seconds": best,
            "iterations": model.summary.totalIterations,
            "coefficients": model.coefficients.toArray().tolist(),
            "intercept": model.intercept,
        }
    spark.stop()
    return out


def sklearn_fits(path, runs):
    import numpy as np
    import pyarrow.parquet as pq
    import sklearn
    from sklearn.linear_model import LinearRegression, LogisticRegression

    table = pq.read_table(path)
    features = [c for c in table.column_names if c not in ("label", "target")]
    x = np.column_stack([table.column(c).to_numpy().astype(np.float64) for c in features])
    label = table.column("label").to_numpy().astype(np.float64)
    target = table.column("target").to_numpy().astype(np.float64)
    # Spark's standardization: population mean, sample standard deviation.
    mean, std = x.mean(axis=0), x.std(axis=0, ddof=1)
    std[std == 0] = 1.0
    standardized = (x - mean) / std
    out = {"sklearn": sklearn.__version__}
    fits = {
        "logistic": (lambda: LogisticRegression(penalty=None, max_iter=1000, tol=1e-8).fit(standardized, label)),
        "linear": (lambda: LinearRegression().fit(x, target)),
    }
    for name, fit in fits.items():
        best, model = None, None
        for _ in range(runs):
            started = time.perf_counter()
            model = fit()
            seconds = time.perf_counter() - started
            best = seconds if best is None else min(best, seconds)
        coefficients = np.ravel(model.coef_)
        intercept = float(np.ravel(model.intercept_)[0])
        iterations = None
        if name == "logistic":
            iterations = int(np.ravel(model.n_iter_)[0])
            intercept -= float(np.sum(coefficients * mean / std))
            coefficients = coefficients / std
        out[f"sklearn_{name}"] = {
            "seconds": best,
            "iterations": iterations,
            "coefficients": coefficients.tolist(),
            "intercept": intercept,
        }
    return out


def main():
    path, runs, partitions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    report = {}
    report.update(spark_fits(path, runs, partitions))
    report.update(sklearn_fits(path, runs))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
