//! A session's Spark configuration: what `spark.conf` reads and writes, with Spark 4's defaults for the keys a
//! PySpark client asks before it sends data (`createDataFrame` asks twelve) or reads results.

use std::collections::BTreeMap;

use spark_connect_proto::KeyValue;
use spark_connect_proto::config_request::operation::OpType;

use crate::errors::{ConnectError, Result};

/// The largest local relation a client sends inline; larger ones would go through artifacts, which hearth
/// does not take, so the threshold is the request size the server accepts.
pub(crate) const LOCAL_RELATION_BYTES: usize = 128 << 20;

/// Spark 4's defaults for the keys PySpark's Connect client reads, as the strings Spark answers.
fn spark_defaults() -> BTreeMap<&'static str, String> {
    let relation_bytes = LOCAL_RELATION_BYTES.to_string();
    BTreeMap::from([
        ("spark.sql.timestampType", "TIMESTAMP_LTZ".to_owned()),
        ("spark.sql.session.timeZone", "UTC".to_owned()),
        ("spark.sql.session.localRelationCacheThreshold", relation_bytes.clone()),
        ("spark.sql.session.localRelationSizeLimit", relation_bytes),
        ("spark.sql.session.localRelationChunkSizeRows", "10000".to_owned()),
        ("spark.sql.session.localRelationChunkSizeBytes", (16 << 20).to_string()),
        (
            "spark.sql.session.localRelationBatchOfChunksSizeBytes",
            (64 << 20).to_string(),
        ),
        (
            "spark.sql.execution.pandas.convertToArrowArraySafely",
            "false".to_owned(),
        ),
        ("spark.sql.execution.pandas.inferPandasDictAsMap", "false".to_owned()),
        ("spark.sql.execution.pandas.structHandlingMode", "legacy".to_owned()),
        (
            "spark.sql.execution.arrow.pyspark.selfDestruct.enabled",
            "false".to_owned(),
        ),
        ("spark.sql.execution.arrow.useLargeVarTypes", "false".to_owned()),
        ("spark.sql.execution.pyspark.binaryAsBytes", "true".to_owned()),
        ("spark.sql.execution.pythonUDF.arrow.enabled", "false".to_owned()),
        ("spark.sql.execution.pythonUDTF.arrow.enabled", "false".to_owned()),
        ("spark.sql.pyspark.inferNestedDictAsStruct.enabled", "false".to_owned()),
        (
            "spark.sql.pyspark.legacy.inferArrayTypeFromFirstElement.enabled",
            "false".to_owned(),
        ),
        (
            "spark.sql.pyspark.legacy.inferMapTypeFromFirstPair.enabled",
            "false".to_owned(),
        ),
        ("spark.sql.pyspark.jvmStacktrace.enabled", "false".to_owned()),
        ("spark.sql.connect.serverStacktrace.enabled", "false".to_owned()),
        ("spark.sql.repl.eagerEval.enabled", "false".to_owned()),
        ("spark.sql.repl.eagerEval.maxNumRows", "20".to_owned()),
        ("spark.sql.repl.eagerEval.truncate", "20".to_owned()),
        ("spark.sql.ansi.enabled", "true".to_owned()),
        ("spark.sql.caseSensitive", "false".to_owned()),
        ("spark.sql.shuffle.partitions", "200".to_owned()),
        // Plans travel uncompressed: a threshold of -1 keeps a 4.1+ client from zstd-compressing them.
        ("spark.connect.session.planCompression.threshold", "-1".to_owned()),
        (
            "spark.connect.session.planCompression.defaultAlgorithm",
            "NONE".to_owned(),
        ),
    ])
}

/// One client session's settings: Spark's defaults under what the client set.
///
/// ```
/// use hearth_connect::SessionConfig;
///
/// let mut config = SessionConfig::default();
/// assert_eq!(config.get("spark.sql.timestampType").unwrap(), "TIMESTAMP_LTZ");
/// config.set("spark.app.name", "credit");
/// assert_eq!(config.get("spark.app.name").unwrap(), "credit");
/// assert!(config.get("spark.sql.no.such.key").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct SessionConfig {
    defaults: BTreeMap<&'static str, String>,
    set: BTreeMap<String, String>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            defaults: spark_defaults(),
            set: BTreeMap::new(),
        }
    }
}

impl SessionConfig {
    /// The key's value: the one set, else Spark's default; Spark's `SQL_CONF_NOT_FOUND` for a key with neither.
    pub fn get(&self, key: &str) -> Result<String> {
        self.get_option(key)
            .ok_or_else(|| ConnectError::ConfNotFound(key.to_owned()))
    }

    /// The key's value, or `None` when it has none.
    pub fn get_option(&self, key: &str) -> Option<String> {
        self.set.get(key).cloned().or_else(|| self.defaults.get(key).cloned())
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: &str, value: &str) {
        self.set.insert(key.to_owned(), value.to_owned());
    }

    /// Answers one `Config` RPC's operation: the pairs the client asked for.
    pub(crate) fn apply(&mut self, operation: OpType) -> Result<Vec<KeyValue>> {
        let pair = |key: String, value: Option<String>| KeyValue { key, value };
        Ok(match operation {
            OpType::Set(set) => {
                for KeyValue { key, value } in set.pairs {
                    match value {
                        Some(value) => self.set(&key, &value),
                        None => drop(self.set.remove(&key)),
                    }
                }
                Vec::new()
            }
            OpType::Get(get) => get
                .keys
                .into_iter()
                .map(|key| Ok(pair(key.clone(), Some(self.get(&key)?))))
                .collect::<Result<_>>()?,
            OpType::GetWithDefault(get) => (get.pairs.into_iter())
                .map(|KeyValue { key, value }| {
                    let found = self.set.get(&key).cloned().or(value);
                    pair(key, found)
                })
                .collect(),
            OpType::GetOption(get) => get
                .keys
                .into_iter()
                .map(|key| pair(key.clone(), self.get_option(&key)))
                .collect(),
            OpType::GetAll(get) => {
                let prefix = get.prefix.unwrap_or_default();
                let mut all: BTreeMap<String, String> = self
                    .defaults
                    .iter()
                    .map(|(key, value)| ((*key).to_owned(), value.clone()))
                    .collect();
                all.extend(self.set.clone());
                (all.into_iter())
                    .filter(|(key, _)| key.starts_with(&prefix))
                    .map(|(key, value)| pair(key, Some(value)))
                    .collect()
            }
            OpType::Unset(unset) => {
                for key in unset.keys {
                    self.set.remove(&key);
                }
                Vec::new()
            }
            OpType::IsModifiable(keys) => keys
                .keys
                .into_iter()
                .map(|key| pair(key, Some("true".to_owned())))
                .collect(),
        })
    }
}
