//! A fitted model's state as Spark keeps it in `data/` (one Parquet part file, Spark's schema in its footer),
//! taken from and given back to hearth's model (its params' JSON, whose state fields hold the same numbers):
//!
//! | model | Spark's `data/` columns |
//! |---|---|
//! | `StringIndexerModel` | `labelsArray` |
//! | `OneHotEncoderModel` | `categorySizes` |
//! | `StandardScalerModel` | `std`, `mean` |
//! | `LogisticRegressionModel` | `numClasses`, `numFeatures`, `interceptVector`, `coefficientMatrix`, `isMultinomial` |
//! | `LinearRegressionModel` | `intercept`, `coefficients`, `scale` |
//! | `MultilayerPerceptronClassificationModel` | `weights` |
//! | `KMeansModel` | `clusterIdx`, `clusterCenter` (a row a center) |

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Schema;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::file::properties::WriterProperties;
use serde_json::{Map, Value, json};

use crate::analyze::SPARK_VERSION;
use crate::errors::{ConnectError, Result};
use crate::persist::columns::{Cell, Column};
use crate::persist::part_files;

/// The folder of a saved model that holds its state.
pub(crate) const DATA_DIR: &str = "data";

/// The hearth fields of a model that are its training record, not its params or state: kept in the
/// metadata's `hearth` object.
pub(crate) const TRAINING_RECORD: &[&str] = &["trainingRows", "solved", "summary", "inverseGramDiagonal"];

/// The fields of hearth's model JSON that `data/` holds, by model class.
pub(crate) fn state_fields(class: &str) -> &'static [&'static str] {
    match class {
        "StringIndexerModel" => &["labels"],
        "OneHotEncoderModel" => &["categorySizes"],
        "StandardScalerModel" => &["std", "mean"],
        "LogisticRegressionModel" => &[
            "numClasses",
            "numFeatures",
            "interceptVector",
            "coefficientMatrix",
            "multinomial",
        ],
        "LinearRegressionModel" => &["intercept", "coefficients"],
        "MultilayerPerceptronClassificationModel" => &["weights"],
        "KMeansModel" => &["clusterCenters"],
        _ => &[],
    }
}

/// The columns of `class`'s data.
fn columns(class: &str) -> &'static [(&'static str, Column)] {
    match class {
        "StringIndexerModel" => &[("labelsArray", Column::StringLists)],
        "OneHotEncoderModel" => &[("categorySizes", Column::Integers)],
        "StandardScalerModel" => &[("std", Column::Vector), ("mean", Column::Vector)],
        "LogisticRegressionModel" => &[
            ("numClasses", Column::Integer),
            ("numFeatures", Column::Integer),
            ("interceptVector", Column::Vector),
            ("coefficientMatrix", Column::Matrix),
            ("isMultinomial", Column::Boolean),
        ],
        "LinearRegressionModel" => &[
            ("intercept", Column::Double),
            ("coefficients", Column::Vector),
            ("scale", Column::Double),
        ],
        "MultilayerPerceptronClassificationModel" => &[("weights", Column::Vector)],
        "KMeansModel" => &[("clusterIdx", Column::Integer), ("clusterCenter", Column::Vector)],
        _ => &[],
    }
}

/// Whether a model of `class` keeps data.
pub(crate) fn has_data(class: &str) -> bool {
    !columns(class).is_empty()
}

fn field<'a>(state: &'a Map<String, Value>, class: &str, name: &str) -> Result<&'a Value> {
    state
        .get(name)
        .ok_or_else(|| ConnectError::Execution(format!("hearth's {class} has no {name} to save")))
}

fn parsed<T: serde::de::DeserializeOwned>(state: &Map<String, Value>, class: &str, name: &str) -> Result<T> {
    serde_json::from_value(field(state, class, name)?.clone())
        .map_err(|e| ConnectError::Execution(format!("hearth's {class}: {name}: {e}")))
}

fn int(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| ConnectError::Execution(format!("{what} {value} is too large for Spark's int")))
}

/// The rows of `class`'s data made from hearth's model JSON `state`.
fn rows(class: &str, state: &Map<String, Value>) -> Result<Vec<Vec<Cell>>> {
    let vector = |name: &str| -> Result<Cell> { Ok(Cell::Vector(parsed(state, class, name)?)) };
    Ok(match class {
        "StringIndexerModel" => vec![vec![Cell::StringLists(parsed(state, class, "labels")?)]],
        "OneHotEncoderModel" => {
            let sizes: Vec<usize> = parsed(state, class, "categorySizes")?;
            let sizes = sizes
                .into_iter()
                .map(|s| int(s, "a category size"))
                .collect::<Result<_>>()?;
            vec![vec![Cell::Integers(sizes)]]
        }
        "StandardScalerModel" => vec![vec![vector("std")?, vector("mean")?]],
        "LogisticRegressionModel" => {
            let classes: usize = parsed(state, class, "numClasses")?;
            let features: usize = parsed(state, class, "numFeatures")?;
            let multinomial: bool = parsed(state, class, "multinomial")?;
            let matrix: Vec<f64> = parsed(state, class, "coefficientMatrix")?;
            let rows = matrix.len().checked_div(features).unwrap_or(0);
            vec![vec![
                Cell::Integer(int(classes, "numClasses")?),
                Cell::Integer(int(features, "numFeatures")?),
                vector("interceptVector")?,
                Cell::Matrix {
                    rows,
                    cols: features,
                    row_major: matrix,
                },
                Cell::Boolean(multinomial),
            ]]
        }
        "LinearRegressionModel" => vec![vec![
            Cell::Double(parsed(state, class, "intercept")?),
            vector("coefficients")?,
            Cell::Double(1.0),
        ]],
        "MultilayerPerceptronClassificationModel" => vec![vec![vector("weights")?]],
        "KMeansModel" => {
            let centers: Vec<Vec<f64>> = parsed(state, class, "clusterCenters")?;
            (centers.into_iter().enumerate())
                .map(|(i, center)| Ok(vec![Cell::Integer(int(i, "a cluster index")?), Cell::Vector(center)]))
                .collect::<Result<_>>()?
        }
        _ => Vec::new(),
    })
}

/// Writes `dir/data/` for a model of `class` whose JSON is `state`.
pub(crate) fn write(dir: &Path, class: &str, state: &Map<String, Value>) -> Result<()> {
    let columns = columns(class);
    let rows = rows(class, state)?;
    let fields: Vec<_> = columns.iter().map(|(name, column)| column.field(name)).collect();
    let arrays = (columns.iter().enumerate())
        .map(|(i, (name, column))| {
            let cells: Vec<Cell> = rows.iter().map(|row| row[i].clone()).collect();
            column.array(name, &cells)
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)?;
    let spark_schema = json!({
        "type": "struct",
        "fields": columns.iter().map(|(name, column)| json!({
            "name": name, "type": column.spark_type(), "nullable": column.field(name).is_nullable(), "metadata": {},
        })).collect::<Vec<_>>(),
    });
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(vec![
            KeyValue::new("org.apache.spark.version".into(), SPARK_VERSION.to_owned()),
            KeyValue::new(
                "org.apache.spark.sql.parquet.row.metadata".into(),
                spark_schema.to_string(),
            ),
        ]))
        .build();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(properties))?;
    writer.write(&batch)?;
    writer.close()?;
    part_files::write(&dir.join(DATA_DIR), "snappy.parquet", &bytes)
}

/// Reads `dir/data/` of a model of `class`: hearth's state fields, as its model JSON holds them.
pub(crate) fn read(dir: &Path, class: &str) -> Result<Map<String, Value>> {
    let folder = dir.join(DATA_DIR);
    let mut rows: Vec<HashMap<&str, Cell>> = Vec::new();
    for file in part_files::list(&folder)? {
        let opened =
            File::open(&file).map_err(|e| ConnectError::Execution(format!("reading {}: {e}", file.display())))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(opened)?.build()?;
        for batch in reader {
            let batch = batch?;
            for row in 0..batch.num_rows() {
                let mut cells = HashMap::new();
                for (name, column) in columns(class) {
                    let array = batch.column_by_name(name).ok_or_else(|| {
                        ConnectError::IllegalArgument(format!("{} has no column {name} for a {class}", file.display()))
                    })?;
                    cells.insert(*name, column.cell(name, array, row)?);
                }
                rows.push(cells);
            }
        }
    }
    state(class, rows).ok_or_else(|| {
        ConnectError::IllegalArgument(format!(
            "{} does not hold a {class}'s data as Spark saves it",
            folder.display()
        ))
    })
}

/// hearth's state fields of a `class` from its data `rows`.
fn state(class: &str, mut rows: Vec<HashMap<&str, Cell>>) -> Option<Map<String, Value>> {
    if class == "KMeansModel" {
        let mut centers: Vec<(i32, Vec<f64>)> = (rows.into_iter())
            .map(
                |mut row| match (row.remove("clusterIdx")?, row.remove("clusterCenter")?) {
                    (Cell::Integer(i), Cell::Vector(v)) => Some((i, v)),
                    _ => None,
                },
            )
            .collect::<Option<_>>()?;
        centers.sort_by_key(|(i, _)| *i);
        let centers: Vec<Vec<f64>> = centers.into_iter().map(|(_, v)| v).collect();
        return Some(Map::from_iter([("clusterCenters".to_owned(), json!(centers))]));
    }
    let mut row = rows.pop()?;
    let mut take = |name: &str| row.remove(name);
    let mut state = Map::new();
    let mut put = |key: &str, value: Value| {
        state.insert(key.to_owned(), value);
    };
    match class {
        "StringIndexerModel" => put("labels", cell_json(take("labelsArray")?)),
        "OneHotEncoderModel" => put("categorySizes", cell_json(take("categorySizes")?)),
        "StandardScalerModel" => {
            put("std", cell_json(take("std")?));
            put("mean", cell_json(take("mean")?));
        }
        "LogisticRegressionModel" => {
            put("numClasses", cell_json(take("numClasses")?));
            put("numFeatures", cell_json(take("numFeatures")?));
            put("interceptVector", cell_json(take("interceptVector")?));
            put("coefficientMatrix", cell_json(take("coefficientMatrix")?));
            put("multinomial", cell_json(take("isMultinomial")?));
        }
        "LinearRegressionModel" => {
            put("intercept", cell_json(take("intercept")?));
            put("coefficients", cell_json(take("coefficients")?));
        }
        "MultilayerPerceptronClassificationModel" => put("weights", cell_json(take("weights")?)),
        _ => return None,
    }
    Some(state)
}

/// A cell as hearth's model JSON holds it (a matrix as its values row after row).
fn cell_json(cell: Cell) -> Value {
    match cell {
        Cell::Integer(v) => json!(v),
        Cell::Double(v) => json!(v),
        Cell::Boolean(v) => json!(v),
        Cell::Integers(v) => json!(v),
        Cell::StringLists(v) => json!(v),
        Cell::Vector(v) => json!(v),
        Cell::Matrix { row_major, .. } => json!(row_major),
    }
}
