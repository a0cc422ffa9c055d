//! `hearth connect` with an S3-compatible store (moto's server on loopback): a PySpark client saves a fitted
//! pipeline to `s3://…` in Spark's layout, loads it back and gets the same predictions; saving over it needs
//! `overwrite()`; a DataFrame written there reads back.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{hearth, pyspark};
use crate::s3::S3Server;

/// The bucket the client saves into.
const BUCKET: &str = "hearth-models";

const CLIENT: &str = r#"
import json, sys
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.classification import LogisticRegression, LogisticRegressionModel
from pyspark.ml.feature import StringIndexer, VectorAssembler
from pyspark.sql import SparkSession

url, path = sys.argv[1:3]
spark = SparkSession.builder.remote(url).getOrCreate()
rows = spark.createDataFrame(
    [("a", 1.0, 0.0), ("b", 2.0, 1.0), ("a", 3.0, 1.0), ("b", 0.5, 0.0), ("a", 2.5, 1.0), ("b", 1.5, 0.0)],
    ["cat", "x", "label"],
)
stages = [
    StringIndexer(inputCol="cat", outputCol="cat_idx"),
    VectorAssembler(inputCols=["cat_idx", "x"], outputCol="features"),
    LogisticRegression(maxIter=20, regParam=0.1),
]
model = Pipeline(stages=stages).fit(rows)
probabilities = lambda m: [r.probability.toArray().tolist() for r in m.transform(rows).select("probability").collect()]
model.write().save(path)
back = PipelineModel.load(path)
seen = {"same": probabilities(back) == probabilities(model), "stages": [type(s).__name__ for s in back.stages]}
try:
    model.write().save(path)
    seen["again"] = "saved over"
except Exception as e:
    seen["again"] = type(e).__name__ + ": " + str(e)
model.write().overwrite().save(path)
seen["overwritten"] = probabilities(PipelineModel.load(path)) == probabilities(model)
model.stages[2].save(path + "_lr")
seen["lr"] = list(LogisticRegressionModel.load(path + "_lr").coefficients) == list(model.stages[2].coefficients)
rows.write.parquet(path + "_rows")
seen["rows"] = spark.read.parquet(path + "_rows").count()
try:
    LogisticRegressionModel.load(path + "_nothing")
except Exception as e:
    seen["missing"] = type(e).__name__ + ": " + str(e)
spark.stop()
print(json.dumps(seen))
"#;

/// A `hearth connect` process, stopped when dropped.
struct ConnectProcess(Child);

impl Drop for ConnectProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `hearth --master local[2] connect` on a port the system picks, with `env`; its `sc://` URL.
fn connect_server(env: &[(String, String)]) -> (ConnectProcess, String) {
    let mut child = hearth()
        .args(["--master", "local[2]", "connect", "--bind", "127.0.0.1:0"])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = ConnectProcess(child);
    let (found, listening) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("hearth Spark Connect server on ") {
                let _ = found.send(rest.split_whitespace().next().unwrap_or_default().to_string());
            }
        }
    });
    let url = listening
        .recv_timeout(Duration::from_secs(60))
        .expect("hearth connect says where it listens within a minute");
    (server, url)
}

#[test]
fn a_pyspark_pipeline_saves_to_and_loads_from_an_object_store() {
    let store = S3Server::start(&[], "127.0.0.1", &[BUCKET], &[]);
    let (_server, url) = connect_server(&store.driver_env());
    let path = format!("s3://{BUCKET}/models/credit");
    let seen: serde_json::Value = serde_json::from_str(pyspark(CLIENT, &[&url, &path], &[]).trim()).unwrap();

    assert_eq!(seen["same"], true, "{seen}");
    assert_eq!(
        seen["stages"],
        serde_json::json!(["StringIndexerModel", "VectorAssembler", "LogisticRegressionModel"])
    );
    let again = seen["again"].as_str().unwrap();
    assert!(again.contains("already exists"), "{again}");
    assert_eq!(seen["overwritten"], true);
    assert_eq!(seen["lr"], true);
    assert_eq!(seen["rows"], 6);
    let missing = seen["missing"].as_str().unwrap();
    assert!(missing.contains("credit_nothing"), "{missing}");

    // Spark's layout in the bucket: the pipeline's metadata, and each stage's metadata beside its data.
    let keys = store.keys(BUCKET, "models/credit/");
    let has = |suffix: &str| {
        keys.iter()
            .any(|key| key.starts_with("models/credit/") && key.contains(suffix))
    };
    assert!(has("credit/metadata/part-00000-"), "{keys:?}");
    assert!(has("/stages/0_StringIndexer_"), "{keys:?}");
    assert!(
        keys.iter()
            .any(|key| key.contains("/stages/2_LogisticRegression_") && key.contains("/data/part-")),
        "{keys:?}"
    );
    assert_eq!(
        keys.iter()
            .filter(|key| key.starts_with("models/credit/metadata/part-"))
            .count(),
        1,
        "an overwrite leaves one pipeline metadata file: {keys:?}"
    );
}
