//! `pyspark.ml` over Spark Connect: `MlCommand`s — fit, attribute fetches, delete and the cache, evaluate,
//! write and read (`persist`) —
//! on the session's hearth session and model cache. Transforms are relations (`plan`).

mod evaluators;

use hearth_exec::master::Master;
use hearth_preprocessing::pipeline::PipelineStage;
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::{Array, LiteralType};
use spark_connect_proto::fetch::Method;
use spark_connect_proto::fetch::method::args::ArgsType;
use spark_connect_proto::ml_command::{self, Command, write};
use spark_connect_proto::ml_command_result::{MlOperatorInfo, ResultType, ml_operator_info};
use spark_connect_proto::{Fetch, MlCommand, MlCommandResult, ObjectRef, Relation};

use crate::errors::{ConnectError, Result};
use crate::models::literals::boolean;
use crate::models::predict::predict;
use crate::models::summaries::{self, SummaryValue};
use crate::models::{ModelCache, attribute, estimator_stage, literal_json};
use crate::persist::{self, Location};
use crate::plan::Planner;
use crate::sessions::ClientSession;

/// The object PySpark sends helper calls to (`handleOverwrite` before a pipeline is saved, …).
const CONNECT_HELPER: &str = "______ML_CONNECT_HELPER______";

/// The answer to one `MlCommand`.
pub(crate) async fn run(session: &ClientSession, command: MlCommand) -> Result<MlCommandResult> {
    let command = command
        .command
        .ok_or_else(|| ConnectError::InvalidPlan("an MlCommand without its command".into()))?;
    let models = &session.models;
    let result = match command {
        Command::Fit(fit) => {
            let estimator = fit.estimator.ok_or_else(|| missing("fit's estimator"))?;
            let df = dataset(session, fit.dataset).await?;
            // Every partition of an embedded master. On Ballista one rank: its slots are not reserved for a
            // whole stage, so two fits of every slot at once (two clients, a CrossValidator's parallelism)
            // would each wait for ranks the other holds.
            let ranks = match session.hearth.master() {
                Master::Local { partitions } => *partitions,
                _ => 1,
            };
            let PipelineStage::Estimator(stage) = estimator_stage(&estimator, fit.params.as_ref(), ranks)? else {
                return Err(ConnectError::IllegalArgument(format!(
                    "{} is a transformer: it has no fit",
                    estimator.name
                )));
            };
            let model = stage.fit_stage(&df).await?;
            let uid = model.uid().to_owned();
            let id = models.insert(model, Some(df));
            operator(id, Some(uid))
        }
        Command::Fetch(fetch) => self::fetch(session, fetch).await?,
        Command::Delete(delete) => {
            let ids: Vec<String> = delete.obj_refs.into_iter().map(|r| r.id).collect();
            // Spark moves an evicted model to its disk and reads it back when it is next used; hearth keeps it
            // in memory, so it stays usable as Spark's does.
            if delete.evict_only == Some(true) {
                let kept: Vec<String> = ids.into_iter().filter(|id| models.get(id).is_ok()).collect();
                operator(kept.join(","), None)
            } else {
                operator(models.remove(&ids).join(","), None)
            }
        }
        Command::CleanCache(_) => ResultType::Param(Literal {
            literal_type: Some(LiteralType::Integer(i32::try_from(models.clear()).unwrap_or(i32::MAX))),
            ..Default::default()
        }),
        Command::GetCacheInfo(_) => ResultType::Param(cache_info(models)),
        Command::Evaluate(evaluate) => {
            let evaluator = evaluate.evaluator.ok_or_else(|| missing("evaluate's evaluator"))?;
            let df = dataset(session, evaluate.dataset).await?;
            let metric = evaluators::evaluate(&evaluator, evaluate.params.as_ref(), &df).await?;
            ResultType::Param(Literal {
                literal_type: Some(LiteralType::Double(metric)),
                ..Default::default()
            })
        }
        Command::Write(write) => {
            save(session, write).await?;
            // Spark answers a save with an empty result.
            return Ok(MlCommandResult { result_type: None });
        }
        Command::Read(read) => load(session, read).await?,
        Command::CreateSummary(create) => {
            let id = create
                .model_ref
                .map(|r| r.id)
                .ok_or_else(|| missing("the summary's model"))?;
            let training = dataset(session, create.dataset).await?;
            models.set_training(&id, training)?;
            ResultType::Param(boolean(true))
        }
        Command::GetModelSize(_) => {
            return Err(ConnectError::Unsupported("model sizes over Spark Connect".into()));
        }
    };
    Ok(MlCommandResult {
        result_type: Some(result),
    })
}

/// `write().save(path)` of a fitted model (by its id) or of an estimator or transformer (by its params).
async fn save(session: &ClientSession, write: ml_command::Write) -> Result<()> {
    let overwrite = write.should_overwrite.unwrap_or(false);
    if let Some(option) = write.options.keys().next() {
        return Err(ConnectError::Unsupported(format!("the save option {option:?}")));
    }
    let path = location(session, &write.path)?;
    match write.r#type.ok_or_else(|| missing("write's object"))? {
        write::Type::ObjRef(object) => {
            let model = session.models.get(&object.id)?;
            persist::save_model(model.as_ref(), write.params.as_ref(), &path, overwrite).await
        }
        write::Type::Operator(operator) => {
            persist::save_operator(&operator, write.params.as_ref(), &path, overwrite).await
        }
    }
}

/// The folder a client's `path` names, a store's opened with the session's settings.
fn location(session: &ClientSession, path: &str) -> Result<Location> {
    Location::of(path, session.hearth.context().runtime_env().as_ref())
}

/// `Class.load(path)`: a model goes into the session's cache, the client gets its id; an estimator's or
/// transformer's params come back for the client to set.
async fn load(session: &ClientSession, read: ml_command::Read) -> Result<ResultType> {
    let operator = read.operator.ok_or_else(|| missing("read's class"))?;
    let loaded = persist::load(&operator, &location(session, &read.path)?).await?;
    let kind = match loaded.model {
        Some(model) => ml_operator_info::Type::ObjRef(ObjectRef {
            id: session.models.insert(model, None),
        }),
        None => ml_operator_info::Type::Name(operator.name),
    };
    Ok(ResultType::OperatorInfo(MlOperatorInfo {
        uid: Some(loaded.uid),
        params: Some(loaded.params),
        warning_message: None,
        r#type: Some(kind),
    }))
}

async fn dataset(session: &ClientSession, relation: Option<Relation>) -> Result<datafusion::prelude::DataFrame> {
    let relation = relation.ok_or_else(|| missing("the dataset"))?;
    Planner::new(&session.hearth, &session.models).plan(&relation).await
}

fn operator(id: String, uid: Option<String>) -> ResultType {
    ResultType::OperatorInfo(MlOperatorInfo {
        uid,
        params: None,
        warning_message: None,
        r#type: Some(ml_operator_info::Type::ObjRef(ObjectRef { id })),
    })
}

#[allow(deprecated)] // element_type: clients before 4.1 read it
fn cache_info(models: &ModelCache) -> Literal {
    let elements = (models.describe().into_iter())
        .map(|line| Literal {
            literal_type: Some(LiteralType::String(line)),
            ..Default::default()
        })
        .collect();
    Literal {
        literal_type: Some(LiteralType::Array(Array {
            element_type: None,
            elements,
        })),
        ..Default::default()
    }
}

/// A fetch: an attribute of a model (`model.coefficients`), of its training summary (`model.summary.accuracy`),
/// or a call on PySpark's helper object.
async fn fetch(session: &ClientSession, fetch: Fetch) -> Result<ResultType> {
    let models = &session.models;
    let id = fetch.obj_ref.map(|r| r.id).ok_or_else(|| missing("fetch's object"))?;
    if id == CONNECT_HELPER {
        let [method] = fetch.methods.as_slice() else {
            return Err(ConnectError::Unsupported(
                "chained calls on pyspark.ml's helper object".into(),
            ));
        };
        return helper(session, method).await.map(ResultType::Param);
    }
    if let [method] = fetch.methods.as_slice()
        && method.method == "evaluate"
    {
        let Some(ArgsType::Input(relation)) = method.args.first().and_then(|a| a.args_type.as_ref()) else {
            return Err(ConnectError::IllegalArgument("evaluate takes a data frame".into()));
        };
        let data = Planner::new(&session.hearth, models).plan(relation).await?;
        let id = models.insert_evaluation(models.get(&id)?, data);
        return Ok(operator(id, None));
    }
    if let [method] = fetch.methods.as_slice()
        && method.method == "hasSummary"
    {
        let (model, training) = models.with_training(&id)?;
        let has = summaries::has_summary(model.as_ref(), training.as_ref());
        return Ok(ResultType::Param(boolean(has)));
    }
    let summary = |methods: &[Method]| -> Option<Method> {
        match methods {
            [method] if models.is_evaluation(&id).unwrap_or(false) => Some(method.clone()),
            [summary, method] if summary.method == "summary" => Some(method.clone()),
            _ => None,
        }
    };
    if let Some(method) = summary(&fetch.methods) {
        let (model, training) = models.with_training(&id)?;
        let training = training.ok_or_else(|| summaries::summary_lost(&id))?;
        let args = arguments(&method)?;
        return match summaries::attribute(&session.hearth, model.as_ref(), &training, &method.method, &args).await? {
            SummaryValue::Value(value) => Ok(ResultType::Param(value)),
            SummaryValue::Frame(_) => Err(ConnectError::InvalidPlan(format!(
                "the summary's {} is a data frame: read it as a relation",
                method.method
            ))),
        };
    }
    Ok(match fetch.methods.as_slice() {
        [method] if method.args.is_empty() => ResultType::Param(attribute(models.get(&id)?.as_ref(), &method.method)?),
        [method] => {
            let args = arguments(method)?;
            ResultType::Param(predict(&session.hearth, models.get(&id)?.as_ref(), &method.method, &args).await?)
        }
        methods => {
            return Err(ConnectError::Unsupported(format!(
                "the attribute {} over Spark Connect",
                methods.iter().map(|m| m.method.as_str()).collect::<Vec<_>>().join(".")
            )));
        }
    })
}

/// A method's literal arguments as JSON.
fn arguments(method: &Method) -> Result<Vec<serde_json::Value>> {
    (method.args.iter())
        .map(|arg| match &arg.args_type {
            Some(ArgsType::Param(literal)) => literal_json(literal),
            _ => Err(ConnectError::Unsupported(format!(
                "a data frame argument to {}",
                method.method
            ))),
        })
        .collect()
}

/// A call on PySpark's helper object: `handleOverwrite(path, overwrite)` before a pipeline saves its stages.
async fn helper(session: &ClientSession, method: &Method) -> Result<Literal> {
    let args: Vec<&Literal> = (method.args.iter())
        .filter_map(|arg| match &arg.args_type {
            Some(ArgsType::Param(literal)) => Some(literal),
            _ => None,
        })
        .collect();
    match (method.method.as_str(), args.as_slice()) {
        ("handleOverwrite", [path, overwrite]) => {
            let (Some(LiteralType::String(path)), Some(LiteralType::Boolean(overwrite))) =
                (&path.literal_type, &overwrite.literal_type)
            else {
                return Err(ConnectError::IllegalArgument(
                    "handleOverwrite takes a path and whether to overwrite it".into(),
                ));
            };
            persist::handle_overwrite(&location(session, path)?, *overwrite).await?;
            Ok(boolean(true))
        }
        (other, _) => Err(ConnectError::Unsupported(format!(
            "{other} on pyspark.ml's helper object"
        ))),
    }
}

fn missing(what: &str) -> ConnectError {
    ConnectError::InvalidPlan(format!("{what} is missing"))
}
