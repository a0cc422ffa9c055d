"""A server that asks for a token: the right one works, none or a wrong one is refused.

usage: python bearer_token.py PORT TOKEN   (an empty TOKEN: the client's SPARK_CONNECT_AUTHENTICATE_TOKEN gives it)
"""

import json
import sys

from pyspark.sql import SparkSession

from outcome import error_of

port, token = sys.argv[1], sys.argv[2]


def count_with(params):
    spark = SparkSession.builder.remote(f"sc://localhost:{port}{params}").create()
    try:
        return spark.range(1).count()
    finally:
        spark.stop()




seen = {"with_token": count_with(f"/;token={token}" if token else "")}
if token:
    seen["without_token"] = error_of(lambda: count_with(""))
    seen["wrong_token"] = error_of(lambda: count_with("/;token=not-the-token"))
print(json.dumps(seen))
