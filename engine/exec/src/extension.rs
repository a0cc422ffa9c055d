//! What the modules above the core add to the contexts hearth makes, so the core names none of them: SQL
//! functions (a stage's transform, an evaluator's aggregate), barrier functions (the trainer), and a driver
//! session's planners and catalogs (the model catalog of `CREATE MODEL`). Each owner submits a
//! [`SessionExtension`] with `inventory::submit!`; a program has the extensions of the crates it links
//! (`hearth-preprocessing`'s functions, `hearth-training`'s functions and trainer, `hearth-sql`'s catalog), so
//! one built on `hearth-exec` alone has none of them.
//!
//! ```
//! use datafusion::execution::FunctionRegistry;
//!
//! use datafusion::prelude::SessionContext;
//! use hearth_exec::extension::{SessionExtension, install_functions};
//!
//! fn register(ctx: &SessionContext) {
//!     ctx.register_udf(datafusion::logical_expr::ScalarUDF::clone(&hearth_exec::frame::ROW_UNIFORM));
//! }
//! inventory::submit! {
//!     SessionExtension { name: "doc", functions: register, session: SessionExtension::nothing }
//! }
//!
//! let ctx = SessionContext::new();
//! install_functions(&ctx);
//! assert!(ctx.udf("ml_row_uniform").is_ok());
//! ```

use datafusion::prelude::SessionContext;

/// One module's additions to hearth's contexts.
#[derive(Debug)]
pub struct SessionExtension {
    /// Who adds them (a module path), for messages and debugging.
    pub name: &'static str,
    /// Adds to every context hearth makes — a driver's, an executor's, the scheduler's — what a plan may
    /// name: functions, barrier functions.
    pub functions: fn(&SessionContext),
    /// Adds to a driver's session, once its context is final, what planning its statements needs: planners,
    /// catalogs.
    pub session: fn(&SessionContext),
}

impl SessionExtension {
    /// Does nothing: for an extension with nothing to add at one of its two points.
    pub fn nothing(_: &SessionContext) {}
}

inventory::collect!(SessionExtension);

/// Installs every submitted extension's functions in `ctx`.
pub fn install_functions(ctx: &SessionContext) {
    for extension in inventory::iter::<SessionExtension> {
        (extension.functions)(ctx);
    }
}

/// Installs every submitted extension's session additions in a driver's `ctx`.
pub fn install_session(ctx: &SessionContext) {
    for extension in inventory::iter::<SessionExtension> {
        (extension.session)(ctx);
    }
}
