//! BigQuery ML's evaluation tables of a classifier, each one aggregate query over the scored rows (the
//! evaluators' own states), then the state's rows unnested — the numbers the notebook plots draw:
//!
//! | function | rows |
//! |---|---|
//! | `ML.CONFUSION_MATRIX(MODEL m [, rows] [, STRUCT(t AS threshold)])` | one per actual label: `expected_label`, then one column per label with the rows predicted as it |
//! | `ML.ROC_CURVE(MODEL m [, rows] [, GENERATE_ARRAY(…) or [t, …]])` | one per threshold: `threshold, recall, false_positive_rate, true_positives, false_positives, true_negatives, false_negatives` |
//!
//! Without rows, both read the rows the model held out in training. As in BigQuery, the rows come in no
//! particular order: `ORDER BY expected_label`, `ORDER BY threshold`. A binary classifier's positive class
//! is its second label (`labels[1]`, as Spark's `probability[1]`); a row is predicted positive when its
//! probability is at least the threshold (the confusion matrix's default: the most probable class).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::functions::core::expr_fn::get_field;
use datafusion::functions::expr_fn::nullif;
use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::functions_nested::expr_fn::array_element;
use datafusion::logical_expr::{Expr, LogicalPlan, cast, ident, lit, when};
use datafusion::prelude::DataFrame;
use datafusion::sql::sqlparser::ast::Expr as SqlExpr;
use hearth_exec::error::{HearthError, Result};
use hearth_preprocessing::evaluation::{Evaluation, StateTable, evaluation_state, state_rows};
use hearth_preprocessing::stage::ClassifierColumns;
use hearth_preprocessing::stage::Transformer;

use super::catalog::CatalogModel;
use super::literals;
use super::settings::one_setting;
use super::table_functions::{check_columns, class_names, trained};

/// The score columns of the classifier ending `model`, scored over `input`; an error for a regressor.
fn classifier<'a>(function: &str, model: &'a CatalogModel, input: &DataFrame) -> Result<&'a dyn ClassifierColumns> {
    check_columns(function, model, input, true)?;
    trained(model)?.classifier().ok_or_else(|| {
        HearthError::invalid_param(
            format!("ML.{function}(MODEL {})", model.entry.name),
            "MODEL",
            format!("{} is a regressor, which has no classes to compare", model.entry.name),
        )
    })
}

/// The probability of the positive class (index 1) of a classifier's rows.
fn positive_probability(scores: &dyn ClassifierColumns) -> Expr {
    cast(
        array_element(ident(scores.probability_col()), lit(2i64)),
        DataType::Float64,
    )
}

/// The `threshold` of a `STRUCT(t AS threshold)` setting, checked to lie in [0, 1].
fn threshold_setting(function: &str, settings: Option<&SqlExpr>) -> Result<Option<f64>> {
    one_setting(
        &format!("ML.{function}"),
        "threshold",
        "a number in [0, 1]",
        settings,
        |value| literals::number(value).filter(|t| (0.0..=1.0).contains(t)),
    )
}

/// `ML.CONFUSION_MATRIX`: one row per actual label, one column per predicted label (BigQuery's names:
/// characters other than letters, digits and `_` become `_`, a leading digit gets a `_`).
pub(crate) fn confusion_matrix(
    model: &CatalogModel,
    input: DataFrame,
    settings: Option<&SqlExpr>,
) -> Result<LogicalPlan> {
    let function = "CONFUSION_MATRIX";
    let classifier = classifier(function, model, &input)?;
    let threshold = threshold_setting(function, settings)?;
    let prediction = match threshold {
        None => ident(classifier.prediction_col()),
        Some(t) if classifier.num_classes() == 2 => {
            when(positive_probability(classifier).gt_eq(lit(t)), lit(1.0)).otherwise(lit(0.0))?
        }
        Some(_) => {
            return Err(HearthError::invalid_param(
                format!("ML.{function}(MODEL {})", model.entry.name),
                "threshold",
                format!(
                    "applies to a binary classifier; {} has {} classes and predicts the most probable",
                    model.entry.name,
                    classifier.num_classes()
                ),
            ));
        }
    };
    let label = cast(ident(&model.entry.label_index), DataType::Float64);
    let state = evaluation_state(Evaluation::Multiclass, vec![label, prediction, lit(1.0)]).alias("state");
    let pairs = model
        .pipeline
        .transform(&input)?
        .aggregate(vec![], vec![state])?
        .select(vec![
            state_rows(StateTable::Confusion)
                .call(vec![ident("state")])
                .alias("pair"),
        ])?
        .unnest_columns(&["pair"])?;
    let names = class_names(model, classifier);
    let field = |name: &str| get_field(ident("pair"), name);
    let counts: Vec<Expr> = (0..names.len())
        .map(|class| {
            let weight = when(field("prediction").eq(lit(class as f64)), field("weight")).otherwise(lit(0.0))?;
            Ok(sum(weight).alias(format!("class_{class}")))
        })
        .collect::<Result<_>>()?;
    let by_label = pairs.aggregate(vec![field("label").alias("label")], counts)?;
    let mut expected = when(ident("label").eq(lit(0.0)), lit(names[0].clone()));
    for (class, name) in names.iter().enumerate().skip(1) {
        expected = expected.when(ident("label").eq(lit(class as f64)), lit(name.clone()));
    }
    let mut columns = vec![expected.end()?.alias("expected_label")];
    for (class, name) in column_names(&names).into_iter().enumerate() {
        columns.push(cast(ident(format!("class_{class}")), DataType::Int64).alias(name));
    }
    Ok(by_label.select(columns)?.into_parts().1)
}

/// Column names for labels, as BigQuery writes them, made unique with `_2`, `_3`, … where two collide.
fn column_names(labels: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for label in labels {
        let mut name: String = label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
            .collect();
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            name.insert(0, '_');
        }
        let base = name.clone();
        let mut suffix = 2;
        while names.contains(&name) {
            name = format!("{base}_{suffix}");
            suffix += 1;
        }
        names.push(name);
    }
    names
}

/// `ML.ROC_CURVE`: the counts at each threshold (given, or about a hundred from the scores), with recall
/// and false-positive rate.
pub(crate) fn roc_curve(model: &CatalogModel, input: DataFrame, settings: Option<&SqlExpr>) -> Result<LogicalPlan> {
    let function = "ROC_CURVE";
    let classifier = classifier(function, model, &input)?;
    if classifier.num_classes() != 2 {
        return Err(HearthError::invalid_param(
            format!("ML.{function}(MODEL {})", model.entry.name),
            "MODEL",
            format!(
                "the ROC curve is a binary classifier's; {} has {} classes (see ML.CONFUSION_MATRIX)",
                model.entry.name,
                classifier.num_classes()
            ),
        ));
    }
    let thresholds = match settings {
        None => Vec::new(),
        Some(settings) => {
            let invalid = |message: String| HearthError::invalid_param(format!("ML.{function}"), "thresholds", message);
            let values = literals::number_array(settings).ok_or_else(|| {
                invalid(format!(
                    "expected GENERATE_ARRAY(start, end, step) or [t, …], got {settings}"
                ))
            })?;
            if let Some(bad) = values.iter().find(|t| !(0.0..=1.0).contains(*t)) {
                return Err(invalid(format!("a threshold must lie in [0, 1], got {bad}")));
            }
            values
        }
    };
    let label = cast(ident(&model.entry.label_index), DataType::Float64);
    let state = evaluation_state(
        Evaluation::Binary,
        vec![positive_probability(classifier), label, lit(1.0)],
    );
    let thresholds: Vec<ScalarValue> = thresholds.into_iter().map(ScalarValue::from).collect();
    let thresholds = lit(ScalarValue::List(ScalarValue::new_list_nullable(
        &thresholds,
        &DataType::Float64,
    )));
    let points = model
        .pipeline
        .transform(&input)?
        .aggregate(vec![], vec![state.alias("state")])?
        .select(vec![
            state_rows(StateTable::RocCurve)
                .call(vec![ident("state"), thresholds])
                .alias("point"),
        ])?
        .unnest_columns(&["point"])?;
    let field = |name: &str| get_field(ident("point"), name);
    let count = |name: &str| cast(field(name), DataType::Int64).alias(name);
    let rate = |part: &str, other: &str| field(part) / nullif(field(part) + field(other), lit(0.0));
    let table = points.select(vec![
        field("threshold").alias("threshold"),
        rate("true_positives", "false_negatives").alias("recall"),
        rate("false_positives", "true_negatives").alias("false_positive_rate"),
        count("true_positives"),
        count("false_positives"),
        count("true_negatives"),
        count("false_negatives"),
    ])?;
    Ok(table.into_parts().1)
}

#[cfg(test)]
mod tests {
    use super::column_names;

    #[test]
    fn labels_become_bigquery_column_names() {
        let labels = ["<=50K", ">50K", "0", "a b", "_50K"].map(String::from);
        assert_eq!(column_names(&labels), ["__50K", "_50K", "_0", "a_b", "_50K_2"]);
    }
}
