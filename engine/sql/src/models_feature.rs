//! The model catalog as a session's extension: a session built `with_models(dir)` keeps the catalog over
//! `dir` in its configuration, with the planner of `ML.` table functions over it. A session built without it
//! has no catalog: its `CREATE MODEL`, `SHOW MODELS` and `DROP MODEL` say so, and `ML.` table functions are
//! unknown to it.
//!
//! ```
//! use hearth_exec::session::Session;
//! use hearth_sql::{ModelsFeature, SqlSessionExt};
//!
//! let session = Session::builder().with_models("models").local(1);
//! assert_eq!(session.models().unwrap().dir(), std::path::Path::new("models"));
//! assert!(Session::builder().local(1).models().is_err());
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::execution::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use hearth_exec::extension::{Extensions, SessionExtension};
use hearth_exec::session::SessionBuilder;

use super::catalog::ModelCatalog;
use super::relation;

/// The model catalog over a directory, as a session's extension.
#[derive(Debug, Clone)]
pub struct ModelCatalogExtension {
    dir: PathBuf,
}

impl ModelCatalogExtension {
    /// The catalog of the models in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
}

impl SessionExtension for ModelCatalogExtension {
    fn name(&self) -> &str {
        "hearth_sql::models"
    }

    fn extend_session(&self, ctx: &SessionContext) {
        let state = with_catalog(ctx.state(), ModelCatalog::new(self.dir.clone()));
        *ctx.state_ref().write() = state;
    }
}

/// Lists the model catalog in a [`SessionBuilder`]: what `CREATE MODEL` saves to and `ML.` functions read
/// from.
pub trait ModelsFeature {
    /// The builder with the catalog of the models in `dir` ([`ModelCatalogExtension`]).
    fn with_models(self, dir: impl Into<PathBuf>) -> Self;
}

impl ModelsFeature for SessionBuilder {
    fn with_models(self, dir: impl Into<PathBuf>) -> Self {
        self.with_extension(Arc::new(ModelCatalogExtension::new(dir)))
    }
}

/// `state` with its models in `catalog`, planned with the functions of `state`'s extensions.
pub(super) fn with_catalog(mut state: SessionState, catalog: ModelCatalog) -> SessionState {
    let extensions =
        (state.config().get_extension::<Extensions>()).map_or_else(Extensions::default, |e| Extensions::clone(&e));
    state.config_mut().set_extension(Arc::new(catalog.clone()));
    SessionStateBuilder::new_from_existing(state)
        .with_relation_planners(vec![relation::planner(catalog, extensions)])
        .build()
}
