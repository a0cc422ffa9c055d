"""A server that asks for a token: the right one works, none or a wrong one is refused.

usage: python bearer_token.py PORT TOKEN   (an empty TOKEN: the client's SPARK_CONNECT_AUTHENTICATE_TOKEN gives it)
"""

import json
import sys

from pyspark.sql import SparkSession

port, token = sys.argv[1], sys.argv[2]


def count_with(params):
    spark = SparkSession.builder.remote(f"sc://localhost:{port}{params}").create()
    try:
        return spark.range(1).count()
    finally:
        spark.stop()


def error_of(params):
    try:
        count_with(params)
        return {"class": None, "message": "no error"}
    except Exception as error:
        return {"class": type(error).__name__, "message": str(error)}


seen = {"with_token": count_with(f"/;token={token}" if token else "")}
if token:
    seen["without_token"] = error_of("")
    seen["wrong_token"] = error_of("/;token=not-the-token")
print(json.dumps(seen))
