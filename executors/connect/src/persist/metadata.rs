//! A saved object's `metadata/`: one line of JSON in a text part file, as Spark's `DefaultParamsWriter`
//! writes it — the class, the uid, the params the user set (`paramMap`), the values in effect for the others
//! (`defaultParamMap`) — and what hearth keeps beside Spark's fields (`hearth`: a model's training record).
//!
//! ```text
//! {"class":"org.apache.spark.ml.feature.StringIndexerModel","timestamp":1795943223281,"sparkVersion":"4.2.0",
//!  "uid":"StringIndexer_71b57ca49b24","paramMap":{"inputCol":"cat","outputCol":"ci"},
//!  "defaultParamMap":{"handleInvalid":"error","stringOrderType":"frequencyDesc"}}
//! ```

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::analyze::SPARK_VERSION;
use crate::errors::{ConnectError, Result};
use crate::persist::part_files;

/// The folder of a saved object that holds its metadata.
pub(crate) const METADATA_DIR: &str = "metadata";

/// A saved object's metadata.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Metadata {
    /// Spark's class name: `org.apache.spark.ml.feature.StringIndexerModel`.
    pub class: String,
    /// When it was saved, in milliseconds since the epoch.
    pub timestamp: i64,
    /// The Spark version whose layout it follows.
    pub spark_version: String,
    pub uid: String,
    /// The params the user set.
    pub param_map: Map<String, Value>,
    /// The values of the params the user left alone.
    #[serde(default)]
    pub default_param_map: Map<String, Value>,
    /// What hearth keeps beyond Spark's fields (absent from what Spark wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hearth: Option<Map<String, Value>>,
}

impl Metadata {
    /// The metadata of `uid`, a `class`, saved now.
    pub(crate) fn new(class: String, uid: String, param_map: Map<String, Value>) -> Self {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX));
        Self {
            class,
            timestamp,
            spark_version: SPARK_VERSION.to_owned(),
            uid,
            param_map,
            default_param_map: Map::new(),
            hearth: None,
        }
    }

    /// Writes `dir/metadata/` (a part file holding the JSON line, and `_SUCCESS`).
    pub(crate) fn write(&self, dir: &Path) -> Result<()> {
        let json = serde_json::to_string(self)
            .map_err(|e| ConnectError::Execution(format!("the metadata of {}: {e}", self.uid)))?;
        part_files::write(&dir.join(METADATA_DIR), "txt", format!("{json}\n").as_bytes())
    }

    /// Reads `dir/metadata/`: the first line of its first part file.
    pub(crate) fn read(dir: &Path) -> Result<Self> {
        let folder = dir.join(METADATA_DIR);
        let file = part_files::list(&folder)?.into_iter().next().ok_or_else(|| {
            ConnectError::IllegalArgument(format!(
                "{} holds no saved pyspark.ml object: {} has no part file",
                dir.display(),
                folder.display()
            ))
        })?;
        let text = fs::read_to_string(&file)
            .map_err(|e| ConnectError::Execution(format!("reading {}: {e}", file.display())))?;
        let line = text.lines().next().unwrap_or_default();
        serde_json::from_str(line)
            .map_err(|e| ConnectError::IllegalArgument(format!("{} is not Spark's ML metadata: {e}", file.display())))
    }
}
