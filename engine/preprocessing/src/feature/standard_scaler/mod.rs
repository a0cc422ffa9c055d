//! `StandardScaler`: scales vector slots to unit sample standard deviation, optionally centring them.

use datafusion::arrow::array::{AsArray, StructArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::logical_expr::{Expr, LogicalPlan, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::new_uid;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::args::f64_list_literal;
use hearth_exec::vector::vector_dim;
use serde::{Deserialize, Serialize};

mod standard_scale;
mod vector_summary;

pub(crate) use standard_scale::{SCALED_ASSEMBLE, STANDARD_SCALE};
pub use standard_scale::{ScaledAssembleUdf, StandardScaleUdf};
pub use vector_summary::VectorSummaryUdaf;
pub(crate) use vector_summary::{ASSEMBLED_SUMMARY, VECTOR_SUMMARY};

use crate::feature::vector_assembler::assembled_arguments;
use crate::stage::{Estimator, Transformer, ensure_new_column, input_field, serde_stage};

/// Spark's `StandardScaler`: fits per-slot mean and corrected sample standard deviation (divisor `n − 1`; 0
/// for one row) of a vector column; its model maps `x` to `(x − mean)/std` with `with_mean`, or `x/std`
/// without. A slot whose standard deviation is 0 becomes 0.0. Defaults: `with_mean = false`,
/// `with_std = true`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_exec::session::Session;
/// use hearth_preprocessing::functions::PreprocessingFeature;
/// use hearth_preprocessing::{feature::{StandardScaler, VectorAssembler}, stage::{Estimator, Transformer}};
/// let session = Session::builder().with_preprocessing().local(1);
/// let df = session.context().sql("SELECT * FROM (VALUES (1.0), (2.0), (3.0), (4.0)) AS t(x)").await.unwrap();
/// let df = VectorAssembler::new().input_cols(["x"]).output_col("v").transform(&df).unwrap();
/// let model = StandardScaler::new().input_col("v").output_col("scaled").fit(&df).await.unwrap();
/// assert!((model.std()[0] - (5.0_f64 / 3.0).sqrt()).abs() < 1e-12);
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StandardScaler {
    uid: String,
    input_col: String,
    output_col: String,
    with_mean: bool,
    with_std: bool,
}

impl Default for StandardScaler {
    fn default() -> Self {
        Self::new()
    }
}

impl StandardScaler {
    /// A scaler with Spark's defaults.
    pub fn new() -> Self {
        let uid = new_uid("StandardScaler");
        Self {
            output_col: format!("{uid}__output"),
            uid,
            input_col: String::new(),
            with_mean: false,
            with_std: true,
        }
    }

    /// The vector column to scale.
    pub fn input_col(mut self, column: impl Into<String>) -> Self {
        self.input_col = column.into();
        self
    }

    /// The scaled vector column to add.
    pub fn output_col(mut self, column: impl Into<String>) -> Self {
        self.output_col = column.into();
        self
    }

    /// Centre each slot on its mean before scaling.
    pub fn with_mean(mut self, with_mean: bool) -> Self {
        self.with_mean = with_mean;
        self
    }

    /// The input and output columns.
    pub fn columns(&self) -> (&str, &str) {
        (&self.input_col, &self.output_col)
    }

    /// Divide each slot by its standard deviation.
    pub fn with_std(mut self, with_std: bool) -> Self {
        self.with_std = with_std;
        self
    }
}

impl Estimator for StandardScaler {
    type Model = StandardScalerModel;

    async fn fit(&self, df: &DataFrame) -> Result<StandardScalerModel> {
        let field = input_field(&self.uid, df, &self.input_col)?;
        if vector_dim(field.data_type()).is_none() {
            return Err(HearthError::schema(
                &self.uid,
                &self.input_col,
                format!("must be a vector column, got {}", field.data_type()),
            ));
        }
        let query = match assembled_input(df, &self.input_col) {
            Some((columns, arguments)) => {
                columns.aggregate(vec![], vec![ASSEMBLED_SUMMARY.call(arguments).alias("summary")])?
            }
            None => df.clone().aggregate(
                vec![],
                vec![VECTOR_SUMMARY.call(vec![ident(&self.input_col)]).alias("summary")],
            )?,
        };
        let batches = query.collect().await?;
        let summary = batches
            .iter()
            .find(|b| b.num_rows() > 0)
            .map(|b| b.column(0).as_struct().clone())
            .ok_or_else(|| {
                HearthError::invalid_data(
                    &self.uid,
                    &self.input_col,
                    "cannot fit on an empty input (no non-null vectors)",
                )
            })?;
        let (count, mean, std) = read_summary(&summary);
        if count == 0 {
            return Err(HearthError::invalid_data(
                &self.uid,
                &self.input_col,
                "cannot fit on an empty input (no non-null vectors)",
            ));
        }
        Ok(StandardScalerModel {
            uid: self.uid.clone(),
            input_col: self.input_col.clone(),
            output_col: self.output_col.clone(),
            with_mean: self.with_mean,
            with_std: self.with_std,
            mean,
            std,
        })
    }
}

crate::stage_class!(estimator StandardScaler);
crate::stage_example!(
    StandardScaler,
    StandardScaler::new()
        .input_col("features")
        .output_col("scaled")
        .with_mean(true)
);

/// `(count, mean, std)` from the first row of `ml_vector_summary`'s struct.
/// When `column` is assembled by a `VectorAssembler` in `df`'s last projection: the projection's input and the
/// assembler's arguments, so the summary is taken from the columns without building the vectors.
fn assembled_input(df: &DataFrame, column: &str) -> Option<(DataFrame, Vec<Expr>)> {
    let (state, plan) = df.clone().into_parts();
    let LogicalPlan::Projection(projection) = plan else {
        return None;
    };
    let index = projection.schema.index_of_column_by_name(None, column)?;
    let arguments = assembled_arguments(projection.expr.get(index)?)?.to_vec();
    Some((DataFrame::new(state, projection.input.as_ref().clone()), arguments))
}

fn read_summary(summary: &StructArray) -> (i64, Vec<f64>, Vec<f64>) {
    let count = summary.column(0).as_primitive::<Int64Type>().value(0);
    let list = |i: usize| -> Vec<f64> {
        let values = summary.column(i).as_list::<i32>().value(0);
        values.as_primitive::<Float64Type>().values().to_vec()
    };
    (count, list(1), list(2))
}

/// A fitted [`StandardScaler`]: the per-slot mean and standard deviation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StandardScalerModel {
    uid: String,
    input_col: String,
    output_col: String,
    with_mean: bool,
    with_std: bool,
    mean: Vec<f64>,
    std: Vec<f64>,
}

impl StandardScalerModel {
    /// The per-slot means.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// The per-slot corrected sample standard deviations.
    pub fn std(&self) -> &[f64] {
        &self.std
    }

    /// The scaled vector column added.
    pub fn get_output_col(&self) -> &str {
        &self.output_col
    }
}

impl Transformer for StandardScalerModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        let field = input_field(&self.uid, df, &self.input_col)?;
        match vector_dim(field.data_type()) {
            Some(dim) if dim == self.std.len() => {}
            _ => {
                return Err(HearthError::schema(
                    &self.uid,
                    &self.input_col,
                    format!(
                        "expected a vector of {} slots (the fitted width), got {}",
                        self.std.len(),
                        field.data_type()
                    ),
                ));
            }
        }
        ensure_new_column(&self.uid, df, &self.output_col)?;
        let scaled = STANDARD_SCALE.call(vec![
            ident(&self.input_col),
            lit(f64_list_literal(&self.mean)),
            lit(f64_list_literal(&self.std)),
            lit(self.with_mean),
            lit(self.with_std),
        ]);
        Ok(df.clone().with_column(&self.output_col, scaled)?)
    }
}

crate::stage_class!(transformer StandardScalerModel);

impl StandardScaler {
    /// What [`Stage::describe`] says.
    fn summary(&self) -> String {
        format!("withMean={}, withStd={}", self.with_mean, self.with_std)
    }
}

serde_stage!(StandardScaler, "StandardScaler", summary);

impl StandardScalerModel {
    /// What [`Stage::describe`] says.
    fn summary(&self) -> String {
        format!("{} slots, mean and std", self.std.len())
    }
}

serde_stage!(StandardScalerModel, "StandardScalerModel", summary);
