//! The errors of a `CREATE MODEL` statement, each naming what was wrong: an option, the `TRANSFORM`, the
//! model's name.
//!
//! ```text
//! invalid option: CREATE MODEL: OPTIONS: option learn_rate: expected a number, got 'fast'
//! ```

use std::fmt::Display;

use hearth_engine::error::HearthError;

/// The statement's `param` (`OPTIONS`, `TRANSFORM`, `name`, …) is wrong, as `message` says.
pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> HearthError {
    HearthError::InvalidParam {
        stage: "CREATE MODEL".to_string(),
        param,
        message: message.into(),
    }
}

/// The option `option` is wrong, as `message` says.
pub(crate) fn invalid_option(option: &str, message: impl Display) -> HearthError {
    invalid("OPTIONS", format!("option {option}: {message}"))
}
