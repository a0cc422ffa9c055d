//! Spark's data types and Arrow's: the schema a client reads (`df.schema`, `printSchema`, the schema of each
//! result), and the types a client writes (`cast("double")`, a DDL schema).

use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, TimeUnit};
use spark_connect_proto::data_type::{self as spark, Kind};

use crate::errors::{ConnectError, Result};
use crate::results::{is_vector, vector_struct_fields};

/// A Spark type of `kind`.
fn of(kind: Kind) -> spark_connect_proto::DataType {
    spark_connect_proto::DataType { kind: Some(kind) }
}

/// The Spark type a client sees for a column of Arrow type `arrow` (the type results are sent in, after
/// [`crate::results`] normalised them).
///
/// ```
/// use datafusion::arrow::datatypes::DataType;
/// use spark_connect_proto::data_type::Kind;
///
/// let spark = hearth_connect::types::spark_type("x", &DataType::Float64).unwrap();
/// assert!(matches!(spark.kind, Some(Kind::Double(_))));
/// ```
pub fn spark_type(column: &str, arrow: &DataType) -> Result<spark_connect_proto::DataType> {
    if is_vector(arrow) {
        return Ok(vector_udt());
    }
    Ok(of(match arrow {
        DataType::Null => Kind::Null(spark::Null::default()),
        DataType::Boolean => Kind::Boolean(spark::Boolean::default()),
        DataType::Int8 => Kind::Byte(spark::Byte::default()),
        DataType::Int16 | DataType::UInt8 => Kind::Short(spark::Short::default()),
        DataType::Int32 | DataType::UInt16 => Kind::Integer(spark::Integer::default()),
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => Kind::Long(spark::Long::default()),
        DataType::Float16 | DataType::Float32 => Kind::Float(spark::Float::default()),
        DataType::Float64 => Kind::Double(spark::Double::default()),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Kind::String(spark::String::default()),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            Kind::Binary(spark::Binary::default())
        }
        DataType::Date32 | DataType::Date64 => Kind::Date(spark::Date::default()),
        DataType::Timestamp(_, Some(_)) => Kind::Timestamp(spark::Timestamp::default()),
        DataType::Timestamp(_, None) => Kind::TimestampNtz(spark::TimestampNtz::default()),
        DataType::Decimal128(precision, scale) | DataType::Decimal256(precision, scale) => {
            Kind::Decimal(spark::Decimal {
                precision: Some(i32::from(*precision)),
                scale: Some(i32::from(*scale)),
                ..Default::default()
            })
        }
        DataType::List(element) | DataType::LargeList(element) | DataType::ListView(element) => {
            Kind::Array(Box::new(spark::Array {
                element_type: Some(Box::new(spark_type(column, element.data_type())?)),
                contains_null: element.is_nullable(),
                ..Default::default()
            }))
        }
        DataType::Struct(fields) => Kind::Struct(spark_struct(fields)?),
        DataType::Map(entries, _) => {
            let DataType::Struct(pair) = entries.data_type() else {
                return Err(unsupported_type(column, arrow));
            };
            Kind::Map(Box::new(spark::Map {
                key_type: Some(Box::new(spark_type(column, pair[0].data_type())?)),
                value_type: Some(Box::new(spark_type(column, pair[1].data_type())?)),
                value_contains_null: pair[1].is_nullable(),
                ..Default::default()
            }))
        }
        DataType::Dictionary(_, value) => return spark_type(column, value),
        _ => return Err(unsupported_type(column, arrow)),
    }))
}

fn unsupported_type(column: &str, arrow: &DataType) -> ConnectError {
    ConnectError::Unsupported(format!(
        "column {column:?}'s type {arrow} in a result sent to a Spark client"
    ))
}

/// Spark's `VectorUDT`, stored as its struct, which PySpark reads back as `DenseVector`s.
pub(crate) fn vector_udt() -> spark_connect_proto::DataType {
    let storage = spark_struct(&vector_struct_fields()).unwrap_or_default();
    of(Kind::Udt(Box::new(spark::Udt {
        r#type: "udt".into(),
        jvm_class: Some("org.apache.spark.ml.linalg.VectorUDT".into()),
        python_class: Some("pyspark.ml.linalg.VectorUDT".into()),
        serialized_python_class: None,
        sql_type: Some(Box::new(of(Kind::Struct(storage)))),
    })))
}

/// Spark's struct type of Arrow `fields`.
fn spark_struct(fields: &Fields) -> Result<spark::Struct> {
    let fields = (fields.iter())
        .map(|field| {
            Ok(spark::StructField {
                name: field.name().clone(),
                data_type: Some(spark_type(field.name(), field.data_type())?),
                nullable: field.is_nullable(),
                metadata: None,
            })
        })
        .collect::<Result<_>>()?;
    Ok(spark::Struct {
        fields,
        ..Default::default()
    })
}

/// The Spark schema (a struct type) of an Arrow schema.
pub fn spark_schema(schema: &Schema) -> Result<spark_connect_proto::DataType> {
    Ok(of(Kind::Struct(spark_struct(schema.fields())?)))
}

/// The Arrow type of a Spark type a client names (a cast's target, a field of a schema it sends).
pub fn arrow_type(spark: &spark_connect_proto::DataType) -> Result<DataType> {
    let kind = spark
        .kind
        .as_ref()
        .ok_or_else(|| ConnectError::InvalidPlan("a data type without its kind".into()))?;
    Ok(match kind {
        Kind::Null(_) => DataType::Null,
        Kind::Boolean(_) => DataType::Boolean,
        Kind::Byte(_) => DataType::Int8,
        Kind::Short(_) => DataType::Int16,
        Kind::Integer(_) => DataType::Int32,
        Kind::Long(_) => DataType::Int64,
        Kind::Float(_) => DataType::Float32,
        Kind::Double(_) => DataType::Float64,
        Kind::String(_) | Kind::Char(_) | Kind::VarChar(_) => DataType::Utf8,
        Kind::Binary(_) => DataType::Binary,
        Kind::Date(_) => DataType::Date32,
        Kind::Timestamp(_) => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Kind::TimestampNtz(_) => DataType::Timestamp(TimeUnit::Microsecond, None),
        Kind::Decimal(decimal) => {
            let precision = u8::try_from(decimal.precision.unwrap_or(10)).unwrap_or(38);
            let scale = i8::try_from(decimal.scale.unwrap_or(0)).unwrap_or(0);
            DataType::Decimal128(precision, scale)
        }
        Kind::Array(array) => {
            let element = array
                .element_type
                .as_deref()
                .ok_or_else(|| missing("an array type's element type"))?;
            DataType::List(Field::new_list_field(arrow_type(element)?, array.contains_null).into())
        }
        Kind::Struct(fields) => DataType::Struct(
            (fields.fields.iter())
                .map(|field| {
                    let data_type = field
                        .data_type
                        .as_ref()
                        .ok_or_else(|| missing("a struct field's type"))?;
                    Ok(Field::new(&field.name, arrow_type(data_type)?, field.nullable))
                })
                .collect::<Result<Fields>>()?,
        ),
        Kind::Unparsed(unparsed) => parse_type_name(&unparsed.data_type_string)?,
        other => return Err(ConnectError::Unsupported(format!("the Spark data type {other:?}"))),
    })
}

fn missing(what: &str) -> ConnectError {
    ConnectError::InvalidPlan(format!("{what} is missing"))
}

/// The Arrow type of a Spark type name as written in DDL or `cast("…")`: `int`, `bigint`, `double`,
/// `string`, `decimal(10,2)`, `array<double>`, ….
///
/// ```
/// use datafusion::arrow::datatypes::DataType;
///
/// assert_eq!(hearth_connect::types::parse_type_name("BIGINT").unwrap(), DataType::Int64);
/// assert_eq!(hearth_connect::types::parse_type_name("decimal(10, 2)").unwrap(), DataType::Decimal128(10, 2));
/// assert!(hearth_connect::types::parse_type_name("vector").is_err());
/// ```
pub fn parse_type_name(name: &str) -> Result<DataType> {
    let lower = name.trim().to_ascii_lowercase();
    if let Some(element) = lower.strip_prefix("array<").and_then(|rest| rest.strip_suffix('>')) {
        return Ok(DataType::List(
            Field::new_list_field(parse_type_name(element)?, true).into(),
        ));
    }
    if let Some(arguments) = lower.strip_prefix("decimal(").and_then(|rest| rest.strip_suffix(')')) {
        let mut numbers = arguments.split(',').map(|n| n.trim().parse::<u8>());
        if let (Some(Ok(precision)), Some(Ok(scale)), None) = (numbers.next(), numbers.next(), numbers.next()) {
            return Ok(DataType::Decimal128(precision, i8::try_from(scale).unwrap_or(0)));
        }
    }
    Ok(match lower.as_str() {
        "boolean" | "bool" => DataType::Boolean,
        "byte" | "tinyint" => DataType::Int8,
        "short" | "smallint" => DataType::Int16,
        "int" | "integer" => DataType::Int32,
        "long" | "bigint" => DataType::Int64,
        "float" | "real" => DataType::Float32,
        "double" => DataType::Float64,
        "string" | "varchar" => DataType::Utf8,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" | "timestamp_ltz" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "decimal" => DataType::Decimal128(10, 0),
        "void" => DataType::Null,
        _ => {
            return Err(ConnectError::Analysis {
                error_class: "UNSUPPORTED_DATATYPE",
                message: format!("Unsupported data type \"{name}\"."),
            });
        }
    })
}

/// The Spark name of an Arrow type, as `printSchema` and DDL write it.
pub fn spark_type_name(arrow: &DataType) -> String {
    match arrow {
        DataType::Boolean => "boolean".into(),
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 | DataType::UInt8 => "smallint".into(),
        DataType::Int32 | DataType::UInt16 => "int".into(),
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => "bigint".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Date32 => "date".into(),
        DataType::Timestamp(_, Some(_)) => "timestamp".into(),
        DataType::Timestamp(_, None) => "timestamp_ntz".into(),
        DataType::Decimal128(p, s) => format!("decimal({p},{s})"),
        DataType::List(element) => format!("array<{}>", spark_type_name(element.data_type())),
        vector if is_vector(vector) => "vector".into(),
        other => other.to_string().to_ascii_lowercase(),
    }
}
