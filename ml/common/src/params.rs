//! Parameters shared by several stages, spelled as Spark spells them.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// What a stage does with a value it cannot handle (Spark's `handleInvalid`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandleInvalid {
    /// Fail the query with a message naming the column and the value (Spark's default).
    #[default]
    Error,
    /// Drop the row.
    Skip,
    /// Keep the row: a stage-specific stand-in (NaN, an extra index, an all-zero vector).
    Keep,
}

impl HandleInvalid {
    /// The name Spark uses, which is also the value hearth's SQL functions take.
    pub fn as_str(self) -> &'static str {
        match self {
            HandleInvalid::Error => "error",
            HandleInvalid::Skip => "skip",
            HandleInvalid::Keep => "keep",
        }
    }

    /// Parses Spark's spelling (case-insensitive, as Spark's params are).
    ///
    /// ```
    /// use hearth_common::params::HandleInvalid;
    /// assert_eq!(HandleInvalid::parse("KEEP"), Some(HandleInvalid::Keep));
    /// assert_eq!(HandleInvalid::parse("drop"), None);
    /// ```
    pub fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_lowercase().as_str() {
            "error" => Some(HandleInvalid::Error),
            "skip" => Some(HandleInvalid::Skip),
            "keep" => Some(HandleInvalid::Keep),
            _ => None,
        }
    }
}

impl fmt::Display for HandleInvalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a `StringIndexer` orders its labels; the first label gets index 0 (Spark's `stringOrderType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StringOrderType {
    /// Most frequent first; ties alphabetically ascending (Spark's default).
    #[default]
    FrequencyDesc,
    /// Least frequent first; ties alphabetically ascending.
    FrequencyAsc,
    /// Alphabetically descending (by UTF-16 code units, as Java compares strings).
    AlphabetDesc,
    /// Alphabetically ascending (by UTF-16 code units, as Java compares strings).
    AlphabetAsc,
}

/// A fresh stage uid in Spark's shape, `<Class>_<12 hex digits>`.
///
/// ```
/// let uid = hearth_common::params::new_uid("StandardScaler");
/// assert!(uid.starts_with("StandardScaler_") && uid.len() == "StandardScaler_".len() + 12);
/// ```
pub fn new_uid(class: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed = splitmix64(nanos ^ splitmix64(COUNTER.fetch_add(1, Ordering::Relaxed)));
    format!("{class}_{:012x}", mixed & 0xffff_ffff_ffff)
}

/// One step of the SplitMix64 generator: a cheap, well-mixed 64-bit hash.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
