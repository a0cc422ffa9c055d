//! The guide's page of stage classes, written from the stage registry: each class a saved pipeline (or a Spark
//! Connect client) can name, whether it is an estimator or a transformer, and its params with their defaults —
//! the stage a class name alone rebuilds.

use std::fmt::Write;
use std::path::Path;

use serde_json::Value;

use super::classes::{rebuild_stage, stage_classes};
use super::stage::PipelineStage;

/// The stage classes of this program as a Markdown page: a section per class, in name order.
///
/// ```
/// let page = hearth_preprocessing::pipeline::stage_classes_reference();
/// assert!(page.contains("## `StringIndexer`"));
/// assert!(page.contains("| `handleInvalid` | `\"error\"` |"));
/// ```
pub fn stage_classes_reference() -> String {
    let mut page = String::from(
        "# Stage classes\n\n\
         <!-- Written from the stage registry by `hearth_preprocessing::pipeline::stage_classes_reference`; a test fails \
         when this page differs from it: `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` rewrites it. -->\n\n\
         The classes a saved pipeline's `pipeline.json` can name, which are also the stages a Spark Connect client \
         makes by Spark's class name. An estimator or a transformer is listed with its params as `pipeline.json` \
         spells them (Spark's names) and the defaults a stage made from its class name alone has; a fitted \
         model is made by fitting its estimator and loaded with the data saved beside it.\n",
    );
    for class in stage_classes() {
        let _ = write!(page, "\n## `{class}`\n\n");
        match rebuild_stage(&class, Value::Object(Default::default()), Path::new("")) {
            Ok(stage) => write_params(&mut page, &stage),
            Err(_) => {
                let _ = writeln!(page, "A fitted model: {}.", fitted_by(&class));
            }
        }
    }
    page
}

/// The params of a stage made from its class name alone, as a table.
fn write_params(page: &mut String, stage: &PipelineStage) {
    let kind = if stage.is_estimator() {
        "An estimator"
    } else {
        "A transformer"
    };
    let params = match stage.as_stage().params() {
        Ok(Value::Object(params)) => params,
        _ => Default::default(),
    };
    // A default made from the stage's uid (Spark's `outputCol`: `<uid>__output`) is shown as such.
    let uid = params
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let shown: Vec<(&String, &Value)> = params.iter().filter(|(name, _)| *name != "uid").collect();
    if shown.is_empty() {
        let _ = writeln!(page, "{kind} with no params.");
        return;
    }
    let _ = writeln!(page, "{kind}.\n\n| param | default |\n|---|---|");
    for (name, value) in shown {
        let value = value.to_string();
        let value = if uid.is_empty() {
            value
        } else {
            value.replace(&uid, "<uid>")
        };
        let _ = writeln!(page, "| `{name}` | `{}` |", value.replace('|', "\\|"));
    }
}

/// How a model class is made: by fitting the estimator its name ends after, when there is one.
fn fitted_by(class: &str) -> String {
    match class.strip_suffix("Model") {
        Some(estimator) if stage_classes().iter().any(|known| known == estimator) => {
            format!(
                "made by fitting [`{estimator}`](#{}), loaded with its saved data",
                estimator.to_lowercase()
            )
        }
        _ => "loaded with its saved data".to_string(),
    }
}
