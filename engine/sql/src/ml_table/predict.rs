//! `ML.PREDICT`: a model's predictions of the rows given.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::ml_functions::MlFunction;

/// How a query calls `ML.PREDICT` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "predict",
    syntax: "ML.PREDICT(MODEL m, rows)",
    takes_rows: true,
    settings: None,
    gives: "The rows with `predicted_<label>` and, for a classifier, `predicted_<label>_probs` \
                (`[{label, prob}, …]`); a k-means model instead adds `centroid_id` (1, 2, …) and `nearest_centroids_distance` \
                (`[{centroid_id, distance}, …]`).",
};

/// `ML.PREDICT`.
pub(super) struct Predict;

impl MlTableFunction for Predict {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<LogicalPlan> {
        kind.predict(args)
    }
}
