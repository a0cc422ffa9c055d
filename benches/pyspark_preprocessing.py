"""The whole preprocessing job in PySpark ML, for the preprocessing_job benchmark's comparison with hearth: read
the Higgs-schema CSV, fit StringIndexer(PRI_jet_num, Label) -> OneHotEncoder -> VectorAssembler (the 29 float
features + the one-hot vector) -> StandardScaler(withMean, withStd), transform the same rows and write
`features` and `label` as Parquet (snappy, Spark's default). The CSV's schema is given, as hearth's bench reads
a schema it infers from the first rows only, so neither side pays a full inference pass.

Prints one JSON object: {"runs": [{"fit": s, "seconds": s}, ...], "spark": version, "bytes": output bytes},
timed from reading to the written output; the JVM's start is excluded (the session is up before the clock).

usage: python3 benches/pyspark_preprocessing.py CSV OUT_DIR RUNS PARTITIONS
"""

import json
import os
import shutil
import sys
import time

from pyspark.ml import Pipeline
from pyspark.ml.feature import OneHotEncoder, StandardScaler, StringIndexer, VectorAssembler
from pyspark.sql import SparkSession

INTEGERS = ("EventId", "PRI_jet_num")
NOT_FEATURES = ("EventId", "PRI_jet_num", "Weight", "Label")


def main():
    csv, out, runs, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    spark = (
        SparkSession.builder.master(f"local[{partitions}]")
        .config("spark.driver.memory", "8g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with open(csv) as f:
        header = f.readline().strip().split(",")
    schema = ", ".join(
        f"{c} {'BIGINT' if c in INTEGERS else 'STRING' if c == 'Label' else 'DOUBLE'}" for c in header
    )
    floats = [c for c in header if c not in NOT_FEATURES]
    pipeline = Pipeline(
        stages=[
            StringIndexer(inputCols=["PRI_jet_num", "Label"], outputCols=["jet_idx", "label"]),
            OneHotEncoder(inputCols=["jet_idx"], outputCols=["jet_vec"]),
            VectorAssembler(inputCols=floats + ["jet_vec"], outputCol="raw"),
            StandardScaler(inputCol="raw", outputCol="features", withMean=True, withStd=True),
        ]
    )
    results = []
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        df = spark.read.csv(csv, header=True, schema=schema)
        model = pipeline.fit(df)
        fitted = time.perf_counter()
        model.transform(df).select("features", "label").write.mode("overwrite").parquet(out)
        results.append({"fit": fitted - started, "seconds": time.perf_counter() - started})
    written = sum(os.path.getsize(os.path.join(out, name)) for name in os.listdir(out))
    print(json.dumps({"runs": results, "spark": spark.version, "bytes": written}))
    spark.stop()


if __name__ == "__main__":
    main()
