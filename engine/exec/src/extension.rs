//! What the modules above the core add to the contexts hearth makes, so the core names none of them: SQL
//! functions (a stage's transform, an evaluator's aggregate), barrier functions (the trainer), codecs of
//! functions bound to data, and a driver session's planners and catalogs (the model catalog of `CREATE MODEL`).
//! Each owner offers a [`SessionExtension`]; a session has the extensions its builder was given
//! ([`Session::builder`](crate::session::Session::builder)), a fleet's executors and scheduler those their
//! options list, and nothing else: linking a crate adds nothing to a session that does not ask for it.
//!
//! ```
//! use std::sync::Arc;
//! use datafusion::execution::FunctionRegistry;
//! use datafusion::logical_expr::ScalarUDF;
//! use datafusion::prelude::SessionContext;
//! use hearth_exec::extension::{Extensions, SessionExtension};
//! use hearth_exec::session::Session;
//!
//! /// Adds `ml_row_uniform` under a second name.
//! #[derive(Debug)]
//! struct Uniform;
//!
//! impl SessionExtension for Uniform {
//!     fn name(&self) -> &str {
//!         "uniform"
//!     }
//!     fn register_functions(&self, ctx: &SessionContext) {
//!         ctx.register_udf(ScalarUDF::clone(&hearth_exec::frame::ROW_UNIFORM).with_aliases(["uniform"]));
//!     }
//! }
//!
//! let session = Session::builder().with_extension(Arc::new(Uniform)).local(1);
//! assert!(session.context().udf("uniform").is_ok());
//! assert_eq!(Extensions::of(session.context()).names(), ["uniform"]);
//! assert!(Session::builder().local(1).context().udf("uniform").is_err());
//! ```

use std::fmt;
use std::sync::Arc;

use datafusion::error::Result;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

use crate::frame::ROW_UNIFORM;

/// One module's additions to hearth's contexts. Every method but [`name`](Self::name) adds nothing unless
/// the extension overrides it.
pub trait SessionExtension: fmt::Debug + Send + Sync {
    /// Who adds them, for messages and for replacing an extension with another of the same name.
    fn name(&self) -> &str;

    /// Adds to every context hearth makes — a driver's, an executor's, the scheduler's — what a plan may
    /// name: functions, barrier functions.
    fn register_functions(&self, _ctx: &SessionContext) {}

    /// Adds to a driver's session, once its context is final, what planning its statements needs: planners,
    /// catalogs.
    fn extend_session(&self, _ctx: &SessionContext) {}

    /// How this extension's functions that carry data (a trained model) cross the wire between driver and
    /// executors; other functions travel by name.
    fn udf_codecs(&self) -> Vec<UdfCodec> {
        Vec::new()
    }
}

/// How a function bound to data that travels with it (a trained model) crosses the wire between driver and
/// executors. The extension that owns such functions offers one ([`SessionExtension::udf_codecs`]); every
/// other function travels by name, and the executor finds it among its registered functions.
///
#[derive(Debug, Clone, Copy)]
pub struct UdfCodec {
    /// The names of the functions it rebuilds.
    pub names: &'static [&'static str],
    /// Writes `udf`'s bound data into the buffer and says `true`, or says `false` when `udf` is not one of its
    /// functions.
    pub encode: fn(&ScalarUDF, &mut Vec<u8>) -> bool,
    /// Rebuilds one of its functions from the bytes `encode` wrote.
    pub decode: fn(&[u8]) -> Result<Arc<ScalarUDF>>,
}

/// The extensions of a session, an executor or a scheduler, in the order they were given. A session keeps
/// them in its configuration, so whatever has its context finds them with [`Extensions::of`].
///
/// ```
/// let none = hearth_exec::extension::Extensions::default();
/// assert!(none.names().is_empty());
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    list: Vec<Arc<dyn SessionExtension>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Extensions {
    /// These extensions and `extension`, which replaces one of the same name where there is one.
    pub fn with(mut self, extension: Arc<dyn SessionExtension>) -> Self {
        match self.list.iter().position(|e| e.name() == extension.name()) {
            Some(at) => self.list[at] = extension,
            None => self.list.push(extension),
        }
        self
    }

    /// The names of the extensions, in order.
    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(|e| e.name()).collect()
    }

    /// The extensions `ctx` was made with (none for a context hearth did not make).
    pub fn of(ctx: &SessionContext) -> Self {
        let kept = ctx.state().config().get_extension::<Extensions>();
        kept.map(|extensions| Self::clone(&extensions)).unwrap_or_default()
    }

    /// Registers in `ctx` the core's functions and every extension's.
    ///
    /// ```
    /// use datafusion::execution::FunctionRegistry;
    ///
    /// let ctx = datafusion::prelude::SessionContext::new();
    /// hearth_exec::extension::Extensions::default().register_functions(&ctx);
    /// assert!(ctx.udf("ml_row_uniform").is_ok());
    /// ```
    pub fn register_functions(&self, ctx: &SessionContext) {
        ctx.register_udf(ScalarUDF::clone(&ROW_UNIFORM));
        for extension in &self.list {
            extension.register_functions(ctx);
        }
    }

    /// Adds every extension's session additions to a driver's `ctx`.
    pub fn extend_session(&self, ctx: &SessionContext) {
        for extension in &self.list {
            extension.extend_session(ctx);
        }
    }

    /// Every extension's codecs of functions bound to data.
    pub fn udf_codecs(&self) -> Vec<UdfCodec> {
        self.list.iter().flat_map(|e| e.udf_codecs()).collect()
    }
}
