//! The columns of a saved model's `data/` as Spark writes them: each column's Arrow type, its type in
//! Spark's JSON schema (which Spark keeps in the Parquet footer, `org.apache.spark.sql.parquet.row.metadata`,
//! so that it reads vectors and matrices back as `VectorUDT`/`MatrixUDT`), and its values written and read.
//!
//! Vectors are `struct<type: tinyint, size: int, indices: array<int>, values: array<double>>` (type 1 dense,
//! 0 sparse); matrices `struct<type, numRows, numCols, colPtrs, rowIndices, values, isTransposed>` (type 1
//! dense, column-major unless transposed; 0 compressed sparse columns, or rows when transposed).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int8Array, Int32Array, ListArray, PrimitiveArray,
    StringArray, StructArray, new_null_array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{ArrowPrimitiveType, DataType, Field, Fields, Float64Type, Int8Type, Int32Type};
use serde_json::{Value, json};

use crate::errors::{ConnectError, Result};
use crate::results::vector_struct_fields;

/// What one column of a model's data holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Column {
    /// `int`.
    Integer,
    /// `double`.
    Double,
    /// `boolean`.
    Boolean,
    /// `array<int>`.
    Integers,
    /// `array<array<string>>`.
    StringLists,
    /// Spark's `VectorUDT`.
    Vector,
    /// Spark's `MatrixUDT`.
    Matrix,
}

/// A value of a [`Column`], one row's.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cell {
    Integer(i32),
    Double(f64),
    Boolean(bool),
    Integers(Vec<i32>),
    StringLists(Vec<Vec<String>>),
    /// A vector's values (read sparse vectors come back dense).
    Vector(Vec<f64>),
    /// A matrix: rows, columns and its values row after row (read sparse matrices come back dense).
    Matrix {
        rows: usize,
        cols: usize,
        row_major: Vec<f64>,
    },
}

fn list_of(item: DataType, nullable: bool) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(item, nullable)))
}

fn matrix_fields() -> Fields {
    Fields::from(vec![
        Field::new("type", DataType::Int8, false),
        Field::new("numRows", DataType::Int32, false),
        Field::new("numCols", DataType::Int32, false),
        Field::new("colPtrs", list_of(DataType::Int32, false), true),
        Field::new("rowIndices", list_of(DataType::Int32, false), true),
        Field::new("values", list_of(DataType::Float64, false), true),
        Field::new("isTransposed", DataType::Boolean, false),
    ])
}

impl Column {
    /// The Arrow field of a column `name` of this kind.
    pub(crate) fn field(self, name: &str) -> Field {
        let (data_type, nullable) = match self {
            Self::Integer => (DataType::Int32, false),
            Self::Double => (DataType::Float64, false),
            Self::Boolean => (DataType::Boolean, false),
            Self::Integers => (list_of(DataType::Int32, false), true),
            Self::StringLists => (list_of(list_of(DataType::Utf8, true), true), true),
            Self::Vector => (DataType::Struct(vector_struct_fields()), true),
            Self::Matrix => (DataType::Struct(matrix_fields()), true),
        };
        Field::new(name, data_type, nullable)
    }

    /// The column's type in Spark's JSON schema.
    pub(crate) fn spark_type(self) -> Value {
        let array = |element: &str, contains_null: bool| json!({"type": "array", "elementType": element, "containsNull": contains_null});
        let field = |name: &str, data_type: Value, nullable: bool| json!({"name": name, "type": data_type, "nullable": nullable, "metadata": {}});
        match self {
            Self::Integer => json!("integer"),
            Self::Double => json!("double"),
            Self::Boolean => json!("boolean"),
            Self::Integers => array("integer", false),
            Self::StringLists => {
                json!({"type": "array", "elementType": array("string", true), "containsNull": true})
            }
            Self::Vector => json!({
                "type": "udt",
                "class": "org.apache.spark.ml.linalg.VectorUDT",
                "pyClass": "pyspark.ml.linalg.VectorUDT",
                "sqlType": {"type": "struct", "fields": [
                    field("type", json!("byte"), false),
                    field("size", json!("integer"), true),
                    field("indices", array("integer", false), true),
                    field("values", array("double", false), true),
                ]},
            }),
            Self::Matrix => json!({
                "type": "udt",
                "class": "org.apache.spark.ml.linalg.MatrixUDT",
                "pyClass": "pyspark.ml.linalg.MatrixUDT",
                "sqlType": {"type": "struct", "fields": [
                    field("type", json!("byte"), false),
                    field("numRows", json!("integer"), false),
                    field("numCols", json!("integer"), false),
                    field("colPtrs", array("integer", false), true),
                    field("rowIndices", array("integer", false), true),
                    field("values", array("double", false), true),
                    field("isTransposed", json!("boolean"), false),
                ]},
            }),
        }
    }

    /// The column holding `cells`, each of this kind.
    pub(crate) fn array(self, name: &str, cells: &[Cell]) -> Result<ArrayRef> {
        let wrong = || ConnectError::Execution(format!("a model's data column {name} got a value of another type"));
        Ok(match self {
            Self::Integer => Arc::new(
                (cells.iter())
                    .map(|c| if let Cell::Integer(v) = c { Ok(*v) } else { Err(wrong()) })
                    .collect::<Result<Int32Array>>()?,
            ),
            Self::Double => Arc::new(
                (cells.iter())
                    .map(|c| if let Cell::Double(v) = c { Ok(*v) } else { Err(wrong()) })
                    .collect::<Result<Float64Array>>()?,
            ),
            Self::Boolean => Arc::new(BooleanArray::from(
                (cells.iter())
                    .map(|c| if let Cell::Boolean(v) = c { Ok(*v) } else { Err(wrong()) })
                    .collect::<Result<Vec<bool>>>()?,
            )),
            Self::Integers => {
                let lists: Vec<&[i32]> = (cells.iter())
                    .map(|c| {
                        if let Cell::Integers(v) = c {
                            Ok(v.as_slice())
                        } else {
                            Err(wrong())
                        }
                    })
                    .collect::<Result<_>>()?;
                Arc::new(number_lists::<Int32Type>(&lists)?)
            }
            Self::StringLists => {
                let lists: Vec<&Vec<Vec<String>>> = (cells.iter())
                    .map(|c| {
                        if let Cell::StringLists(v) = c {
                            Ok(v)
                        } else {
                            Err(wrong())
                        }
                    })
                    .collect::<Result<_>>()?;
                Arc::new(string_lists(&lists)?)
            }
            Self::Vector => {
                let vectors: Vec<&Vec<f64>> = (cells.iter())
                    .map(|c| if let Cell::Vector(v) = c { Ok(v) } else { Err(wrong()) })
                    .collect::<Result<_>>()?;
                dense_vectors(&vectors)?
            }
            Self::Matrix => dense_matrices(cells).ok_or_else(wrong)??,
        })
    }

    /// Row `row` of `array`, a column of this kind named `name`.
    pub(crate) fn cell(self, name: &str, array: &ArrayRef, row: usize) -> Result<Cell> {
        let wrong = || ConnectError::Execution(format!("the model's data column {name} is not a Spark {self:?}"));
        Ok(match self {
            Self::Integer => Cell::Integer(array.as_primitive_opt::<Int32Type>().ok_or_else(wrong)?.value(row)),
            Self::Double => Cell::Double(array.as_primitive_opt::<Float64Type>().ok_or_else(wrong)?.value(row)),
            Self::Boolean => Cell::Boolean(array.as_boolean_opt().ok_or_else(wrong)?.value(row)),
            Self::Integers => Cell::Integers(ints(&array.as_list_opt::<i32>().ok_or_else(wrong)?.value(row))),
            Self::StringLists => {
                let outer = array.as_list_opt::<i32>().ok_or_else(wrong)?.value(row);
                let outer = outer.as_list_opt::<i32>().ok_or_else(wrong)?;
                let lists = (0..outer.len())
                    .map(|i| {
                        let inner = outer.value(i);
                        let strings = inner.as_string_opt::<i32>().ok_or_else(wrong)?;
                        Ok(strings.iter().map(|s| s.unwrap_or_default().to_owned()).collect())
                    })
                    .collect::<Result<_>>()?;
                Cell::StringLists(lists)
            }
            Self::Vector => Cell::Vector(read_vector(array.as_struct_opt().ok_or_else(wrong)?, row).ok_or_else(wrong)?),
            Self::Matrix => read_matrix(array.as_struct_opt().ok_or_else(wrong)?, row).ok_or_else(wrong)?,
        })
    }
}

/// Lists of numbers, none of them null, as Spark's `array<int>` / `array<double>`.
fn number_lists<T: ArrowPrimitiveType>(lists: &[&[T::Native]]) -> Result<ListArray> {
    let values = PrimitiveArray::<T>::from_iter_values(lists.iter().flat_map(|l| l.iter().copied()));
    let offsets = OffsetBuffer::from_lengths(lists.iter().map(|l| l.len()));
    Ok(ListArray::try_new(
        Arc::new(Field::new_list_field(T::DATA_TYPE, false)),
        offsets,
        Arc::new(values),
        None,
    )?)
}

fn string_lists(rows: &[&Vec<Vec<String>>]) -> Result<ListArray> {
    let inner: Vec<&Vec<String>> = rows.iter().flat_map(|r| r.iter()).collect();
    let strings: StringArray = inner.iter().flat_map(|l| l.iter()).map(Some).collect();
    let inner_lists = ListArray::try_new(
        Arc::new(Field::new_list_field(DataType::Utf8, true)),
        OffsetBuffer::from_lengths(inner.iter().map(|l| l.len())),
        Arc::new(strings),
        None,
    )?;
    Ok(ListArray::try_new(
        Arc::new(Field::new_list_field(list_of(DataType::Utf8, true), true)),
        OffsetBuffer::from_lengths(rows.iter().map(|r| r.len())),
        Arc::new(inner_lists),
        None,
    )?)
}

fn dense_vectors(vectors: &[&Vec<f64>]) -> Result<ArrayRef> {
    let rows = vectors.len();
    let fields = vector_struct_fields();
    let values: Vec<&[f64]> = vectors.iter().map(|v| v.as_slice()).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from(vec![1; rows])),
        new_null_array(&DataType::Int32, rows),
        new_null_array(fields[2].data_type(), rows),
        Arc::new(number_lists::<Float64Type>(&values)?),
    ];
    Ok(Arc::new(StructArray::try_new(fields, columns, None)?))
}

/// Dense matrices as Spark stores a fitted model's (row after row: `isTransposed`); `None` when a cell is not
/// a matrix.
fn dense_matrices(cells: &[Cell]) -> Option<Result<ArrayRef>> {
    let mut shapes = Vec::with_capacity(cells.len());
    let mut values: Vec<&[f64]> = Vec::with_capacity(cells.len());
    for cell in cells {
        let Cell::Matrix { rows, cols, row_major } = cell else {
            return None;
        };
        shapes.push((i32::try_from(*rows).ok()?, i32::try_from(*cols).ok()?));
        values.push(row_major);
    }
    let n = cells.len();
    let fields = matrix_fields();
    let built = (|| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int8Array::from(vec![1; n])),
            Arc::new(Int32Array::from(shapes.iter().map(|s| s.0).collect::<Vec<_>>())),
            Arc::new(Int32Array::from(shapes.iter().map(|s| s.1).collect::<Vec<_>>())),
            new_null_array(fields[3].data_type(), n),
            new_null_array(fields[4].data_type(), n),
            Arc::new(number_lists::<Float64Type>(&values)?),
            Arc::new(BooleanArray::from(vec![true; n])),
        ];
        Ok(Arc::new(StructArray::try_new(fields, columns, None)?) as ArrayRef)
    })();
    Some(built)
}

fn ints(array: &ArrayRef) -> Vec<i32> {
    array
        .as_primitive_opt::<Int32Type>()
        .map(|a| a.values().to_vec())
        .unwrap_or_default()
}

fn doubles(array: &ArrayRef) -> Vec<f64> {
    array
        .as_primitive_opt::<Float64Type>()
        .map(|a| a.values().to_vec())
        .unwrap_or_default()
}

fn list_cell(column: &ArrayRef, row: usize) -> Option<ArrayRef> {
    let list = column.as_list_opt::<i32>()?;
    (!list.is_null(row)).then(|| list.value(row))
}

fn struct_field<'a>(vector: &'a StructArray, name: &str) -> Option<&'a ArrayRef> {
    vector.column_by_name(name)
}

/// Row `row` of a `VectorUDT` column, dense.
fn read_vector(vector: &StructArray, row: usize) -> Option<Vec<f64>> {
    let kind = struct_field(vector, "type")?.as_primitive_opt::<Int8Type>()?.value(row);
    let values = doubles(&list_cell(struct_field(vector, "values")?, row)?);
    match kind {
        1 => Some(values),
        0 => {
            let size = struct_field(vector, "size")?
                .as_primitive_opt::<Int32Type>()?
                .value(row);
            let indices = ints(&list_cell(struct_field(vector, "indices")?, row)?);
            let mut dense = vec![0.0; usize::try_from(size).ok()?];
            for (index, value) in indices.iter().zip(values) {
                *dense.get_mut(usize::try_from(*index).ok()?)? = value;
            }
            Some(dense)
        }
        _ => None,
    }
}

/// Row `row` of a `MatrixUDT` column, dense and row after row.
fn read_matrix(matrix: &StructArray, row: usize) -> Option<Cell> {
    let int = |name: &str| -> Option<usize> {
        usize::try_from(struct_field(matrix, name)?.as_primitive_opt::<Int32Type>()?.value(row)).ok()
    };
    let kind = struct_field(matrix, "type")?.as_primitive_opt::<Int8Type>()?.value(row);
    let (rows, cols) = (int("numRows")?, int("numCols")?);
    let transposed = struct_field(matrix, "isTransposed")?.as_boolean_opt()?.value(row);
    let values = doubles(&list_cell(struct_field(matrix, "values")?, row)?);
    let mut row_major = vec![0.0; rows.checked_mul(cols)?];
    let mut put = |r: usize, c: usize, v: f64| -> Option<()> {
        *row_major.get_mut(r.checked_mul(cols)?.checked_add(c)?)? = v;
        Some(())
    };
    match kind {
        1 => {
            for (i, v) in values.iter().enumerate() {
                let (r, c) = if transposed {
                    (i / cols.max(1), i % cols.max(1))
                } else {
                    (i % rows.max(1), i / rows.max(1))
                };
                put(r, c, *v)?;
            }
        }
        0 => {
            // Compressed sparse columns; when transposed, the same arrays describe rows.
            let pointers = ints(&list_cell(struct_field(matrix, "colPtrs")?, row)?);
            let indices = ints(&list_cell(struct_field(matrix, "rowIndices")?, row)?);
            for (major, bounds) in pointers.windows(2).enumerate() {
                let (start, end) = (usize::try_from(bounds[0]).ok()?, usize::try_from(bounds[1]).ok()?);
                for k in start..end {
                    let minor = usize::try_from(*indices.get(k)?).ok()?;
                    let (r, c) = if transposed { (major, minor) } else { (minor, major) };
                    put(r, c, *values.get(k)?)?;
                }
            }
        }
        _ => return None,
    }
    Some(Cell::Matrix { rows, cols, row_major })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_what_was_written() {
        let cases = [
            (Column::Integer, Cell::Integer(7)),
            (Column::Double, Cell::Double(-0.25)),
            (Column::Boolean, Cell::Boolean(true)),
            (Column::Integers, Cell::Integers(vec![3, 1])),
            (
                Column::StringLists,
                Cell::StringLists(vec![vec!["a".into(), "b".into()], vec![]]),
            ),
            (Column::Vector, Cell::Vector(vec![1.5, 0.0, -2.0])),
            (
                Column::Matrix,
                Cell::Matrix {
                    rows: 2,
                    cols: 3,
                    row_major: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                },
            ),
        ];
        for (column, cell) in cases {
            let array = column.array("c", std::slice::from_ref(&cell)).unwrap();
            assert_eq!(array.data_type(), column.field("c").data_type());
            assert_eq!(column.cell("c", &array, 0).unwrap(), cell);
        }
    }
}
