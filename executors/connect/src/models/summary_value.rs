//! What a training summary's attribute is made of: its value or data frame, and the model columns it reads.

use datafusion::prelude::DataFrame;
use spark_connect_proto::expression::Literal;

/// A summary attribute: a value, or a data frame (`roc`, `pr`, `predictions`, `cluster`, `residuals`).
pub(crate) enum SummaryValue {
    Value(Literal),
    Frame(DataFrame),
}

/// The columns a summary reads.
pub(crate) struct Columns {
    pub(crate) label: String,
    pub(crate) prediction: String,
    pub(crate) probability: String,
}
