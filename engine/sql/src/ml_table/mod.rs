//! hearth's `ML.` table functions, one file each: a function's declaration (its [`MlFunction`] row of
//! [`ML_FUNCTIONS`](crate::ML_FUNCTIONS)) beside how it plans, and the [`ModelKind`] a model's function
//! dispatches on (a supervised model or k-means). The relation planner finds a call's function in
//! [`TABLE_FUNCTIONS`] and plans it over [`MlArgs`].

mod centroids;
mod confusion_matrix;
mod evaluate;
mod explain_predict;
mod feature_info;
mod global_explain;
mod kind;
mod predict;
mod roc_curve;
mod training_info;
mod transform;
mod trial_info;
mod weights;

use datafusion::error::DataFusionError;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::DataFrame;
use datafusion::sql::sqlparser::ast::Expr;
use hearth_exec::error::Result;

pub(crate) use kind::{ModelKind, kind_of};

use super::catalog::CatalogModel;
use super::ml_functions::MlFunction;
use super::table_functions::held_out_rows;

/// One `ML.` table function: its declaration and its plan.
pub(crate) trait MlTableFunction: Sync {
    /// How a query calls it and what it gives.
    fn declaration(&self) -> &'static MlFunction;

    /// Nothing when the function applies to a model of kind `kind`, else why not; checked before the call's
    /// rows are planned. Every kind, unless the function says otherwise.
    fn check_kind(&self, _args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<()> {
        Ok(())
    }

    /// The function's plan over a call's arguments, its model of kind `kind`.
    fn plan(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<LogicalPlan>;
}

/// Every `ML.` table function, in the order the guide presents them.
pub(crate) const TABLE_FUNCTIONS: &[&dyn MlTableFunction] = &[
    &predict::Predict,
    &evaluate::Evaluate,
    &confusion_matrix::ConfusionMatrix,
    &roc_curve::RocCurve,
    &explain_predict::ExplainPredict,
    &global_explain::GlobalExplain,
    &transform::Transform,
    &training_info::TrainingInfo,
    &feature_info::FeatureInfo,
    &trial_info::TrialInfo,
    &centroids::Centroids,
    &weights::Weights,
];

/// The declarations of [`TABLE_FUNCTIONS`], in their order.
pub(crate) const DECLARATIONS: [MlFunction; 12] = [
    predict::DECLARATION,
    evaluate::DECLARATION,
    confusion_matrix::DECLARATION,
    roc_curve::DECLARATION,
    explain_predict::DECLARATION,
    global_explain::DECLARATION,
    transform::DECLARATION,
    training_info::DECLARATION,
    feature_info::DECLARATION,
    trial_info::DECLARATION,
    centroids::DECLARATION,
    weights::DECLARATION,
];

/// The `ML.` table function `name` (lower case, `predict`), when hearth has it.
pub(crate) fn table_function(name: &str) -> Option<&'static dyn MlTableFunction> {
    TABLE_FUNCTIONS
        .iter()
        .copied()
        .find(|function| function.declaration().name == name)
}

/// An `ML.` call's arguments: its model, and the rows (planned) and settings it was given.
pub(crate) struct MlArgs<'a> {
    /// The call's name in messages (`ML.PREDICT`).
    pub name: &'a str,
    /// The model's name as the call wrote it.
    pub model_name: &'a str,
    /// The model `MODEL m` names.
    pub model: &'a CatalogModel,
    /// The rows after the model, when given.
    pub rows: Option<DataFrame>,
    /// The settings after the rows (`STRUCT(0.6 AS threshold)`), when given.
    pub settings: Option<&'a Expr>,
    /// The state rows the model held out are read in.
    pub state: &'a SessionState,
}

impl MlArgs<'_> {
    /// The rows given, or the planning error that says `what` is missing.
    pub fn rows(&self, what: &str) -> Result<DataFrame> {
        self.rows.clone().ok_or_else(|| {
            DataFusionError::Plan(format!("{}(MODEL {}, (SELECT …)): {what}", self.name, self.model_name)).into()
        })
    }

    /// The rows given, else the rows the model held out when training, as `ML.EVALUATE` reads them.
    pub fn rows_or_held_out(&self) -> Result<DataFrame> {
        match &self.rows {
            Some(rows) => Ok(rows.clone()),
            None => Ok(DataFrame::new(self.state.clone(), held_out_rows(self.model)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{DECLARATIONS, TABLE_FUNCTIONS};

    #[test]
    fn each_table_function_is_declared_in_its_place() {
        assert_eq!(TABLE_FUNCTIONS.len(), DECLARATIONS.len());
        for (function, declaration) in TABLE_FUNCTIONS.iter().zip(&DECLARATIONS) {
            assert_eq!(function.declaration().name, declaration.name);
        }
    }
}
