//! Spark's data frame operations that DataFusion lacks: `randomSplit` and `repartition(n)`.

use datafusion::logical_expr::{Expr, lit};
use datafusion::prelude::DataFrame;

mod row_uniform;

pub use row_uniform::ROW_UNIFORM;
pub use row_uniform::RowUniformUdf;

use crate::error::{HearthError, Result};
use crate::exchange::ExactRepartition;
use crate::master::SessionInfo;

/// hearth's additions to DataFusion's [`DataFrame`].
pub trait DataFrameExt: Sized {
    /// Splits the rows at random into data frames whose sizes follow `weights` (normalised to sum to 1), like
    /// Spark's `randomSplit`. Each row's draw is a seeded hash of its values, so a seed gives the same split
    /// on every run, machine and partitioning; identical rows land in the same split.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use hearth_exec::{frame::DataFrameExt, session::Session};
    /// let session = Session::builder().local(2);
    /// let df = session.context().sql("SELECT * FROM generate_series(1, 1000) AS t(x)").await.unwrap();
    /// let parts = df.random_split(&[0.8, 0.2], 42).unwrap();
    /// let train = parts[0].clone().count().await.unwrap();
    /// let test = parts[1].clone().count().await.unwrap();
    /// assert_eq!(train + test, 1000);
    /// assert!((750..850).contains(&train));
    /// # });
    /// ```
    fn random_split(&self, weights: &[f64], seed: u64) -> Result<Vec<DataFrame>>;

    /// Redistributes the rows into exactly `partitions` partitions by a hash of all their values, which spreads
    /// distinct rows evenly (Spark's `repartition(n)`). Unlike DataFusion's `repartition`, which the optimizer
    /// may drop, the partition count is guaranteed (see [`crate::exchange`]).
    fn repartition_rows(&self, partitions: usize) -> Result<DataFrame>;
}

/// `df`'s rows hash-distributed into exactly `partitions` partitions by hearth's own plan node (planned by
/// hearth's query planner, on the driver).
pub(crate) fn exact_repartition(df: &DataFrame, partitions: usize) -> DataFrame {
    let (state, plan) = df.clone().into_parts();
    let exact = ExactRepartition::new(plan, all_columns(df), partitions).into_plan();
    DataFrame::new(state, exact)
}

fn all_columns(df: &DataFrame) -> Vec<Expr> {
    df.schema().columns().into_iter().map(Expr::Column).collect()
}

impl DataFrameExt for DataFrame {
    fn random_split(&self, weights: &[f64], seed: u64) -> Result<Vec<DataFrame>> {
        if weights.is_empty() {
            return Err(HearthError::invalid_param(
                "random_split",
                "weights",
                "at least one weight is needed",
            ));
        }
        if let Some(w) = weights.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return Err(HearthError::invalid_param(
                "random_split",
                "weights",
                format!("weights must be finite and non-negative, got {w}"),
            ));
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(HearthError::invalid_param(
                "random_split",
                "weights",
                "the weights sum to zero",
            ));
        }
        let mut args = vec![lit(seed)];
        args.extend(all_columns(self));
        let draw = ROW_UNIFORM.call(args);
        let mut lower = 0.0;
        let mut splits = Vec::with_capacity(weights.len());
        for (i, w) in weights.iter().enumerate() {
            let upper = if i + 1 == weights.len() { 1.0 } else { lower + w / total };
            let predicate = draw.clone().gt_eq(lit(lower)).and(draw.clone().lt(lit(upper)));
            splits.push(self.clone().filter(predicate)?);
            lower = upper;
        }
        Ok(splits)
    }

    fn repartition_rows(&self, partitions: usize) -> Result<DataFrame> {
        if partitions == 0 {
            return Err(HearthError::invalid_param(
                "repartition",
                "partitions",
                "must be at least 1",
            ));
        }
        if SessionInfo::of(self).scheduler().is_some() {
            // Ballista plans the query on its scheduler, where a hash repartition is a shuffle stage.
            let hash = datafusion::logical_expr::Partitioning::Hash(all_columns(self), partitions);
            return Ok(self.clone().repartition(hash)?);
        }
        Ok(exact_repartition(self, partitions))
    }
}
