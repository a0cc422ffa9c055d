//! `OneHotEncoder`: category indices into one-hot vectors.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::functions_aggregate::expr_fn::{count, max, min, sum};
use datafusion::logical_expr::{Expr, ident, lit, when};
use datafusion::prelude::DataFrame;
use hearth_common::params::{HandleInvalid, new_uid};
use hearth_exec::attribute::NominalAttribute;
use hearth_exec::error::{HearthError, Result};
use serde::{Deserialize, Serialize};
mod one_hot;

pub(crate) use one_hot::ONE_HOT;
pub use one_hot::OneHotUdf;
use one_hot::encoded_width;

use crate::stage::{
    Estimator, Transformer, check_column_pairs, column_pair_setters, ensure_new_column, input_field, serde_stage,
};

/// Spark's `OneHotEncoder` (3.0+), single- or multi-column. Fitting takes each column's category count from
/// its attribute metadata (a `StringIndexer` output names its labels, `__unknown` included under keep) or,
/// without it, as `max + 1` over the data, which must be non-negative whole numbers.
///
/// `drop_last` (default true) drops the last category's slot; `handle_invalid` (`error`, the default, or
/// `keep`) decides what a value outside `[0, categories)` does at transform time — see
/// [`ml_one_hot`](OneHotUdf) for the four resulting widths.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_exec::session::Session;
/// use hearth_preprocessing::functions::PreprocessingFeature;
/// use hearth_preprocessing::{feature::OneHotEncoder, stage::Estimator};
/// let session = Session::builder().with_preprocessing().local(1);
/// let df = session.context().sql("SELECT * FROM (VALUES (0.0), (2.0), (1.0)) AS t(i)").await.unwrap();
/// let model = OneHotEncoder::new().input_col("i").output_col("v").fit(&df).await.unwrap();
/// assert_eq!(model.category_sizes(), [3]);
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OneHotEncoder {
    uid: String,
    input_cols: Vec<String>,
    output_cols: Vec<String>,
    drop_last: bool,
    handle_invalid: HandleInvalid,
}

impl Default for OneHotEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl OneHotEncoder {
    /// An encoder with Spark's defaults.
    pub fn new() -> Self {
        Self {
            uid: new_uid("OneHotEncoder"),
            input_cols: Vec::new(),
            output_cols: Vec::new(),
            drop_last: true,
            handle_invalid: HandleInvalid::Error,
        }
    }

    column_pair_setters!();

    /// Whether to drop the last category's slot.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// `error` or `keep` (Spark has no `skip` here).
    pub fn handle_invalid(mut self, handle_invalid: HandleInvalid) -> Self {
        self.handle_invalid = handle_invalid;
        self
    }

    fn check_params(&self) -> Result<()> {
        check_column_pairs(&self.uid, &self.input_cols, &self.output_cols)?;
        if self.handle_invalid == HandleInvalid::Skip {
            return Err(HearthError::invalid_param(
                &self.uid,
                "handleInvalid",
                "OneHotEncoder takes \"error\" or \"keep\", not \"skip\"",
            ));
        }
        Ok(())
    }

    /// Category counts from the data for the columns without attribute metadata: one aggregate query.
    async fn sizes_from_data(&self, df: &DataFrame, columns: &[&String]) -> Result<Vec<usize>> {
        let mut aggregates: Vec<Expr> = Vec::new();
        for (i, column) in columns.iter().enumerate() {
            let value = ident(column.as_str());
            let fractional = when(
                value
                    .clone()
                    .not_eq(datafusion::functions::expr_fn::trunc(vec![value.clone()])),
                lit(1i64),
            )
            .otherwise(lit(0i64))?;
            aggregates.extend([
                max(value.clone()).alias(format!("max_{i}")),
                min(value.clone()).alias(format!("min_{i}")),
                sum(fractional).alias(format!("fractional_{i}")),
                count(lit(1)).alias(format!("rows_{i}")),
                count(value).alias(format!("values_{i}")),
            ]);
        }
        let batches = df.clone().aggregate(vec![], aggregates)?.collect().await?;
        let Some(row) = batches.iter().find(|b| b.num_rows() > 0) else {
            return Err(HearthError::invalid_data(
                &self.uid,
                columns[0],
                "the fitting query returned no row",
            ));
        };
        let number = |j: usize| -> Result<Option<f64>> {
            let column = cast(row.column(j), &DataType::Float64)?;
            let column = column.as_primitive::<Float64Type>();
            Ok((!column.is_null(0)).then(|| column.value(0)))
        };
        let whole = |j: usize| -> i64 {
            let column = row.column(j).as_primitive::<Int64Type>();
            if column.is_null(0) { 0 } else { column.value(0) }
        };
        let mut sizes = Vec::with_capacity(columns.len());
        for (i, column) in columns.iter().enumerate() {
            let base = i * 5;
            let (rows, values) = (whole(base + 3), whole(base + 4));
            if rows == 0 {
                return Err(HearthError::invalid_data(
                    &self.uid,
                    *column,
                    "cannot fit on an empty input",
                ));
            }
            if values < rows {
                return Err(HearthError::invalid_data(
                    &self.uid,
                    *column,
                    format!("{} null values; category indices must be non-null", rows - values),
                ));
            }
            let (max, min) = (number(base)?.unwrap_or(f64::NAN), number(base + 1)?.unwrap_or(f64::NAN));
            if min < 0.0 || whole(base + 2) > 0 || !max.is_finite() || max > f64::from(i32::MAX) {
                return Err(HearthError::invalid_data(
                    &self.uid,
                    *column,
                    format!(
                        "values must be category indices (whole numbers from 0 to {}), found values from {min} to {max}{}",
                        i32::MAX,
                        if whole(base + 2) > 0 {
                            " and fractional values"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            sizes.push(max as usize + 1);
        }
        Ok(sizes)
    }
}

impl OneHotEncoder {
    /// The input and output columns.
    pub fn columns(&self) -> (&[String], &[String]) {
        (&self.input_cols, &self.output_cols)
    }

    /// Takes `other`'s columns into this encoder when both encode alike (the same `drop_last` and
    /// `handle_invalid`).
    pub fn absorb(&mut self, other: &OneHotEncoder) -> bool {
        let alike = self.drop_last == other.drop_last && self.handle_invalid == other.handle_invalid;
        if alike {
            self.input_cols.extend(other.input_cols.iter().cloned());
            self.output_cols.extend(other.output_cols.iter().cloned());
        }
        alike
    }
}

impl Estimator for OneHotEncoder {
    type Model = OneHotEncoderModel;

    async fn fit(&self, df: &DataFrame) -> Result<OneHotEncoderModel> {
        self.check_params()?;
        let mut sizes: Vec<Option<usize>> = Vec::with_capacity(self.input_cols.len());
        for column in &self.input_cols {
            let field = input_field(&self.uid, df, column)?;
            if !field.data_type().is_numeric() {
                return Err(HearthError::schema(
                    &self.uid,
                    column,
                    format!("has type {}; it must hold numeric category indices", field.data_type()),
                ));
            }
            sizes.push(NominalAttribute::from_field(field).map(|a| a.values().len()));
        }
        let unknown: Vec<&String> = self
            .input_cols
            .iter()
            .zip(&sizes)
            .filter(|(_, s)| s.is_none())
            .map(|(c, _)| c)
            .collect();
        let mut from_data = if unknown.is_empty() {
            Vec::new()
        } else {
            self.sizes_from_data(df, &unknown).await?
        }
        .into_iter();
        let category_sizes = sizes
            .into_iter()
            .map(|s| s.or_else(|| from_data.next()).unwrap_or(0))
            .collect();
        Ok(OneHotEncoderModel {
            uid: self.uid.clone(),
            input_cols: self.input_cols.clone(),
            output_cols: self.output_cols.clone(),
            drop_last: self.drop_last,
            handle_invalid: self.handle_invalid,
            category_sizes,
        })
    }
}

crate::stage_class!(estimator OneHotEncoder);
crate::stage_example!(
    OneHotEncoder,
    OneHotEncoder::new().input_col("label").output_col("label_vector")
);

/// A fitted [`OneHotEncoder`]: the number of categories of each input column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OneHotEncoderModel {
    uid: String,
    input_cols: Vec<String>,
    output_cols: Vec<String>,
    drop_last: bool,
    handle_invalid: HandleInvalid,
    category_sizes: Vec<usize>,
}

impl OneHotEncoderModel {
    /// The number of categories of each input column.
    pub fn category_sizes(&self) -> &[usize] {
        &self.category_sizes
    }

    /// The width of each output vector.
    pub fn output_widths(&self) -> Vec<usize> {
        let keep = self.handle_invalid == HandleInvalid::Keep;
        self.category_sizes
            .iter()
            .map(|&n| encoded_width(n, self.drop_last, keep))
            .collect()
    }

    /// The index columns encoded.
    pub fn get_input_cols(&self) -> &[String] {
        &self.input_cols
    }

    /// The vector columns added.
    pub fn get_output_cols(&self) -> &[String] {
        &self.output_cols
    }
}

impl Transformer for OneHotEncoderModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        check_column_pairs(&self.uid, &self.input_cols, &self.output_cols)?;
        let mut out = df.clone();
        for ((input, output), &size) in self.input_cols.iter().zip(&self.output_cols).zip(&self.category_sizes) {
            input_field(&self.uid, &out, input)?;
            ensure_new_column(&self.uid, &out, output)?;
            let encoded = ONE_HOT.call(vec![
                ident(input),
                lit(size as i64),
                lit(self.drop_last),
                lit(self.handle_invalid.as_str()),
            ]);
            out = out.with_column(output, encoded)?;
        }
        Ok(out)
    }
}

crate::stage_class!(transformer OneHotEncoderModel);

impl OneHotEncoder {
    /// What [`Stage::describe`] says.
    fn summary(&self) -> String {
        format!("{} columns, dropLast={}", self.input_cols.len(), self.drop_last)
    }
}

serde_stage!(OneHotEncoder, "OneHotEncoder", summary);

impl OneHotEncoderModel {
    /// What [`Stage::describe`] says.
    fn summary(&self) -> String {
        format!("vector widths {:?}", self.output_widths())
    }
}

serde_stage!(OneHotEncoderModel, "OneHotEncoderModel", summary);
