"""PySpark's DataFrame API over Spark Connect, as a PySpark user writes it, against hearth's server.

usage: python dataframes.py sc://localhost:PORT CREDIT_CSV   -> prints one JSON object of what it saw
"""

import contextlib
import io
import json
import sys

from pyspark.sql import SparkSession
import pyspark.sql.functions as F

url, credit_csv = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.remote(url).getOrCreate()
seen = {"version": spark.version}


def shown(df, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.show(*args, **kwargs)
    return out.getvalue()


# spark.range, in partition order as Spark returns it
seen["range_show"] = shown(spark.range(0, 10), 5)
seen["range_rows"] = [r.id for r in spark.range(2, 20, 3).collect()]

# createDataFrame from rows, nulls and doubles printed as Spark prints them
small = spark.createDataFrame(
    [(1, "alpha", 2.5), (2, "a rather long name!!", None), (3, "c", 1e-4), (4, "d", 12345678.0)], ["id", "name", "x"]
)
seen["small_show"] = shown(small)
seen["small_show_vertical"] = shown(small.limit(1), vertical=True)
seen["small_pandas"] = small.toPandas().fillna(-1).values.tolist()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    small.printSchema()
seen["small_schema"] = out.getvalue()
seen["derived"] = [
    tuple(r)
    for r in small.filter(F.col("id") > 1)
    .withColumn("half", F.col("id") / 2)
    .select("id", "half", (F.col("x") * 2).alias("x2"), F.col("name").startswith("a").alias("a"))
    .orderBy(F.desc("id"))
    .collect()
]
seen["derived_columns"] = small.select(F.col("id") + 1, F.col("id") == 2, F.col("x").cast("int")).columns

# the German Credit CSV: header and Spark's type inference, filters, aggregates
credit = spark.read.csv(credit_csv, header=True, inferSchema=True)
seen["credit_columns"] = credit.columns
seen["credit_types"] = [credit.schema[c].dataType.simpleString() for c in ("duration", "credit_amount", "purpose")]
seen["credit_count"] = credit.count()
seen["credit_long"] = credit.filter(F.col("duration") > 24).count()
seen["credit_mean_amount"] = credit.select(F.mean("credit_amount")).first()[0]
seen["credit_by_class"] = {r["class"]: r["count"] for r in credit.groupBy("class").count().collect()}
seen["credit_by_purpose"] = [
    (r.purpose, r.n, r.avg_amount)
    for r in credit.groupBy("purpose")
    .agg(F.count("*").alias("n"), F.avg("credit_amount").alias("avg_amount"))
    .orderBy(F.desc("n"), "purpose")
    .limit(3)
    .collect()
]
seen["credit_purposes"] = credit.select("purpose").distinct().count()

# randomSplit: complementary and the same for the same seed
train, test = credit.randomSplit([0.8, 0.2], seed=7)
again, _ = credit.randomSplit([0.8, 0.2], seed=7)
seen["split"] = [train.count(), test.count(), again.count(), train.join(test, train.columns, "inner").count()]

# SQL on a temporary view
credit.createOrReplaceTempView("credit")
seen["sql"] = [tuple(r) for r in spark.sql("SELECT class, max(age) AS oldest FROM credit GROUP BY class ORDER BY class").collect()]

# joins, unions, renames, drops
left = spark.createDataFrame([(1, "a"), (2, "b")], ["k", "v"])
right = spark.createDataFrame([(1, 10), (3, 30)], ["k", "w"])
seen["join_using"] = [tuple(r) for r in left.join(right, "k").collect()]
seen["join_left"] = sorted(tuple(r) for r in left.join(right, left.k == right.k, "left").select(left.k, "v", "w").collect())
seen["join_full_columns"] = left.join(right, "k", "full").columns
seen["union"] = left.union(left).count()
seen["renamed"] = left.withColumnRenamed("v", "value").drop("k").columns

dups = spark.createDataFrame([(1, "a"), (2, "b"), (2, "b"), (3, "c")], ["k", "s"])
seen["intersect"] = dups.intersect(dups.filter(dups.k > 1)).count()
seen["intersect_all"] = dups.intersectAll(dups.filter(dups.k > 1)).count()
seen["select_expr"] = dups.selectExpr("k + 1 AS k1", "upper(s)").columns
seen["first_last"] = [tuple(r) for r in dups.groupBy("s").agg(F.first("k"), F.last("k")).orderBy("s").collect()]
seen["aliased"] = [r.k for r in dups.alias("t").select("t.k").collect()]
described = credit.describe("age", "purpose", "duration")
seen["describe"] = [described.columns] + [list(r) for r in described.collect()]
seen["describe_all"] = [
    list(r) for r in spark.createDataFrame([(1.5, "a"), (None, "b"), (0.0001, None)], ["x", "s"]).describe().collect()
]

spark.stop()
print(json.dumps(seen))
