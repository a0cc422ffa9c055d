//! `AnalyzePlan`: what a client asks about a plan without running it — its schema (`df.columns`,
//! `printSchema`), `explain`, the Spark version, a DDL string's type — and the caching calls, which hearth
//! answers as a no-op (its plans are recomputed from their sources).

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::prelude::DataFrame;
use spark_connect_proto::analyze_plan_request::Analyze;
use spark_connect_proto::analyze_plan_response::{self as answer, Result as Answer};
use spark_connect_proto::plan::OpType;
use spark_connect_proto::{Plan, StorageLevel};

use crate::errors::{ConnectError, Result};
use crate::plan::Planner;
use crate::sessions::ClientSession;
use crate::types::{spark_schema, spark_type_name};

/// The Spark version hearth's server reports: the protocol of the newest client it answers.
pub const SPARK_VERSION: &str = "4.2.0";

/// The answer to one `AnalyzePlan` request.
pub(crate) async fn analyze(session: &ClientSession, request: Analyze) -> Result<Answer> {
    Ok(match request {
        Analyze::Schema(schema) => {
            let df = plan(session, schema.plan).await?;
            Answer::Schema(answer::Schema {
                schema: Some(spark_schema(df.schema().as_arrow())?),
            })
        }
        Analyze::TreeString(tree) => {
            let df = plan(session, tree.plan).await?;
            let level = tree.level.and_then(|l| usize::try_from(l).ok()).unwrap_or(usize::MAX);
            Answer::TreeString(answer::TreeString {
                tree_string: tree_string(df.schema().as_arrow(), level),
            })
        }
        Analyze::Explain(explain) => {
            let df = plan(session, explain.plan).await?;
            let plan = df.into_optimized_plan()?;
            Answer::Explain(answer::Explain {
                explain_string: format!("== Optimized Logical Plan ==\n{}\n", plan.display_indent()),
            })
        }
        Analyze::IsLocal(_) => Answer::IsLocal(answer::IsLocal { is_local: false }),
        Analyze::IsStreaming(_) => Answer::IsStreaming(answer::IsStreaming { is_streaming: false }),
        Analyze::InputFiles(_) => Answer::InputFiles(answer::InputFiles { files: Vec::new() }),
        Analyze::SparkVersion(_) => Answer::SparkVersion(answer::SparkVersion {
            version: SPARK_VERSION.into(),
        }),
        Analyze::DdlParse(ddl) => {
            let schema = crate::plan::schema_from_text(&ddl.ddl_string)?;
            Answer::DdlParse(answer::DdlParse {
                parsed: Some(spark_schema(&schema)?),
            })
        }
        Analyze::SameSemantics(same) => {
            let target = plan(session, same.target_plan).await?.into_optimized_plan()?;
            let other = plan(session, same.other_plan).await?.into_optimized_plan()?;
            Answer::SameSemantics(answer::SameSemantics {
                result: target == other,
            })
        }
        Analyze::SemanticHash(hash) => {
            let optimized = plan(session, hash.plan).await?.into_optimized_plan()?;
            let text = optimized.display_indent().to_string();
            let result = text
                .bytes()
                .fold(17i32, |h, b| h.wrapping_mul(31).wrapping_add(i32::from(b)));
            Answer::SemanticHash(answer::SemanticHash { result })
        }
        Analyze::Persist(_) => Answer::Persist(answer::Persist {}),
        Analyze::Unpersist(_) => Answer::Unpersist(answer::Unpersist {}),
        Analyze::GetStorageLevel(_) => Answer::GetStorageLevel(answer::GetStorageLevel {
            storage_level: Some(StorageLevel {
                replication: 1,
                ..Default::default()
            }),
        }),
        Analyze::JsonToDdl(json) => {
            let schema = crate::plan::schema_from_text(&json.json_string)?;
            let columns: Vec<String> = schema
                .fields()
                .iter()
                .map(|f| format!("{} {}", f.name(), spark_type_name(f.data_type()).to_uppercase()))
                .collect();
            Answer::JsonToDdl(answer::JsonToDdl {
                ddl_string: columns.join(","),
            })
        }
    })
}

/// The data frame of a plan that must be a relation.
async fn plan(session: &ClientSession, plan: Option<Plan>) -> Result<DataFrame> {
    match plan.and_then(|p| p.op_type) {
        Some(OpType::Root(relation)) => Planner::new(&session.hearth, &session.models).plan(&relation).await,
        _ => Err(ConnectError::InvalidPlan(
            "AnalyzePlan needs a plan whose root is a relation".into(),
        )),
    }
}

/// `printSchema`'s text: `root`, then ` |-- name: type (nullable = true)` per field, nested to `level`.
fn tree_string(schema: &Schema, level: usize) -> String {
    let mut text = "root\n".to_owned();
    for field in schema.fields() {
        field_lines(
            &mut text,
            field.name(),
            field.data_type(),
            field.is_nullable(),
            1,
            level,
        );
    }
    text
}

fn field_lines(text: &mut String, name: &str, data_type: &DataType, nullable: bool, depth: usize, level: usize) {
    if depth > level {
        return;
    }
    let prefix = " |   ".repeat(depth - 1);
    let type_name = match data_type {
        DataType::Struct(_) => "struct".to_owned(),
        DataType::List(_) => "array".to_owned(),
        other => spark_type_name(other),
    };
    text.push_str(&format!("{prefix} |-- {name}: {type_name} (nullable = {nullable})\n"));
    match data_type {
        DataType::Struct(fields) => {
            for field in fields {
                field_lines(
                    text,
                    field.name(),
                    field.data_type(),
                    field.is_nullable(),
                    depth + 1,
                    level,
                );
            }
        }
        DataType::List(element) => {
            let prefix = " |   ".repeat(depth);
            let element_name = match element.data_type() {
                DataType::Struct(_) => "struct".to_owned(),
                other => spark_type_name(other),
            };
            text.push_str(&format!(
                "{prefix} |-- element: {element_name} (containsNull = {})\n",
                element.is_nullable()
            ));
        }
        _ => {}
    }
}
