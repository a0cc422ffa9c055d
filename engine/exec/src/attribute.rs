//! ML attribute metadata on columns, Spark's `ml_attr`: a `StringIndexer` output column names its labels so a
//! downstream `OneHotEncoder` knows how many categories there are without scanning the data.

use std::collections::HashMap;

use datafusion::arrow::datatypes::Field;
use serde::{Deserialize, Serialize};

/// The Arrow field metadata key, as Spark's column metadata key.
pub const ML_ATTR_KEY: &str = "ml_attr";

/// A nominal (categorical) column's values, index `i` naming category `i`.
///
/// ```
/// use datafusion::arrow::datatypes::{DataType, Field};
/// use hearth_exec::attribute::NominalAttribute;
///
/// let field = NominalAttribute::new(vec!["a".into(), "b".into()]).attach(Field::new("x", DataType::Float64, false));
/// assert_eq!(NominalAttribute::from_field(&field).unwrap().values(), ["a", "b"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NominalAttribute {
    #[serde(rename = "type")]
    kind: String,
    vals: Vec<String>,
}

impl NominalAttribute {
    /// The label Spark adds for invalid values under `handleInvalid = "keep"`.
    pub const UNKNOWN_LABEL: &'static str = "__unknown";

    /// A nominal attribute with these category names.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            kind: "nominal".to_string(),
            vals: values,
        }
    }

    /// The category names.
    pub fn values(&self) -> &[String] {
        &self.vals
    }

    /// The field with this attribute in its metadata.
    pub fn attach(&self, field: Field) -> Field {
        let mut metadata: HashMap<String, String> = field.metadata().clone();
        let json = serde_json::to_string(self).unwrap_or_default();
        metadata.insert(ML_ATTR_KEY.to_string(), json);
        field.with_metadata(metadata)
    }

    /// The attribute a field carries, if any.
    pub fn from_field(field: &Field) -> Option<Self> {
        let attribute: Self = serde_json::from_str(field.metadata().get(ML_ATTR_KEY)?).ok()?;
        (attribute.kind == "nominal").then_some(attribute)
    }
}
