"""Two client sessions on one server: each sees its own temporary views; a stopped session, or one idle past
the server's timeout, is gone.

usage: python sessions.py sc://HOST:PORT   -> prints one JSON object
"""

import json
import sys
import time
import uuid

from pyspark.sql import SparkSession

from outcome import error_of

url = sys.argv[1]



def session(session_id=None):
    suffix = f"/;session_id={session_id}" if session_id else ""
    return SparkSession.builder.remote(url + suffix).create()


seen = {}
first = session()
first.createDataFrame([(1,), (2,), (3,)], ["x"]).createOrReplaceTempView("mine")
seen["own_view"] = first.sql("SELECT * FROM mine").count()
second = session()
seen["other_session"] = error_of(lambda: second.sql("SELECT * FROM mine").collect())

stopped_id = str(uuid.uuid4())
stopped = session(stopped_id)
stopped.range(1).count()
stopped.stop()
seen["after_stop"] = error_of(lambda: session(stopped_id).range(1).count())

idle = session()
idle.range(1).count()
time.sleep(4)
seen["after_idle"] = error_of(lambda: idle.range(1).count())
print(json.dumps(seen))
