//! Vectors a client sends (`createDataFrame` with `Vectors.dense` / `Vectors.sparse`): Spark's `VectorUDT`
//! storage, `struct<type, size, indices, values>`, becomes hearth's vector column (a fixed-size list of
//! `f32`), sparse vectors filled out with zeros. A column's vectors must share one size, as hearth's do.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int8Type, Int32Type, Schema, SchemaRef};
use hearth_exec::vector::{vector_array, vector_type};

use crate::errors::{ConnectError, Result};
use crate::results::vector_struct_fields;

/// `batches` with their `VectorUDT` columns as hearth's vectors, and their schema.
pub(crate) fn from_udt(schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let udt = DataType::Struct(vector_struct_fields());
    let columns: Vec<usize> = (schema.fields().iter().enumerate())
        .filter(|(_, f)| same_fields(f.data_type(), &udt))
        .map(|(i, _)| i)
        .collect();
    if columns.is_empty() {
        return Ok((schema, batches));
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for &i in &columns {
        let name = fields[i].name().clone();
        let dim = first_size(&batches, i, &name)?;
        fields[i] = Field::new(name, vector_type(dim), true);
    }
    let schema = Arc::new(Schema::new(fields));
    let batches = (batches.into_iter())
        .map(|batch| {
            let mut arrays = batch.columns().to_vec();
            for &i in &columns {
                let name = schema.field(i).name();
                let dim = hearth_exec::vector::vector_dim(schema.field(i).data_type()).unwrap_or(0);
                arrays[i] = dense(arrays[i].as_struct(), dim, name)?;
            }
            Ok(RecordBatch::try_new(Arc::clone(&schema), arrays)?)
        })
        .collect::<Result<_>>()?;
    Ok((schema, batches))
}

/// Whether `data_type` is a struct with the fields of `udt` (by name and order; nullability aside).
fn same_fields(data_type: &DataType, udt: &DataType) -> bool {
    match (data_type, udt) {
        (DataType::Struct(a), DataType::Struct(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.name() == y.name())
        }
        _ => false,
    }
}

/// The size of the first vector in column `index`.
fn first_size(batches: &[RecordBatch], index: usize, name: &str) -> Result<usize> {
    for batch in batches {
        let vectors = batch.column(index).as_struct();
        if let Some(row) = (0..vectors.len()).find(|r| vectors.is_valid(*r)) {
            return size(vectors, row, name);
        }
    }
    Ok(0)
}

/// The size of the vector in `row`: a sparse vector's `size`, a dense one's count of values.
fn size(vectors: &StructArray, row: usize, name: &str) -> Result<usize> {
    let sparse = vectors.column(0).as_primitive::<Int8Type>().value(row) == 0;
    let size = if sparse {
        usize::try_from(vectors.column(1).as_primitive::<Int32Type>().value(row)).ok()
    } else {
        Some(vectors.column(3).as_list::<i32>().value(row).len())
    };
    size.ok_or_else(|| {
        ConnectError::IllegalArgument(format!("column {name}: row {row} holds a vector of negative size"))
    })
}

/// The vectors of `vectors` as hearth's, each of `dim` values.
fn dense(vectors: &StructArray, dim: usize, name: &str) -> Result<ArrayRef> {
    let mut values = vec![0.0_f32; vectors.len() * dim];
    for row in (0..vectors.len()).filter(|r| vectors.is_valid(*r)) {
        let got = size(vectors, row, name)?;
        if got != dim {
            return Err(ConnectError::IllegalArgument(format!(
                "column {name}: row {row} holds a vector of {got} values where the column's first holds {dim}; hearth's \
                 vector columns have one size"
            )));
        }
        let slot = &mut values[row * dim..(row + 1) * dim];
        let stored = vectors.column(3).as_list::<i32>().value(row);
        let stored = stored.as_primitive::<Float64Type>();
        if vectors.column(0).as_primitive::<Int8Type>().value(row) == 0 {
            let indices = vectors.column(2).as_list::<i32>().value(row);
            for (index, value) in indices.as_primitive::<Int32Type>().values().iter().zip(stored.values()) {
                let index = usize::try_from(*index).ok().filter(|i| *i < dim).ok_or_else(|| {
                    ConnectError::IllegalArgument(format!(
                        "column {name}: row {row} has index {index} out of its size {dim}"
                    ))
                })?;
                slot[index] = *value as f32;
            }
        } else {
            for (slot, value) in slot.iter_mut().zip(stored.values()) {
                *slot = *value as f32;
            }
        }
    }
    Ok(vector_array(vectors.len(), dim, values, vectors.nulls().cloned())?)
}
