//! Barrier functions: the code each task of a barrier stage runs, registered by name in every process.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, RwLock};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};

use super::{BarrierInput, BarrierTaskContext};

/// The code every task of a barrier stage runs on its partition, with its [`BarrierTaskContext`].
///
/// `args` is the stage's argument string (JSON for hearth's own functions), the same on every task. A
/// function's errors must not be `DataFusionError::IoError`: a cluster retries an IO error by re-running
/// one task alone, which can never rejoin its stage.
pub trait BarrierFunction: fmt::Debug + Send + Sync {
    /// The name plans use.
    fn name(&self) -> &str;

    /// The schema of the rows each task returns, for these `args`.
    fn schema(&self, args: &str) -> Result<SchemaRef>;

    /// Runs one task: its context, the stage's `args` and its partition's rows.
    fn run(&self, context: &mut BarrierTaskContext, args: &str, input: Vec<RecordBatch>) -> Result<RecordBatch>;

    /// Runs one task on its partition as it arrived: held in memory, or spilled to disk beyond the stage's
    /// memory budget, which a function that streams its rows reads a batch at a time
    /// ([`BarrierInput::canonical_batches`]). The default gives [`run`](Self::run) every row in memory.
    fn run_input(&self, context: &mut BarrierTaskContext, args: &str, input: BarrierInput) -> Result<RecordBatch> {
        self.run(context, args, input.into_batches()?)
    }
}

type TaskFn = dyn Fn(&mut BarrierTaskContext, Vec<RecordBatch>) -> Result<RecordBatch> + Send + Sync;

/// A barrier function from a closure and its output schema, for custom code run by name (see the
/// [module](super) example). It ignores the stage's argument string.
pub struct FnBarrier {
    name: String,
    schema: SchemaRef,
    task: Box<TaskFn>,
}

impl FnBarrier {
    /// A function `name` returning rows of `schema`, each task running `task`.
    pub fn new(
        name: impl Into<String>,
        schema: SchemaRef,
        task: impl Fn(&mut BarrierTaskContext, Vec<RecordBatch>) -> Result<RecordBatch> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            schema,
            task: Box::new(task),
        }
    }
}

impl fmt::Debug for FnBarrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnBarrier")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl BarrierFunction for FnBarrier {
    fn name(&self) -> &str {
        &self.name
    }

    fn schema(&self, _args: &str) -> Result<SchemaRef> {
        Ok(Arc::clone(&self.schema))
    }

    fn run(&self, context: &mut BarrierTaskContext, _args: &str, input: Vec<RecordBatch>) -> Result<RecordBatch> {
        (self.task)(context, input)
    }
}

/// A registered function, and whether it is one of hearth's own (which every fleet executor has).
struct Registered {
    function: Arc<dyn BarrierFunction>,
    builtin: bool,
}

type Registry = RwLock<HashMap<String, Registered>>;

static FUNCTIONS: LazyLock<Registry> = LazyLock::new(Registry::default);

/// Makes `function` runnable by name in this process, replacing one of the same name.
///
/// On a fleet, the executors run a task of this function in a copy of this program (see
/// [`program`](super::program)); in such a copy, registering the task's function runs the task and ends the
/// process.
pub fn register_function(function: impl BarrierFunction + 'static) {
    let function: Arc<dyn BarrierFunction> = Arc::new(function);
    {
        let mut functions = FUNCTIONS.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let registered = Registered {
            function: Arc::clone(&function),
            builtin: false,
        };
        functions.insert(function.name().to_string(), registered);
    }
    super::program::serve_if_worker(function.as_ref());
}

/// Registers one of hearth's own functions unless a function of its name is registered already, so a
/// replacement registered by the user stays.
pub fn register_builtin(function: impl BarrierFunction + 'static) {
    let mut functions = FUNCTIONS.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    functions
        .entry(function.name().to_string())
        .or_insert_with(|| Registered {
            function: Arc::new(function),
            builtin: true,
        });
}

/// Whether `name` is a function this program registered itself, which a fleet's executors do not have.
pub(crate) fn is_user_function(name: &str) -> bool {
    let functions = FUNCTIONS.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    functions.get(name).is_some_and(|registered| !registered.builtin)
}

/// The function registered as `name`.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::datatypes::Schema;
/// use hearth_exec::barrier::{FnBarrier, function, register_function};
///
/// register_function(FnBarrier::new("noop", Arc::new(Schema::empty()), |_, _| unreachable!()));
/// assert!(function("noop").is_ok());
/// assert!(function("nope").is_err());
/// ```
pub fn function(name: &str) -> Result<Arc<dyn BarrierFunction>> {
    let functions = FUNCTIONS.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    functions.get(name).map(|r| Arc::clone(&r.function)).ok_or_else(|| {
        let mut known: Vec<&str> = functions.keys().map(String::as_str).collect();
        known.sort_unstable();
        DataFusionError::Plan(format!(
            "no barrier function named {name:?} in this process (registered: {})",
            known.join(", ")
        ))
    })
}
