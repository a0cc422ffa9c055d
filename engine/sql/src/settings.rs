//! The one setting a table function takes after its rows, written as BigQuery writes it:
//! `ML.CONFUSION_MATRIX(MODEL m, (SELECT …), STRUCT(0.6 AS threshold))`,
//! `ML.WEIGHTS(MODEL m, STRUCT(TRUE AS standardize))`.

use datafusion::sql::sqlparser::ast::Expr;
use hearth_exec::error::{HearthError, Result};

use super::literals;

/// The value of setting `name` of `function`'s `settings`, read by `read` (`None` when no settings were
/// given); an error naming the function and setting for settings that are not `STRUCT(value AS name)` or a
/// value `read` refuses (`expected` says what it takes).
///
/// ```ignore
/// let threshold = one_setting("ML.ROC_CURVE", "threshold", "a number in [0, 1]", settings, literals::number)?;
/// ```
pub(crate) fn one_setting<T>(
    function: &str,
    name: &'static str,
    expected: &str,
    settings: Option<&Expr>,
    read: impl Fn(&Expr) -> Option<T>,
) -> Result<Option<T>> {
    let Some(settings) = settings else {
        return Ok(None);
    };
    let invalid = |message: String| HearthError::invalid_param(function, name, message);
    let fields = literals::struct_fields(settings)
        .ok_or_else(|| invalid(format!("settings are STRUCT(value AS {name}), got {settings}")))?;
    let mut value = None;
    for (field, given) in fields {
        if field != name {
            return Err(invalid(format!("unknown setting {field}; {function} takes {name}")));
        }
        value = Some(read(given).ok_or_else(|| invalid(format!("must be {expected}, got {given}")))?);
    }
    Ok(value)
}
