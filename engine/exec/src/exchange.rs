//! An exact repartition: rows hash-distributed into exactly `n` partitions, kept through physical
//! optimization.
//!
//! DataFusion's optimizer treats a `RepartitionExec` as a tuning knob and removes it where no operator above
//! asks for that distribution, so `DataFrame::repartition` alone does not guarantee `n` partitions. Spark's
//! `repartition(n)` does, and barrier training needs it (one partition per rank). This module adds a logical
//! node and an operator whose output partitioning *is* the contract.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::DFSchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

/// Logical node: hash-distribute the input rows on `keys` into exactly `partitions` partitions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
pub struct ExactRepartition {
    input: LogicalPlan,
    keys: Vec<Expr>,
    partitions: usize,
}

impl ExactRepartition {
    /// The node for `input`.
    pub fn new(input: LogicalPlan, keys: Vec<Expr>, partitions: usize) -> Self {
        Self {
            input,
            keys,
            partitions,
        }
    }

    /// Wraps the node as a logical plan.
    pub fn into_plan(self) -> LogicalPlan {
        LogicalPlan::Extension(datafusion::logical_expr::Extension { node: Arc::new(self) })
    }
}

impl UserDefinedLogicalNodeCore for ExactRepartition {
    fn name(&self) -> &str {
        "ExactRepartition"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        self.input.schema()
    }

    fn expressions(&self) -> Vec<Expr> {
        self.keys.clone()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ExactRepartition: partitions={}, keys=[", self.partitions)?;
        for (i, key) in self.keys.iter().enumerate() {
            write!(f, "{}{key}", if i > 0 { ", " } else { "" })?;
        }
        write!(f, "]")
    }

    fn with_exprs_and_inputs(&self, exprs: Vec<Expr>, mut inputs: Vec<LogicalPlan>) -> Result<Self> {
        let input = inputs
            .pop()
            .ok_or_else(|| DataFusionError::Internal("ExactRepartition needs one input".to_string()))?;
        Ok(Self::new(input, exprs, self.partitions))
    }
}

/// Operator: a hash repartition into exactly `n` partitions that optimizers do not remove, because it is not
/// itself a `RepartitionExec` (it drives one internally).
#[derive(Debug)]
pub struct ExactRepartitionExec {
    input: Arc<dyn ExecutionPlan>,
    inner: Arc<RepartitionExec>,
}

impl ExactRepartitionExec {
    /// Hash-distributes `input` on `keys` into `partitions` partitions.
    pub fn try_new(input: Arc<dyn ExecutionPlan>, keys: Vec<Arc<dyn PhysicalExpr>>, partitions: usize) -> Result<Self> {
        let inner = Arc::new(RepartitionExec::try_new(
            Arc::clone(&input),
            Partitioning::Hash(keys, partitions),
        )?);
        Ok(Self { input, inner })
    }

    fn keys(&self) -> Vec<Arc<dyn PhysicalExpr>> {
        match self.inner.partitioning() {
            Partitioning::Hash(keys, _) => keys.clone(),
            _ => Vec::new(),
        }
    }
}

impl DisplayAs for ExactRepartitionExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ExactRepartitionExec: partitioning={}", self.inner.partitioning())
    }
}

impl ExecutionPlan for ExactRepartitionExec {
    fn name(&self) -> &str {
        "ExactRepartitionExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .pop()
            .ok_or_else(|| DataFusionError::Internal("ExactRepartitionExec needs one child".to_string()))?;
        let partitions = self.inner.partitioning().partition_count();
        Ok(Arc::new(Self::try_new(input, self.keys(), partitions)?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        self.inner.execute(partition, context)
    }
}

/// The plan with every [`ExactRepartitionExec`] turned into the hash `RepartitionExec` it drives: what
/// Ballista's planner cuts into a shuffle stage, so the stage above has exactly that many partitions.
pub(crate) fn into_shuffles(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    plan.transform_up(|node| {
        Ok(match node.downcast_ref::<ExactRepartitionExec>() {
            Some(exact) => Transformed::yes(Arc::clone(&exact.inner) as Arc<dyn ExecutionPlan>),
            None => Transformed::no(node),
        })
    })
    .map(|transformed| transformed.data)
}

/// Plans hearth's logical nodes.
#[derive(Debug, Default)]
struct HearthExtensionPlanner;

#[async_trait]
impl ExtensionPlanner for HearthExtensionPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(repartition) = node.as_any().downcast_ref::<ExactRepartition>() else {
            return Ok(None);
        };
        let keys = repartition
            .keys
            .iter()
            .map(|key| planner.create_physical_expr(key, logical_inputs[0].schema(), session, planning_ctx))
            .collect::<Result<Vec<_>>>()?;
        let input = Arc::clone(&physical_inputs[0]);
        Ok(Some(Arc::new(ExactRepartitionExec::try_new(
            input,
            keys,
            repartition.partitions,
        )?)))
    }
}

/// DataFusion's planner, taught hearth's logical nodes.
#[derive(Debug, Default)]
pub struct HearthQueryPlanner;

#[async_trait]
impl QueryPlanner for HearthQueryPlanner {
    async fn create_physical_plan(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(HearthExtensionPlanner)])
            .create_physical_plan(plan, session)
            .await
    }
}
