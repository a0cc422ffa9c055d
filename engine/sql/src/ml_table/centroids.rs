//! `ML.CENTROIDS`: a k-means model's centroids.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::kmeans;
use crate::ml_functions::MlFunction;

/// How a query calls `ML.CENTROIDS` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "centroids",
    syntax: "ML.CENTROIDS(MODEL m)",
    takes_rows: false,
    settings: None,
    gives: "A k-means model's centroids: a row per centroid and feature (`centroid_id`, `feature`, \
                `numerical_value` in the column's own units, or a string column's `categorical_value`).",
};

/// `ML.CENTROIDS`.
pub(super) struct Centroids;

impl MlTableFunction for Centroids {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        kmeans::centroids(args.model)
    }
}
