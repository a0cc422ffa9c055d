//! The errors of a `CREATE MODEL` statement, each naming what was wrong: an option, the `TRANSFORM`, the
//! model's name. Each is a `HearthError::invalid_param` of the stage [`CREATE_MODEL`]; an option's message
//! names the option first.
//!
//! ```text
//! CREATE MODEL: parameter OPTIONS: option learn_rate: expected a number, got 'fast'
//! ```

use std::fmt::Display;

use hearth_exec::error::HearthError;

/// The stage the errors of a `CREATE MODEL` statement name: the statement.
pub(crate) const CREATE_MODEL: &str = "CREATE MODEL";

/// The statement's `param` (`OPTIONS`, `TRANSFORM`, `name`, …) is wrong, as `message` says.
pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> HearthError {
    HearthError::invalid_param(CREATE_MODEL, param, message)
}

/// The option `option` is wrong, as `message` says.
pub(crate) fn invalid_option(option: &str, message: impl Display) -> HearthError {
    invalid("OPTIONS", format!("option {option}: {message}"))
}
