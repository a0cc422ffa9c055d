//! The model catalog installed in every driver's session: kept as an extension of the session's
//! configuration, with the planner of `ML.` table functions over it.

use std::sync::Arc;

use datafusion::execution::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use hearth_exec::extension::SessionExtension;

use super::catalog::{ModelCatalog, default_models_dir};
use super::relation;

/// Gives a driver's session the models in [`default_models_dir`]: the catalog, kept as an extension of the
/// session's configuration, and the planner of `ML.` table functions over it.
fn install_catalog(ctx: &SessionContext) {
    let state = with_catalog(ctx.state(), ModelCatalog::new(default_models_dir()));
    *ctx.state_ref().write() = state;
}

/// `state` with its models in `catalog`.
pub(super) fn with_catalog(mut state: SessionState, catalog: ModelCatalog) -> SessionState {
    state.config_mut().set_extension(Arc::new(catalog.clone()));
    SessionStateBuilder::new_from_existing(state)
        .with_relation_planners(vec![relation::planner(catalog)])
        .build()
}

inventory::submit! {
    SessionExtension {
        name: "hearth_sql",
        functions: SessionExtension::nothing,
        session: install_catalog,
    }
}
