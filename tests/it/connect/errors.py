"""Requests a PySpark user can get wrong, each raising PySpark's exception, then one that works.

usage: python errors.py sc://HOST:PORT   -> prints one JSON object: per case the exception's class and message
"""

import json
import sys

from pyspark.sql import SparkSession
import pyspark.sql.functions as F

from outcome import error_of

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
df = spark.range(3)
cases = {
    "missing_column": lambda: df.select("nope").collect(),
    "missing_table": lambda: spark.sql("SELECT * FROM nowhere").collect(),
    "bad_sql": lambda: spark.sql("SELEC 1").collect(),
    "unknown_function": lambda: df.select(F.call_function("no_such_function", F.col("id"))).collect(),
    "unsupported_relation": lambda: df.unpivot("id", ["id"], "name", "value").collect(),
    "unknown_config": lambda: spark.conf.get("spark.hearth.no.such.key"),
    "missing_file": lambda: spark.read.csv("/nonexistent/no-such-file.csv").collect(),
}
seen = {case: error_of(call) for case, call in cases.items()}
seen["after"] = df.count()
spark.stop()
print(json.dumps(seen))
