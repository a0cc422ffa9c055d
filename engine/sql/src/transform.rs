//! `CREATE MODEL … TRANSFORM (…)`: the preprocessing written as SQL, turned into pipeline stages.
//!
//! Each item of the list is a column (`age`), an `ML.` call with an alias, or a SQL expression with an alias:
//!
//! | SQL | stage |
//! |---|---|
//! | `ML.VECTOR_ASSEMBLER(a, b, … [, handle_invalid => 'keep'])` | `VectorAssembler` |
//! | `ML.STANDARD_SCALER(x [, with_mean => true, with_std => true]) OVER ()` | `StandardScaler` (a number is assembled into a vector first) |
//! | `ML.STRING_INDEXER(x [, string_order_type => 'alphabetAsc', handle_invalid => 'keep']) OVER ()` | `StringIndexer` |
//! | `ML.ONE_HOT_ENCODER(x [, drop_last => false, handle_invalid => 'keep']) OVER ()` | `OneHotEncoder` (a string is indexed first, unseen values kept, as BigQuery's) |
//! | `a * 2 AS double_a` | `SqlColumns` |
//!
//! `ML.` calls nest (`ML.STANDARD_SCALER(ML.VECTOR_ASSEMBLER(a, b)) OVER () AS scaled`); `OVER ()` is accepted
//! and not required; parameters take Spark's names in snake_case or camelCase. The items' names are the
//! transform's output columns.

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::ExprSchemable;
use datafusion::prelude::DataFrame;
use datafusion::sql::sqlparser::ast::{Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, SelectItem};
use hearth_common::names::did_you_mean;
use hearth_common::params::{HandleInvalid, StringOrderType};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::vector::vector_dim;
use hearth_preprocessing::feature::{OneHotEncoder, SqlColumns, StandardScaler, StringIndexer, VectorAssembler};
use hearth_preprocessing::pipeline::PipelineStage;
use hearth_preprocessing::stage::{closest_column, quoted_columns};

use super::error::invalid;
use super::literals;

/// The `ML.` functions a TRANSFORM clause takes (`ML.LABEL_ENCODER` is `ML.STRING_INDEXER` by BigQuery's name).
const TRANSFORM_FUNCTIONS: [&str; 5] = [
    "ML.VECTOR_ASSEMBLER",
    "ML.STANDARD_SCALER",
    "ML.STRING_INDEXER",
    "ML.LABEL_ENCODER",
    "ML.ONE_HOT_ENCODER",
];

/// The stages of a TRANSFORM clause and the columns it outputs, in order.
#[derive(Clone, Debug)]
pub struct TransformPlan {
    /// The stages, in the order they are fitted.
    pub stages: Vec<PipelineStage>,
    /// The output columns, in the order written.
    pub outputs: Vec<String>,
    /// The input columns the stages read, in the order first read.
    pub inputs: Vec<String>,
}

/// What a column holds, as far as choosing stages goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Vector,
    Number,
    Text,
}

fn kind_of(data_type: &DataType) -> Kind {
    if vector_dim(data_type).is_some() {
        Kind::Vector
    } else if data_type.is_numeric() || data_type == &DataType::Boolean {
        Kind::Number
    } else {
        Kind::Text
    }
}

/// Turns a TRANSFORM list over `input` (the training query's rows) into stages.
pub fn plan_transform(items: &[SelectItem], input: &DataFrame) -> Result<TransformPlan> {
    let mut builder = Builder {
        input,
        expressions: SqlColumns::new(),
        stages: Vec::new(),
        kinds: HashMap::new(),
        inputs: Vec::new(),
        fresh: 0,
    };
    let mut outputs = Vec::new();
    for item in items {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(ident)) => {
                outputs.push(builder.expr(&Expr::Identifier(ident.clone()), None)?);
            }
            SelectItem::UnnamedExpr(expr) => {
                return Err(invalid(
                    "TRANSFORM",
                    format!("{expr} needs a name: write `{expr} AS name`"),
                ));
            }
            SelectItem::ExprWithAlias { expr, alias } => outputs.push(builder.expr(expr, Some(&alias.value))?),
            SelectItem::Wildcard(_) => {
                for field in input.schema().fields() {
                    outputs.push(builder.column(field.name())?.0);
                }
            }
            other => {
                return Err(invalid("TRANSFORM", format!("{other} is not a TRANSFORM item")));
            }
        }
    }
    let mut stages = Vec::new();
    if !builder.expressions.columns().is_empty() {
        stages.push(PipelineStage::transformer(builder.expressions));
    }
    stages.extend(fused(builder.stages));
    Ok(TransformPlan {
        stages,
        outputs,
        inputs: builder.inputs,
    })
}

struct Builder<'a> {
    input: &'a DataFrame,
    /// SQL expressions over the input, computed before any ML stage.
    expressions: SqlColumns,
    stages: Vec<Planned>,
    /// Columns made by the stages so far, and what they hold.
    kinds: HashMap<String, Kind>,
    /// The input columns read so far.
    inputs: Vec<String>,
    fresh: usize,
}

/// An `ML.` call's arguments: positional ones, and named parameters.
struct Arguments<'e> {
    positional: Vec<&'e Expr>,
    named: Vec<(String, &'e Expr)>,
}

impl Builder<'_> {
    /// A new column name for an intermediate result of `output` (or of the item being built).
    fn fresh(&mut self, output: Option<&str>) -> String {
        self.fresh += 1;
        format!("__transform_{}_{}", output.unwrap_or("column"), self.fresh)
    }

    /// A column of the input or made by a stage so far, and what it holds.
    fn column(&mut self, name: &str) -> Result<(String, Kind)> {
        if let Some(kind) = self.kinds.get(name) {
            return Ok((name.to_string(), *kind));
        }
        let field = self.input.schema().field_with_unqualified_name(name).map_err(|_| {
            HearthError::schema(
                "CREATE MODEL … TRANSFORM",
                name,
                format!(
                    "no such column{}; the training query has {}",
                    closest_column(self.input, name),
                    quoted_columns(self.input)
                ),
            )
        })?;
        let kind = kind_of(field.data_type());
        self.read(name);
        Ok((name.to_string(), kind))
    }

    /// Notes that the stages read the input column `name`.
    fn read(&mut self, name: &str) {
        if !self.inputs.iter().any(|input| input == name) {
            self.inputs.push(name.to_string());
        }
    }

    fn add(&mut self, stage: impl Into<Planned>, output: &str, kind: Kind) -> String {
        self.stages.push(stage.into());
        self.kinds.insert(output.to_string(), kind);
        output.to_string()
    }

    /// Builds `expr`, naming its result `output` (or a fresh name); returns the column that holds it.
    fn expr(&mut self, expr: &Expr, output: Option<&str>) -> Result<String> {
        match expr {
            Expr::Nested(inner) => self.expr(inner, output),
            Expr::Identifier(ident) if output.is_none_or(|o| o == ident.value) => Ok(self.column(&ident.value)?.0),
            Expr::Function(function) if is_ml(function) => self.ml_call(function, output),
            other => self.sql_expression(other, output),
        }
    }

    /// A SQL expression over the input's columns, computed by the leading `SqlColumns` stage.
    fn sql_expression(&mut self, expr: &Expr, output: Option<&str>) -> Result<String> {
        let text = expr.to_string();
        if text.to_ascii_lowercase().contains("ml.") {
            return Err(invalid(
                "TRANSFORM",
                format!(
                    "{text}: ML. calls nest only inside other ML. calls; give the expression around it its own item"
                ),
            ));
        }
        let planned = self
            .input
            .parse_sql_expr(&text)
            .map_err(|e| invalid("TRANSFORM", &text).caused_by(e))?;
        let (_, field) = planned
            .to_field(self.input.schema())
            .map_err(|e| invalid("TRANSFORM", &text).caused_by(e))?;
        let data_type = field.data_type().clone();
        for column in planned.column_refs() {
            self.read(&column.name);
        }
        let name = match output {
            Some(name) => name.to_string(),
            None => self.fresh(None),
        };
        self.expressions = std::mem::take(&mut self.expressions).column(&name, text);
        self.kinds.insert(name.clone(), kind_of(&data_type));
        Ok(name)
    }

    fn ml_call(&mut self, function: &Function, output: Option<&str>) -> Result<String> {
        let name = function
            .name
            .0
            .last()
            .map(|p| p.to_string().to_ascii_lowercase())
            .unwrap_or_default();
        let args = arguments(function)?;
        let out = match output {
            Some(name) => name.to_string(),
            None => self.fresh(None),
        };
        match name.as_str() {
            "vector_assembler" => self.vector_assembler(&args, out),
            "standard_scaler" => self.standard_scaler(&args, out),
            "string_indexer" | "label_encoder" => self.string_indexer(&args, out),
            "one_hot_encoder" => self.one_hot_encoder(&args, out),
            other => {
                let function = format!("ML.{}", other.to_ascii_uppercase());
                Err(invalid(
                    "TRANSFORM",
                    format!(
                        "{function} is not a TRANSFORM function{}; hearth has {}",
                        did_you_mean(&function, TRANSFORM_FUNCTIONS),
                        TRANSFORM_FUNCTIONS.join(", ")
                    ),
                ))
            }
        }
    }

    /// `ML.VECTOR_ASSEMBLER(a, b, … [, handle_invalid => …])` into `out`.
    fn vector_assembler(&mut self, args: &Arguments, out: String) -> Result<String> {
        let mut inputs = Vec::new();
        for arg in &args.positional {
            inputs.push(self.expr(arg, None)?);
        }
        let mut stage = VectorAssembler::new().input_cols(inputs).output_col(&out);
        for (param, value) in &args.named {
            stage = match normalized(param).as_str() {
                "handleinvalid" => stage.handle_invalid(handle_invalid(param, value)?),
                _ => return Err(unknown_param("VECTOR_ASSEMBLER", param, "handle_invalid")),
            };
        }
        Ok(self.add(stage, &out, Kind::Vector))
    }

    /// `ML.STANDARD_SCALER(x [, with_mean => …, with_std => …])` into `out`; a number is assembled into a
    /// vector first.
    fn standard_scaler(&mut self, args: &Arguments, out: String) -> Result<String> {
        let (input, kind) = self.single_input("STANDARD_SCALER", args, &out)?;
        let input = if kind == Kind::Vector {
            input
        } else {
            let vector = self.fresh(Some(&out));
            self.add(
                VectorAssembler::new().input_cols([input]).output_col(&vector),
                &vector,
                Kind::Vector,
            )
        };
        let mut stage = StandardScaler::new().input_col(input).output_col(&out);
        for (param, value) in &args.named {
            stage = match normalized(param).as_str() {
                "withmean" => stage.with_mean(boolean(param, value)?),
                "withstd" => stage.with_std(boolean(param, value)?),
                _ => return Err(unknown_param("STANDARD_SCALER", param, "with_mean, with_std")),
            };
        }
        Ok(self.add(stage, &out, Kind::Vector))
    }

    /// `ML.STRING_INDEXER(x [, handle_invalid => …, string_order_type => …])` into `out`.
    fn string_indexer(&mut self, args: &Arguments, out: String) -> Result<String> {
        let (input, _) = self.single_input("STRING_INDEXER", args, &out)?;
        let mut stage = StringIndexer::new().input_col(input).output_col(&out);
        for (param, value) in &args.named {
            stage = match normalized(param).as_str() {
                "handleinvalid" => stage.handle_invalid(handle_invalid(param, value)?),
                "stringordertype" => stage.string_order_type(string_order(param, value)?),
                _ => {
                    return Err(unknown_param(
                        "STRING_INDEXER",
                        param,
                        "handle_invalid, string_order_type",
                    ));
                }
            };
        }
        Ok(self.add(stage, &out, Kind::Number))
    }

    /// `ML.ONE_HOT_ENCODER(x [, drop_last => …, handle_invalid => …])` into `out`; a string is indexed first
    /// (unseen values kept, as BigQuery's).
    fn one_hot_encoder(&mut self, args: &Arguments, out: String) -> Result<String> {
        let (input, kind) = self.single_input("ONE_HOT_ENCODER", args, &out)?;
        let input = if kind == Kind::Text {
            let index = self.fresh(Some(&out));
            let indexer = StringIndexer::new()
                .input_col(input)
                .output_col(&index)
                .handle_invalid(HandleInvalid::Keep);
            self.add(indexer, &index, Kind::Number)
        } else {
            input
        };
        let mut stage = OneHotEncoder::new().input_col(input).output_col(&out);
        for (param, value) in &args.named {
            stage = match normalized(param).as_str() {
                "droplast" => stage.drop_last(boolean(param, value)?),
                "handleinvalid" => stage.handle_invalid(handle_invalid(param, value)?),
                _ => return Err(unknown_param("ONE_HOT_ENCODER", param, "drop_last, handle_invalid")),
            };
        }
        Ok(self.add(stage, &out, Kind::Vector))
    }

    /// The one positional argument of an `ML.` call, built.
    fn single_input(&mut self, function: &str, args: &Arguments, output: &str) -> Result<(String, Kind)> {
        let [arg] = args.positional.as_slice() else {
            return Err(invalid(
                "TRANSFORM",
                format!(
                    "ML.{function} takes one column or expression, got {}",
                    args.positional.len()
                ),
            ));
        };
        let name = self.fresh_for(arg, output);
        let column = self.expr(arg, Some(&name))?;
        self.column(&column)
    }

    /// The name a nested argument's result gets: a plain column keeps its own.
    fn fresh_for(&mut self, arg: &Expr, output: &str) -> String {
        match arg {
            Expr::Identifier(ident) => ident.value.clone(),
            _ => self.fresh(Some(output)),
        }
    }
}

/// A stage the builder made, before fusing.
enum Planned {
    Indexer(StringIndexer),
    Encoder(OneHotEncoder),
    Assembler(VectorAssembler),
    Scaler(StandardScaler),
}

macro_rules! planned_from {
    ($($variant:ident($stage:ty)),*) => {
        $(impl From<$stage> for Planned {
            fn from(stage: $stage) -> Self {
                Planned::$variant(stage)
            }
        })*
    };
}

planned_from!(
    Indexer(StringIndexer),
    Encoder(OneHotEncoder),
    Assembler(VectorAssembler),
    Scaler(StandardScaler)
);

impl Planned {
    /// The columns the stage reads and writes.
    fn columns(&self) -> (Vec<&str>, Vec<&str>) {
        fn strs(columns: &[String]) -> Vec<&str> {
            columns.iter().map(String::as_str).collect()
        }
        match self {
            Planned::Indexer(s) => (strs(s.columns().0), strs(s.columns().1)),
            Planned::Encoder(s) => (strs(s.columns().0), strs(s.columns().1)),
            Planned::Assembler(s) => (strs(s.get_input_cols()), vec![s.get_output_col()]),
            Planned::Scaler(s) => (vec![s.columns().0], vec![s.columns().1]),
        }
    }

    fn into_stage(self) -> PipelineStage {
        match self {
            Planned::Indexer(s) => s.into(),
            Planned::Encoder(s) => s.into(),
            Planned::Assembler(s) => s.into(),
            Planned::Scaler(s) => s.into(),
        }
    }
}

/// The stages in an order that fits them in the fewest queries: each stage after the stages whose columns
/// it reads, and the indexers (and encoders) of one level that take the same parameters merged into one
/// multi-column stage, which gives what the single-column stages would.
fn fused(stages: Vec<Planned>) -> Vec<PipelineStage> {
    let mut level_of: HashMap<String, usize> = HashMap::new();
    let mut levels: Vec<Vec<Planned>> = Vec::new();
    for stage in stages {
        let (inputs, outputs) = stage.columns();
        let level = inputs
            .iter()
            .filter_map(|c| level_of.get(*c))
            .map(|l| l + 1)
            .max()
            .unwrap_or(0);
        for output in outputs {
            level_of.insert(output.to_string(), level);
        }
        if levels.len() <= level {
            levels.resize_with(level + 1, Vec::new);
        }
        levels[level].push(stage);
    }
    let mut out = Vec::new();
    for level in levels {
        let mut merged: Vec<Planned> = Vec::new();
        for stage in level {
            let absorbed = merged.iter_mut().any(|m| match (m, &stage) {
                (Planned::Indexer(a), Planned::Indexer(b)) => a.absorb(b),
                (Planned::Encoder(a), Planned::Encoder(b)) => a.absorb(b),
                _ => false,
            });
            if !absorbed {
                merged.push(stage);
            }
        }
        out.extend(merged.into_iter().map(Planned::into_stage));
    }
    out
}

fn is_ml(function: &Function) -> bool {
    let parts = &function.name.0;
    parts.len() == 2 && parts[0].to_string().eq_ignore_ascii_case("ml")
}

fn arguments(function: &Function) -> Result<Arguments<'_>> {
    let mut out = Arguments {
        positional: Vec::new(),
        named: Vec::new(),
    };
    let FunctionArguments::List(list) = &function.args else {
        return Ok(out);
    };
    for arg in &list.args {
        match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => out.positional.push(expr),
            FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(expr),
                ..
            } => out.named.push((name.value.clone(), expr)),
            FunctionArg::ExprNamed {
                name: Expr::Identifier(name),
                arg: FunctionArgExpr::Expr(expr),
                ..
            } => out.named.push((name.value.clone(), expr)),
            other => {
                return Err(invalid(
                    "TRANSFORM",
                    format!("{}: argument {other} is not a column or parameter", function.name),
                ));
            }
        }
    }
    Ok(out)
}

/// A parameter's name without case or underscores: `handle_invalid` and `handleInvalid` are one.
fn normalized(param: &str) -> String {
    param
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_ascii_lowercase()
}

fn unknown_param(function: &str, param: &str, known: &str) -> HearthError {
    invalid(
        "TRANSFORM",
        format!("ML.{function} has no parameter {param}; it takes {known}"),
    )
}

fn text(param: &str, value: &Expr) -> Result<String> {
    literals::string(value)
        .map(str::to_string)
        .ok_or_else(|| invalid("TRANSFORM", format!("{param} takes a string, got {value}")))
}

fn boolean(param: &str, value: &Expr) -> Result<bool> {
    literals::boolean(value).ok_or_else(|| invalid("TRANSFORM", format!("{param} takes TRUE or FALSE, got {value}")))
}

fn handle_invalid(param: &str, value: &Expr) -> Result<HandleInvalid> {
    HandleInvalid::parse(&text(param, value)?).ok_or_else(|| {
        invalid(
            "TRANSFORM",
            format!("{param} takes 'error', 'skip' or 'keep', got {value}"),
        )
    })
}

fn string_order(param: &str, value: &Expr) -> Result<StringOrderType> {
    let order = text(param, value)?;
    serde_json::from_value(serde_json::Value::String(order)).map_err(|_| {
        invalid(
            "TRANSFORM",
            format!("{param} takes 'frequencyDesc', 'frequencyAsc', 'alphabetDesc' or 'alphabetAsc', got {value}"),
        )
    })
}
