//! Spark Connect relations as DataFusion data frames on the client session's hearth session, so they run on
//! whatever master the server was started with. Anything else is an error naming the relation.

use std::io::Cursor;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::common::{Column, JoinType};
use datafusion::datasource::MemTable;
use datafusion::functions::expr_fn::coalesce;
use datafusion::logical_expr::{Expr, lit};
use datafusion::prelude::DataFrame;
use futures::future::BoxFuture;
use hearth_exec::frame::{DataFrameExt, ROW_UNIFORM};
use hearth_exec::session::Session;
use hearth_preprocessing::pipeline::PipelineStage;
use spark_connect_proto::relation::RelType;
use spark_connect_proto::{Fetch, MlRelation, Relation, aggregate, join, ml_relation, read, set_operation};

use crate::errors::{ConnectError, Result};
use crate::models::summaries::{self, SummaryValue, summary_lost};
use crate::models::{ModelCache, stage, with_params};
use crate::plan::expressions::{Resolver, plan_qualifier};
use crate::plan::named::Named;
use crate::plan::reshape;
use crate::plan::{describe, vectors};

/// Plans relations on one hearth session, with its client's fitted models.
pub(crate) struct Planner<'a> {
    session: &'a Session,
    models: &'a ModelCache,
}

impl<'a> Planner<'a> {
    /// A planner for relations on `session`, whose `pyspark.ml` transforms use `models`.
    pub(crate) fn new(session: &'a Session, models: &'a ModelCache) -> Self {
        Self { session, models }
    }

    /// The data frame of `relation`.
    pub(crate) fn plan(&'a self, relation: &'a Relation) -> BoxFuture<'a, Result<DataFrame>> {
        Box::pin(async move {
            let kind = relation.rel_type.as_ref().ok_or_else(|| missing("a relation's kind"))?;
            let df = self.plan_kind(kind).await?;
            // A relation's columns are qualified by its plan id, for `df["c"]` — but an alias the client gave
            // (`df.alias("t")`) stays.
            match relation.common.as_ref().and_then(|c| c.plan_id) {
                Some(id) if unique_names(&df) && !matches!(kind, RelType::SubqueryAlias(_)) => {
                    Ok(df.alias(&plan_qualifier(id))?)
                }
                _ => Ok(df),
            }
        })
    }

    async fn input(&'a self, input: &'a Option<Box<Relation>>) -> Result<DataFrame> {
        self.plan(input.as_deref().ok_or_else(|| missing("a relation's input"))?)
            .await
    }

    async fn plan_kind(&'a self, kind: &'a RelType) -> Result<DataFrame> {
        let state = self.session.context().state();
        match kind {
            RelType::Read(read) => {
                let read = read.read_type.as_ref().ok_or_else(|| missing("a read's source"))?;
                self.read(read).await
            }
            RelType::Sql(sql) => self.sql(sql).await,
            RelType::LocalRelation(local) => self.local(local.data.as_deref(), local.schema.as_deref()),
            RelType::Range(range) => self.range(range),
            RelType::Project(project) => {
                reshape::project(self.input(&project.input).await?, &project.expressions, &state)
            }
            RelType::Filter(filter) => {
                let condition = filter
                    .condition
                    .as_ref()
                    .ok_or_else(|| missing("a filter's condition"))?;
                reshape::filter(self.input(&filter.input).await?, condition, &state)
            }
            RelType::Sort(sort) => reshape::sort(self.input(&sort.input).await?, &sort.order, &state),
            RelType::Limit(limit) => Ok(self
                .input(&limit.input)
                .await?
                .limit(0, Some(count(limit.limit, "limit")?))?),
            RelType::Offset(offset) => Ok(self
                .input(&offset.input)
                .await?
                .limit(count(offset.offset, "offset")?, None)?),
            RelType::Aggregate(aggregate) => self.aggregate(aggregate).await,
            RelType::ToDf(to_df) => reshape::to_df(self.input(&to_df.input).await?, &to_df.column_names),
            RelType::WithColumns(with) => reshape::with_columns(self.input(&with.input).await?, &with.aliases, &state),
            RelType::WithColumnsRenamed(renamed) => {
                let pairs = (renamed
                    .renames
                    .iter()
                    .map(|r| (r.col_name.as_str(), r.new_col_name.as_str())))
                .chain(renamed.rename_columns_map.iter().map(|(a, b)| (a.as_str(), b.as_str())));
                reshape::renamed(self.input(&renamed.input).await?, pairs)
            }
            RelType::Drop(drop) => reshape::drop(self.input(&drop.input).await?, drop, &state),
            RelType::Deduplicate(dedup) => reshape::deduplicate(self.input(&dedup.input).await?, &dedup.column_names),
            RelType::Sample(sample) => self.sample(sample).await,
            RelType::Repartition(repartition) => {
                let df = self.input(&repartition.input).await?;
                let partitions = count(repartition.num_partitions, "numPartitions")?;
                Ok(df.repartition_rows(partitions.max(1))?)
            }
            RelType::SubqueryAlias(alias) => Ok(self.input(&alias.input).await?.alias(&alias.alias)?),
            RelType::SetOp(set) => self.set_operation(set).await,
            RelType::Join(join) => self.join(join).await,
            RelType::MlRelation(ml) => self.ml_relation(ml).await,
            RelType::Describe(described) => {
                describe::describe(self.session, self.input(&described.input).await?, &described.cols).await
            }
            other => Err(ConnectError::Unsupported(format!(
                "the relation {}",
                relation_name(other)
            ))),
        }
    }

    /// A training summary's data frame (`model.summary.roc`, `.pr`, `.predictions`, `.cluster`), on the data
    /// the client sends along or the data the model was fitted on.
    async fn summary_frame(&'a self, ml: &'a MlRelation, fetch: &'a Fetch) -> Result<DataFrame> {
        let id = fetch
            .obj_ref
            .as_ref()
            .map(|r| r.id.as_str())
            .ok_or_else(|| missing("a fetch's model"))?;
        let (model, training) = self.models.with_training(id)?;
        let training = match &ml.model_summary_dataset {
            Some(dataset) => self.plan(dataset).await?,
            None => training.ok_or_else(|| summary_lost(id))?,
        };
        let method = match fetch.methods.as_slice() {
            [method] if self.models.is_evaluation(id)? => method,
            [summary, method] if summary.method == "summary" => method,
            _ => {
                return Err(ConnectError::Unsupported(
                    "data frames of a model's attributes other than its summary's".into(),
                ));
            }
        };
        match summaries::attribute(self.session, model.as_ref(), &training, &method.method, &[]).await? {
            SummaryValue::Frame(df) => Ok(df),
            SummaryValue::Value(_) => Err(ConnectError::InvalidPlan(format!(
                "the summary's {} is a value, not a data frame",
                method.method
            ))),
        }
    }

    /// `model.transform(df)` (a fitted model by its id, or a transformer such as `VectorAssembler` by its
    /// class and params): the model's columns added to the input's.
    async fn ml_relation(&'a self, ml: &'a MlRelation) -> Result<DataFrame> {
        let transform = match &ml.ml_type {
            Some(ml_relation::MlType::Transform(transform)) => transform,
            Some(ml_relation::MlType::Fetch(fetch)) => return self.summary_frame(ml, fetch).await,
            None => return Err(missing("an ML relation's kind")),
        };
        let df = self.input(&transform.input).await?;
        match &transform.operator {
            Some(ml_relation::transform::Operator::ObjRef(object)) => {
                let model = with_params(self.models.get(&object.id)?, transform.params.as_ref())?;
                Ok(model.transform(&df)?)
            }
            Some(ml_relation::transform::Operator::Transformer(operator)) => {
                match stage(operator, transform.params.as_ref())? {
                    PipelineStage::Transformer(transformer) => Ok(transformer.transform(&df)?),
                    PipelineStage::Estimator(_) => Err(ConnectError::IllegalArgument(format!(
                        "{} is an estimator: fit it, then transform with its model",
                        operator.name
                    ))),
                }
            }
            None => Err(missing("a transform's model or transformer")),
        }
    }

    async fn read(&self, read: &read::ReadType) -> Result<DataFrame> {
        match read {
            read::ReadType::NamedTable(table) => Ok(self.session.context().table(&table.unparsed_identifier).await?),
            read::ReadType::DataSource(source) => super::sources::read(self.session, source).await,
        }
    }

    #[allow(deprecated)] // pos_args: older clients still send it
    async fn sql(&self, sql: &spark_connect_proto::Sql) -> Result<DataFrame> {
        if !sql.args.is_empty()
            || !sql.pos_args.is_empty()
            || !sql.named_arguments.is_empty()
            || !sql.pos_arguments.is_empty()
        {
            return Err(ConnectError::Unsupported(
                "spark.sql with args (parameter markers)".into(),
            ));
        }
        Ok(self.session.context().sql(&sql.query).await?)
    }

    /// `createDataFrame`: the client's Arrow IPC stream, held in memory on the session's partitions.
    fn local(&self, data: Option<&[u8]>, schema: Option<&str>) -> Result<DataFrame> {
        let Some(data) = data else {
            let schema = schema.ok_or_else(|| missing("a local relation's data and schema"))?;
            let schema = super::sources::schema_from_text(schema)?;
            return Ok(self.session.read_batches(Arc::new(schema), Vec::new())?);
        };
        let reader = StreamReader::try_new(Cursor::new(data), None)?;
        let schema = reader.schema();
        let batches = reader.collect::<Result<Vec<RecordBatch>, _>>()?;
        let (schema, batches) = vectors::from_udt(schema, batches)?;
        in_order(self.session, schema, batches)
    }

    /// `spark.range(start, end, step)`: a column `id` of longs.
    fn range(&self, range: &spark_connect_proto::Range) -> Result<DataFrame> {
        if range.step == 0 {
            return Err(ConnectError::IllegalArgument("range's step must not be 0".into()));
        }
        let start = range.start.unwrap_or(0);
        let ids = datafusion::arrow::array::Int64Array::from_iter_values(
            (0..)
                .map(|i: i64| start + i * range.step)
                .take_while(|v| if range.step > 0 { *v < range.end } else { *v > range.end }),
        );
        let schema = Arc::new(Schema::new(vec![datafusion::arrow::datatypes::Field::new(
            "id",
            DataType::Int64,
            false,
        )]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids)])?;
        in_order(self.session, schema, vec![batch])
    }

    async fn aggregate(&'a self, aggregate: &'a spark_connect_proto::Aggregate) -> Result<DataFrame> {
        let df = self.input(&aggregate.input).await?;
        if aggregate.group_type != aggregate::GroupType::Groupby as i32 {
            return Err(ConnectError::Unsupported(
                "rollup, cube, pivot and grouping sets".into(),
            ));
        }
        let state = self.session.context().state();
        let resolver = Resolver::new(df.schema(), &state);
        let groups = (aggregate.grouping_expressions.iter())
            .map(|e| resolver.named(e).map(Named::aliased))
            .collect::<Result<Vec<_>>>()?;
        let aggregates = (aggregate.aggregate_expressions.iter())
            .map(|e| resolver.named(e).map(Named::aliased))
            .collect::<Result<Vec<_>>>()?;
        Ok(df.aggregate(groups, aggregates)?)
    }

    /// One side of `randomSplit` (or `sample(fraction)`): rows whose seeded draw falls in `[lower, upper)`,
    /// so the splits of one seed are complementary and the same on every run and master.
    async fn sample(&'a self, sample: &'a spark_connect_proto::Sample) -> Result<DataFrame> {
        if sample.with_replacement == Some(true) {
            return Err(ConnectError::Unsupported("sample with replacement".into()));
        }
        let df = self.input(&sample.input).await?;
        let seed = sample.seed.unwrap_or(0);
        let mut args = vec![lit(seed as u64)];
        args.extend(df.schema().columns().into_iter().map(Expr::Column));
        let draw = ROW_UNIFORM.call(args);
        let predicate = draw
            .clone()
            .gt_eq(lit(sample.lower_bound))
            .and(draw.lt(lit(sample.upper_bound)));
        Ok(df.filter(predicate)?)
    }

    async fn set_operation(&'a self, set: &'a spark_connect_proto::SetOperation) -> Result<DataFrame> {
        let left = self.input(&set.left_input).await?;
        let right = self.input(&set.right_input).await?;
        let all = set.is_all.unwrap_or(false);
        match set_operation::SetOpType::try_from(set.set_op_type) {
            Ok(set_operation::SetOpType::Union) if set.by_name == Some(true) => Ok(left.union_by_name(right)?),
            Ok(set_operation::SetOpType::Union) if all => Ok(left.union(right)?),
            Ok(set_operation::SetOpType::Union) => Ok(left.union_distinct(right)?),
            Ok(set_operation::SetOpType::Intersect) if all => Ok(left.intersect(right)?),
            Ok(set_operation::SetOpType::Intersect) => Ok(left.intersect_distinct(right)?),
            Ok(set_operation::SetOpType::Except) if all => Ok(left.except(right)?),
            Ok(set_operation::SetOpType::Except) => Ok(left.except_distinct(right)?),
            _ => Err(missing("a set operation's type")),
        }
    }

    async fn join(&'a self, join: &'a spark_connect_proto::Join) -> Result<DataFrame> {
        let left = self.input(&join.left).await?;
        let right = self.input(&join.right).await?;
        let join_type = match join::JoinType::try_from(join.join_type) {
            Ok(join::JoinType::Inner | join::JoinType::Unspecified) => JoinType::Inner,
            Ok(join::JoinType::FullOuter) => JoinType::Full,
            Ok(join::JoinType::LeftOuter) => JoinType::Left,
            Ok(join::JoinType::RightOuter) => JoinType::Right,
            Ok(join::JoinType::LeftAnti) => JoinType::LeftAnti,
            Ok(join::JoinType::LeftSemi) => JoinType::LeftSemi,
            Ok(join::JoinType::Cross) => return Ok(left.join_on(right, JoinType::Inner, [])?),
            Err(_) => return Err(missing("a join's type")),
        };
        if !join.using_columns.is_empty() {
            return using_join(left, right, join_type, &join.using_columns);
        }
        let condition = join
            .join_condition
            .as_ref()
            .ok_or_else(|| missing("a join's condition or columns"))?;
        let both = left.schema().join(right.schema())?;
        let state = self.session.context().state();
        let predicate = Resolver::new(&both, &state).expr(condition)?;
        Ok(left.join_on(right, join_type, [predicate])?)
    }
}

/// `join(other, on=["k"])`: Spark's one `k` column (the left's, the right's for a right join, whichever is
/// there for a full join), then the left's other columns, then the right's.
fn using_join(left: DataFrame, right: DataFrame, join_type: JoinType, using: &[String]) -> Result<DataFrame> {
    let (left, right) = (left.alias("__left")?, right.alias("__right")?);
    let names: Vec<&str> = using.iter().map(String::as_str).collect();
    let left_columns: Vec<String> = left.schema().fields().iter().map(|f| f.name().clone()).collect();
    let right_columns: Vec<String> = right.schema().fields().iter().map(|f| f.name().clone()).collect();
    let joined = left.join(right, join_type, &names, &names, None)?;
    let side = |table: &str, name: &str| Expr::Column(Column::new(Some(table), name));
    let mut projection: Vec<Expr> = (using.iter())
        .map(|name| match join_type {
            JoinType::Right => side("__right", name).alias(name),
            JoinType::Full => coalesce(vec![side("__left", name), side("__right", name)]).alias(name),
            _ => side("__left", name).alias(name),
        })
        .collect();
    let semi = matches!(join_type, JoinType::LeftSemi | JoinType::LeftAnti);
    projection.extend(
        left_columns
            .iter()
            .filter(|c| !using.contains(c))
            .map(|c| side("__left", c).alias(c)),
    );
    if !semi {
        projection.extend(
            right_columns
                .iter()
                .filter(|c| !using.contains(c))
                .map(|c| side("__right", c).alias(c)),
        );
    }
    Ok(joined.select(projection)?)
}

fn unique_names(df: &DataFrame) -> bool {
    let mut names: Vec<&String> = df.schema().fields().iter().map(|f| f.name()).collect();
    let count = names.len();
    names.sort();
    names.dedup();
    names.len() == count
}

/// Rows a client sent or named (`createDataFrame`, `range`) as one partition, so `limit`, `first` and `show`
/// take them in the order given, as Spark's local scans do.
fn in_order(session: &Session, schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<DataFrame> {
    let table = MemTable::try_new(schema, vec![batches])?;
    Ok(session.context().read_table(Arc::new(table))?)
}

fn count(value: i32, what: &str) -> Result<usize> {
    usize::try_from(value)
        .map_err(|_| ConnectError::IllegalArgument(format!("{what} must not be negative, got {value}")))
}

fn missing(what: &str) -> ConnectError {
    ConnectError::InvalidPlan(format!("{what} is missing"))
}

/// The PySpark name of a relation kind hearth does not plan, for its error.
fn relation_name(kind: &RelType) -> String {
    let debug = format!("{kind:?}");
    let variant = debug.split('(').next().unwrap_or_default();
    let mut snake = String::new();
    for (i, c) in variant.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
}
