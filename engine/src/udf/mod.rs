//! What hearth's SQL functions share: reading the constant arguments that carry fitted state, and building
//! the list and struct values aggregates keep as state.

pub(crate) mod args;
pub(crate) mod list_state;
