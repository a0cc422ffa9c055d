//! `ML.WEIGHTS(MODEL m)`: a linear model's weights as BigQuery ML returns them — one row per input column of
//! the training query, in that column's units (a standardized number's coefficient divided by its standard
//! deviation), a string column's weights per category in `category_weights`, and the intercept as the row
//! `__INTERCEPT__` (its weight moved by the standardized numbers' means). A multinomial logistic regression
//! has these rows for each class, named in `class_label`. With `STRUCT(TRUE AS standardize)` the numbers weigh
//! per standard deviation of their training values instead, comparable with each other, and the intercept is
//! the prediction at their means.
//!
//! | column | what |
//! |---|---|
//! | `class_label` | the class of the row's weights (a multinomial model only) |
//! | `processed_input` | the input column, or `__INTERCEPT__` |
//! | `weight` | a number column's weight, the intercept; NULL for a string column |
//! | `category_weights` | a string column's `[{category, weight}, …]` |

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::Expr as SqlExpr;
use hearth_exec::error::{HearthError, Result};

use super::catalog::CatalogModel;
use super::feature_slots::{ColumnValue, Slot, by_column, category_list, category_list_type, slots};
use super::literals;
use super::rows::literal_rows;
use super::settings::one_setting;
use super::table_functions::{class_names, trained};
use super::trained::Trained;

/// BigQuery's name of the intercept's row.
const INTERCEPT: &str = "__INTERCEPT__";

/// A linear model's coefficient sets, by class (one set, unnamed, for a regression or a binomial model), and
/// the intercept of each.
struct CoefficientSets {
    classes: Option<Vec<String>>,
    sets: Vec<Vec<f64>>,
    intercepts: Vec<f64>,
}

/// `ML.WEIGHTS`: the rows of the table above; with `STRUCT(TRUE AS standardize)` in `settings`, see
/// [`per_deviation`].
pub(crate) fn weights(model: &CatalogModel, settings: Option<&SqlExpr>) -> Result<LogicalPlan> {
    let standardize = one_setting(
        "ML.WEIGHTS",
        "standardize",
        "TRUE or FALSE",
        settings,
        literals::boolean,
    )?;
    let sets = coefficient_sets(model)?;
    let width = sets.sets.first().map_or(0, Vec::len);
    let slots = slots(model, width);
    let categories_type = category_list_type("weight");
    let no_categories = ScalarValue::try_from(&categories_type)?;
    let mut rows = Vec::new();
    for (k, (coefficients, intercept)) in sets.sets.iter().zip(&sets.intercepts).enumerate() {
        let class = sets
            .classes
            .as_ref()
            .map(|classes| ScalarValue::from(classes[k].as_str()));
        let mut row = |input: &str, weight: Option<f64>, categories: ScalarValue| {
            let mut row: Vec<ScalarValue> = class.iter().cloned().collect();
            row.extend([ScalarValue::from(input), ScalarValue::Float64(weight), categories]);
            rows.push(row);
        };
        let (columns, intercept) = match standardize {
            Some(true) => per_deviation(model, &slots, coefficients, *intercept)?,
            _ => per_unit(&slots, coefficients, *intercept),
        };
        for (input, value) in columns {
            match value {
                ColumnValue::Number(weight) => row(&input, Some(weight), no_categories.clone()),
                ColumnValue::Categories(weights) => row(&input, None, category_list(&weights, "weight")?),
            }
        }
        row(INTERCEPT, Some(intercept), no_categories.clone());
    }
    let mut fields = Vec::new();
    if sets.classes.is_some() {
        fields.push(Field::new("class_label", DataType::Utf8, false));
    }
    fields.extend([
        Field::new("processed_input", DataType::Utf8, false),
        Field::new("weight", DataType::Float64, true),
        Field::new("category_weights", categories_type, true),
    ]);
    literal_rows(Schema::new(fields), rows)
}

/// The weights per unit of each number column, and the intercept they move: a number standardized as
/// (x − mean) / std weighing w weighs w / std on x, and moves the intercept by −w · mean / std.
fn per_unit(slots: &[Slot], coefficients: &[f64], intercept: f64) -> (Vec<(String, ColumnValue)>, f64) {
    let columns = by_column(
        slots,
        coefficients,
        |w, _mean, std| if std > 0.0 { w / std } else { 0.0 },
    );
    let moved: f64 = columns
        .iter()
        .map(|(input, value)| match value {
            ColumnValue::Number(weight) => -weight * mean_of(slots, input),
            ColumnValue::Categories(_) => 0.0,
        })
        .sum();
    (columns, intercept + moved)
}

/// BigQuery's standardized weights: each number weighs per standard deviation of its training values (its
/// slot's coefficient times the slot's deviation over the training rows), so their magnitudes compare; the
/// intercept is the prediction at every number's mean; category weights stay as they are.
fn per_deviation(
    model: &CatalogModel,
    slots: &[Slot],
    coefficients: &[f64],
    intercept: f64,
) -> Result<(Vec<(String, ColumnValue)>, f64)> {
    let (Some(means), Some(deviations)) = (&model.entry.feature_means, &model.entry.feature_deviations) else {
        return Err(HearthError::invalid_param(
            "ML.WEIGHTS",
            "standardize",
            format!(
                "model {} keeps no deviations of its training rows (it was registered from Rust or saved by an \
                 older hearth); train it again with CREATE MODEL to standardize its weights",
                model.entry.name
            ),
        ));
    };
    let mut at_means = intercept;
    let mut scaled = Vec::with_capacity(coefficients.len());
    for (i, (slot, coefficient)) in slots.iter().zip(coefficients).enumerate() {
        scaled.push(match slot {
            Slot::Number { .. } => {
                at_means += coefficient * means.get(i).copied().unwrap_or(0.0);
                coefficient * deviations.get(i).copied().unwrap_or(0.0)
            }
            Slot::Category { .. } => *coefficient,
        });
    }
    Ok((by_column(slots, &scaled, |w, _, _| w), at_means))
}

/// The mean a number column was standardized by (0 when it was not).
fn mean_of(slots: &[Slot], input: &str) -> f64 {
    slots
        .iter()
        .find_map(|slot| match slot {
            Slot::Number { feature, mean, .. } if feature == input => Some(*mean),
            _ => None,
        })
        .unwrap_or(0.0)
}

/// The coefficient sets of the linear model ending `model`; an error naming the model for any other.
fn coefficient_sets(model: &CatalogModel) -> Result<CoefficientSets> {
    match trained(model)? {
        Trained::Linear(linear) => Ok(CoefficientSets {
            classes: None,
            sets: vec![linear.coefficients().to_vec()],
            intercepts: vec![linear.intercept()],
        }),
        Trained::Logistic(logistic) => {
            let classes = logistic.is_multinomial().then(|| class_names(model, logistic));
            Ok(CoefficientSets {
                classes,
                sets: logistic.coefficient_matrix().iter().map(|set| set.to_vec()).collect(),
                intercepts: logistic.intercept_vector().to_vec(),
            })
        }
        Trained::Classifier(_) | Trained::Regressor(_) => Err(HearthError::invalid_param(
            format!("ML.WEIGHTS(MODEL {})", model.entry.name),
            "MODEL",
            format!(
                "{} is a network trained by mini-batches, which has no weight per input; ML.WEIGHTS takes a \
                 'linear_reg' or 'logistic_reg' model solved exactly (ML.GLOBAL_EXPLAIN ranks a network's inputs)",
                model.entry.name
            ),
        )),
    }
}
