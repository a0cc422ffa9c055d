//! Errors as a PySpark client expects them: a gRPC status carrying `google.rpc.ErrorInfo` with the Java
//! exception class (`reason`, `classes`), Spark's error class and its parameters, so PySpark raises
//! `AnalysisException`, `ParseException`, `IllegalArgumentException`, … with the message hearth wrote.

use std::collections::HashMap;

use datafusion::error::DataFusionError;
use hearth_exec::error::{Blame, HearthError};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// A request hearth's Spark Connect server cannot answer, with what was wrong and where.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The plan names something that is not there or does not fit (a column, a table, a type): PySpark's
    /// `AnalysisException`.
    #[error("[{error_class}] {message}")]
    Analysis {
        /// Spark's error class (`UNRESOLVED_COLUMN.WITH_SUGGESTION`, `TABLE_OR_VIEW_NOT_FOUND`, …).
        error_class: &'static str,
        /// What was wrong, naming it.
        message: String,
    },
    /// SQL text that does not parse: PySpark's `ParseException`.
    #[error("[PARSE_SYNTAX_ERROR] {0}")]
    Parse(String),
    /// A relation, expression, command or option that hearth does not implement: PySpark's
    /// `UnsupportedOperationException`.
    #[error("hearth's Spark Connect server does not support {0}")]
    Unsupported(String),
    /// A message that is malformed for its protocol (a required field missing): PySpark's `InvalidPlanInput`.
    #[error("{0}")]
    InvalidPlan(String),
    /// A value the client gave that cannot be used (an option's value, a param's): PySpark's
    /// `IllegalArgumentException`.
    #[error("{0}")]
    IllegalArgument(String),
    /// A configuration key Spark does not know: PySpark's `SparkNoSuchElementException`.
    #[error("[SQL_CONF_NOT_FOUND] The SQL config \"{0}\" cannot be found. Please verify that the config exists.")]
    ConfNotFound(String),
    /// A session or operation handle that is not (or no longer) there: Spark's `INVALID_HANDLE.*`.
    #[error("[{error_class}] {message}")]
    Handle {
        /// `INVALID_HANDLE.SESSION_CLOSED`, `INVALID_HANDLE.OPERATION_NOT_FOUND`, …
        error_class: &'static str,
        /// Which handle.
        message: String,
    },
    /// Running the plan failed (reading a file, a value a stage refuses): PySpark's `SparkException`.
    #[error("{0}")]
    Execution(String),
    /// The client cancelled the operation (`Interrupt`): PySpark's `SparkException` with Spark's class.
    #[error("[OPERATION_CANCELED] Operation has been canceled.")]
    Cancelled,
}

/// What the server's handlers return.
pub type Result<T, E = ConnectError> = std::result::Result<T, E>;

impl ConnectError {
    /// A column the plan names that the input does not have, with the columns it has.
    pub(crate) fn unresolved_column(name: &str, available: &[String]) -> Self {
        ConnectError::Analysis {
            error_class: "UNRESOLVED_COLUMN.WITH_SUGGESTION",
            message: format!(
                "A column, variable, or function parameter with name `{name}` cannot be resolved. Did you mean one \
                 of the following? [{}].",
                available
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The Java exception classes PySpark maps to its own, most specific first, and the gRPC code.
    fn classes(&self) -> (&'static [&'static str], Code) {
        const ANALYSIS: &[&str] = &[
            "org.apache.spark.sql.AnalysisException",
            "org.apache.spark.SparkThrowable",
        ];
        const PARSE: &[&str] = &[
            "org.apache.spark.sql.catalyst.parser.ParseException",
            "org.apache.spark.sql.AnalysisException",
        ];
        match self {
            ConnectError::Analysis { .. } => (ANALYSIS, Code::InvalidArgument),
            ConnectError::Parse(_) => (PARSE, Code::InvalidArgument),
            ConnectError::Unsupported(_) => (&["java.lang.UnsupportedOperationException"], Code::Unimplemented),
            ConnectError::InvalidPlan(_) => (
                &["org.apache.spark.sql.connect.common.InvalidPlanInput"],
                Code::InvalidArgument,
            ),
            ConnectError::IllegalArgument(_) => (&["java.lang.IllegalArgumentException"], Code::InvalidArgument),
            ConnectError::ConfNotFound(_) => (&["org.apache.spark.SparkNoSuchElementException"], Code::InvalidArgument),
            ConnectError::Handle { .. } => (&["org.apache.spark.SparkSQLException"], Code::FailedPrecondition),
            ConnectError::Execution(_) => (&["org.apache.spark.SparkException"], Code::Internal),
            ConnectError::Cancelled => (&["org.apache.spark.SparkException"], Code::Cancelled),
        }
    }

    /// Spark's error class and its SQL state, where the error has them.
    fn error_class(&self) -> Option<(&'static str, &'static str)> {
        match self {
            ConnectError::Analysis { error_class, .. } => Some((error_class, analysis_sql_state(error_class))),
            ConnectError::Parse(_) => Some(("PARSE_SYNTAX_ERROR", "42601")),
            ConnectError::ConfNotFound(_) => Some(("SQL_CONF_NOT_FOUND", "42K0I")),
            ConnectError::Handle { error_class, .. } => Some((error_class, "HY000")),
            ConnectError::Cancelled => Some(("OPERATION_CANCELED", "HY008")),
            _ => None,
        }
    }

    /// The gRPC status PySpark turns into its exception.
    pub fn into_status(self) -> Status {
        let (classes, code) = self.classes();
        let mut metadata = HashMap::from([
            ("classes".to_owned(), serde_json::to_string(classes).unwrap_or_default()),
            ("messageParameters".to_owned(), "{}".to_owned()),
        ]);
        if let Some((error_class, sql_state)) = self.error_class() {
            metadata.insert("errorClass".to_owned(), error_class.to_owned());
            metadata.insert("sqlState".to_owned(), sql_state.to_owned());
        }
        let details = ErrorDetails::with_error_info(classes[0], "org.apache.spark", metadata);
        Status::with_error_details(code, self.to_string(), details)
    }
}

/// The SQL state Spark gives an analysis error class.
fn analysis_sql_state(error_class: &str) -> &'static str {
    match error_class.split('.').next().unwrap_or_default() {
        "UNRESOLVED_COLUMN" => "42703",
        "TABLE_OR_VIEW_NOT_FOUND" => "42P01",
        "UNRESOLVED_ROUTINE" => "42883",
        "DATATYPE_MISMATCH" => "42K09",
        _ => "42000",
    }
}

impl From<DataFusionError> for ConnectError {
    fn from(error: DataFusionError) -> Self {
        match HearthError::from(error) {
            HearthError::DataFusion(error) => from_datafusion(&error),
            hearth => hearth.into(),
        }
    }
}

/// Spark's exception for a DataFusion error, by the error under any context.
fn from_datafusion(error: &DataFusionError) -> ConnectError {
    match error.find_root() {
        DataFusionError::SQL(parse, _) => ConnectError::Parse(parse.to_string()),
        DataFusionError::SchemaError(schema, _) => ConnectError::Analysis {
            error_class: "UNRESOLVED_COLUMN",
            message: schema.to_string(),
        },
        DataFusionError::Plan(message) if message.contains("table") && message.contains("not found") => {
            ConnectError::Analysis {
                error_class: "TABLE_OR_VIEW_NOT_FOUND",
                message: message.clone(),
            }
        }
        DataFusionError::Plan(message) => ConnectError::Analysis {
            error_class: "INVALID_PLAN",
            message: message.clone(),
        },
        DataFusionError::NotImplemented(message) => ConnectError::Unsupported(message.clone()),
        _ => ConnectError::Execution(error.to_string()),
    }
}

/// `mapped` with `message` (the whole error, its context first) in place of DataFusion's text.
fn with_message(mapped: ConnectError, message: String) -> ConnectError {
    match mapped {
        ConnectError::Analysis { error_class, .. } => ConnectError::Analysis { error_class, message },
        ConnectError::Execution(_) => ConnectError::Execution(message),
        other => other,
    }
}

/// Spark's exception for a hearth error, by the error under any context and who is to blame: a parameter is an
/// illegal argument, a column or any other error of the plan an analysis error (a barrier stage's want of slots
/// or GPUs excepted: Spark fails those jobs when they run), DataFusion's errors as [`from_datafusion`] says.
impl From<HearthError> for ConnectError {
    fn from(error: HearthError) -> Self {
        let root = error.root();
        // The whole text, context first; where only DataFusion's layers wrap the error, its own.
        let message = match &error {
            HearthError::DataFusion(_) => root.to_string(),
            _ => error.to_string(),
        };
        match root {
            HearthError::DataFusion(inner) if matches!(error, HearthError::Context { .. }) => {
                with_message(from_datafusion(inner), message)
            }
            HearthError::DataFusion(inner) => from_datafusion(inner),
            HearthError::InvalidParam { .. } => ConnectError::IllegalArgument(message),
            HearthError::Schema { .. } => ConnectError::Analysis {
                error_class: "UNRESOLVED_COLUMN",
                message,
            },
            HearthError::Gang { .. } | HearthError::GangGpus { .. } => ConnectError::Execution(message),
            _ if error.blame() == Blame::Plan => ConnectError::Analysis {
                error_class: "INVALID_PLAN",
                message,
            },
            _ => ConnectError::Execution(message),
        }
    }
}

impl From<datafusion::arrow::error::ArrowError> for ConnectError {
    fn from(error: datafusion::arrow::error::ArrowError) -> Self {
        ConnectError::Execution(error.to_string())
    }
}

impl From<hearth_common::files::WholeDirError> for ConnectError {
    fn from(error: hearth_common::files::WholeDirError) -> Self {
        ConnectError::Execution(error.to_string())
    }
}

impl From<datafusion::parquet::errors::ParquetError> for ConnectError {
    fn from(error: datafusion::parquet::errors::ParquetError) -> Self {
        ConnectError::Execution(error.to_string())
    }
}
