//! `ExecutePlan`: a relation's rows streamed back as Arrow batches, or a command run, each answer in Spark
//! Connect's envelope and the stream always closed by `result_complete` (so a client never needs to reattach).

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::DataFrame;
use futures::channel::mpsc;
use futures::stream::BoxStream;
use futures::{SinkExt, StreamExt, TryStreamExt};
use spark_connect_proto::command::CommandType;
use spark_connect_proto::execute_plan_response::{ArrowBatch, ResponseType, ResultComplete, SqlCommandResult};
use spark_connect_proto::plan::OpType;
use spark_connect_proto::relation::RelType;
use spark_connect_proto::{ExecutePlanResponse, LocalRelation, Relation, ShowString, Sql, SqlCommand};
use tonic::Status;

use crate::errors::{ConnectError, Result};
use crate::plan::Planner;
use crate::results::{ipc_chunks, to_wire, wire_schema};
use crate::sessions::ClientSession;
use crate::show::{ShowOptions, show_string};
use crate::types::spark_schema;

/// Where an operation's answers go: the client's response stream, each in the operation's envelope.
pub(crate) struct Responses {
    session: Arc<ClientSession>,
    operation_id: String,
    sender: mpsc::Sender<Result<ExecutePlanResponse, Status>>,
}

impl Responses {
    pub(crate) fn new(
        session: Arc<ClientSession>,
        operation_id: String,
        sender: mpsc::Sender<Result<ExecutePlanResponse, Status>>,
    ) -> Self {
        Self {
            session,
            operation_id,
            sender,
        }
    }

    /// Sends one answer; an error when the client has gone, which ends the operation.
    async fn send(&mut self, response_type: ResponseType, schema: Option<spark_connect_proto::DataType>) -> Result<()> {
        let response = ExecutePlanResponse {
            session_id: self.session.client_id.clone(),
            server_side_session_id: self.session.server_id.clone(),
            operation_id: self.operation_id.clone(),
            response_id: uuid::Uuid::new_v4().to_string(),
            schema,
            response_type: Some(response_type),
            ..Default::default()
        };
        self.sender
            .send(Ok(response))
            .await
            .map_err(|_| ConnectError::Cancelled)
    }

    /// Ends the stream with `error`, as the client's exception.
    pub(crate) async fn fail(mut self, error: ConnectError) {
        let _ = self.sender.send(Err(error.into_status())).await;
    }

    /// Ends the stream: `result_complete`.
    pub(crate) async fn complete(mut self) -> Result<()> {
        self.send(ResponseType::ResultComplete(ResultComplete {}), None).await
    }
}

/// Runs `plan` for `session`, answering into `responses`.
pub(crate) async fn execute(session: &ClientSession, plan: OpType, responses: &mut Responses) -> Result<()> {
    match plan {
        OpType::Root(relation) => match relation.rel_type {
            Some(RelType::ShowString(show)) => show_rows(session, *show, responses).await,
            _ => stream_rows(session, &relation, responses).await,
        },
        OpType::Command(command) => {
            let kind = command.command_type.ok_or_else(|| missing("a command's kind"))?;
            run_command(session, kind, responses).await
        }
        OpType::CompressedOperation(_) => Err(ConnectError::Unsupported(
            "compressed plans (spark.connect.session.planCompression.threshold is -1 on this server)".into(),
        )),
    }
}

/// A relation's rows: the schema, then Arrow batches (at least one, so an empty result has its columns).
async fn stream_rows(session: &ClientSession, relation: &Relation, responses: &mut Responses) -> Result<()> {
    let planner = Planner::new(&session.hearth, &session.models);
    let df = planner.plan(relation).await?;
    let schema = wire_schema(df.schema().as_arrow());
    let mut spark = Some(spark_schema(df.schema().as_arrow())?);
    let mut start_offset = 0i64;
    let mut stream = in_partition_order(df).await?;
    let mut sent_any = false;
    while let Some(batch) = stream.next().await {
        let batch = to_wire(&batch?, &schema)?;
        if batch.num_rows() == 0 && sent_any {
            continue;
        }
        for (row_count, data) in ipc_chunks(&batch)? {
            let arrow = ArrowBatch {
                row_count,
                data,
                start_offset: Some(start_offset),
                ..Default::default()
            };
            responses.send(ResponseType::ArrowBatch(arrow), spark.take()).await?;
            start_offset += row_count;
            sent_any = true;
        }
    }
    if !sent_any {
        let empty = RecordBatch::new_empty(schema);
        for (row_count, data) in ipc_chunks(&empty)? {
            let arrow = ArrowBatch {
                row_count,
                data,
                start_offset: Some(0),
                ..Default::default()
            };
            responses.send(ResponseType::ArrowBatch(arrow), spark.take()).await?;
        }
    }
    Ok(())
}

/// The rows of `df` in Spark's order — partition 0's, then partition 1's, … — as `collect()` and `show()` give
/// them on Spark: each partition is run when the one before it is done.
async fn in_partition_order(df: DataFrame) -> Result<BoxStream<'static, datafusion::error::Result<RecordBatch>>> {
    let task = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await?;
    let partitions = plan.properties().output_partitioning().partition_count();
    let streams = futures::stream::iter(0..partitions).map(move |i| plan.execute(i, Arc::clone(&task)));
    Ok(streams.try_flatten().boxed())
}

/// `df.show()`: one row, one string column `show_string`, holding Spark's table.
async fn show_rows(session: &ClientSession, show: ShowString, responses: &mut Responses) -> Result<()> {
    let input = show.input.ok_or_else(|| missing("show's input"))?;
    let rows = usize::try_from(show.num_rows).unwrap_or(0);
    let truncate = usize::try_from(show.truncate).unwrap_or(0);
    let df = Planner::new(&session.hearth, &session.models).plan(&input).await?;
    let names: Vec<String> = df.schema().fields().iter().map(|f| f.name().clone()).collect();
    let mut stream = in_partition_order(df).await?;
    let mut batches = Vec::new();
    let mut taken = 0;
    while taken <= rows
        && let Some(batch) = stream.next().await
    {
        let batch = batch?;
        taken += batch.num_rows();
        batches.push(batch);
    }
    let text = show_string(
        &batches,
        &names,
        ShowOptions {
            rows,
            truncate,
            vertical: show.vertical,
        },
    )?;
    let schema = Arc::new(Schema::new(vec![Field::new("show_string", DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(vec![text]))])?;
    for (row_count, data) in ipc_chunks(&batch)? {
        let arrow = ArrowBatch {
            row_count,
            data,
            start_offset: Some(0),
            ..Default::default()
        };
        responses
            .send(ResponseType::ArrowBatch(arrow), Some(spark_schema(&schema)?))
            .await?;
    }
    Ok(())
}

async fn run_command(session: &ClientSession, kind: CommandType, responses: &mut Responses) -> Result<()> {
    match kind {
        CommandType::SqlCommand(sql) => {
            let relation = sql_command(session, sql).await?;
            let result = SqlCommandResult {
                relation: Some(relation),
            };
            responses.send(ResponseType::SqlCommandResult(result), None).await
        }
        CommandType::CreateDataframeView(view) => {
            let input = view.input.ok_or_else(|| missing("a view's relation"))?;
            let df = Planner::new(&session.hearth, &session.models).plan(&input).await?;
            let ctx = session.hearth.context();
            if !view.replace && ctx.table_exist(view.name.as_str())? {
                return Err(ConnectError::Analysis {
                    error_class: "TEMP_TABLE_OR_VIEW_ALREADY_EXISTS",
                    message: format!(
                        "Cannot create the temporary view `{}` because it already exists.",
                        view.name
                    ),
                });
            }
            ctx.register_table(view.name.as_str(), df.into_view())?;
            Ok(())
        }
        CommandType::WriteOperation(operation) => crate::write::write(session, operation).await,
        CommandType::MlCommand(command) => {
            let result = crate::ml::run(session, command).await?;
            responses.send(ResponseType::MlCommandResult(result), None).await
        }
        other => Err(ConnectError::Unsupported(format!(
            "the command {}",
            command_name(&other)
        ))),
    }
}

/// `spark.sql(…)`: a query comes back as the relation the client then reads; a statement (CREATE VIEW,
/// INSERT, …) runs now and its output comes back as a local relation.
#[allow(deprecated)] // sql, pos_args: older clients still send them
async fn sql_command(session: &ClientSession, command: SqlCommand) -> Result<Relation> {
    let query = match command.input.and_then(|input| input.rel_type) {
        Some(RelType::Sql(sql)) => sql,
        Some(_) => {
            return Err(ConnectError::Unsupported(
                "a SQL command whose input is not SQL text".into(),
            ));
        }
        None => Sql {
            query: command.sql,
            args: command.args,
            pos_args: command.pos_args,
            ..Default::default()
        },
    };
    if !query.args.is_empty() || !query.pos_args.is_empty() {
        return Err(ConnectError::Unsupported(
            "spark.sql with args (parameter markers)".into(),
        ));
    }
    let df = session.hearth.context().sql(&query.query).await?;
    let statement = matches!(
        df.logical_plan(),
        LogicalPlan::Dml(_) | LogicalPlan::Copy(_) | LogicalPlan::EmptyRelation(_)
    ) && !matches!(df.logical_plan(), LogicalPlan::EmptyRelation(empty) if empty.produce_one_row);
    if !statement {
        return Ok(Relation {
            rel_type: Some(RelType::Sql(query)),
            ..Default::default()
        });
    }
    let schema = wire_schema(df.schema().as_arrow());
    let batches = df.collect().await?;
    let mut data = Vec::new();
    let mut writer = datafusion::arrow::ipc::writer::StreamWriter::try_new(&mut data, &schema)?;
    for batch in &batches {
        writer.write(&to_wire(batch, &schema)?)?;
    }
    writer.finish()?;
    drop(writer);
    let local = LocalRelation {
        data: Some(data.into()),
        schema: None,
    };
    Ok(Relation {
        rel_type: Some(RelType::LocalRelation(local)),
        ..Default::default()
    })
}

fn missing(what: &str) -> ConnectError {
    ConnectError::InvalidPlan(format!("{what} is missing"))
}

/// The name of a command kind hearth does not run, for its error.
fn command_name(kind: &CommandType) -> &'static str {
    match kind {
        CommandType::RegisterFunction(_) => "register_function (Python UDFs)",
        CommandType::WriteOperationV2(_) => "writeTo",
        CommandType::WriteStreamOperationStart(_) | CommandType::StreamingQueryCommand(_) => "streaming",
        CommandType::RegisterTableFunction(_) => "register_table_function (Python UDTFs)",
        CommandType::RegisterDataSource(_) => "register_data_source (Python data sources)",
        CommandType::CheckpointCommand(_) => "checkpoint",
        CommandType::MergeIntoTableCommand(_) => "mergeInto",
        _ => "of this kind",
    }
}
