//! The columns `VectorAssembler` concatenates, read once and checked, and the three things done with them
//! without building anything in between: the assembled vectors, the assembled vectors standard-scaled in the
//! same pass, and the per-slot moments `StandardScaler` is fitted with.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::cast::as_float64_array;
use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;
use hearth_exec::vector::{vector_dim, vector_values};

/// Rows assembled together in a buffer small enough to stay in L1 while every column is read into it.
const TILE_ROWS: usize = 32;

/// Independent running sums per column, so a sum vectorises and does not wait on one addition chain.
const LANES: usize = 8;

/// How many vector slots a column of this type fills, or why it cannot be assembled.
pub(crate) fn slot_count(function: &str, field: &Field) -> Result<usize> {
    let data_type = field.data_type();
    if let Some(dim) = vector_dim(data_type) {
        Ok(dim)
    } else if data_type.is_numeric() || *data_type == DataType::Boolean {
        Ok(1)
    } else {
        plan_err!(
            "{function}: data type {data_type} of column {:?} is not supported (numeric, boolean or vector columns only)",
            field.name()
        )
    }
}

/// Fields named by position for argument types (what `return_type` knows of its arguments).
pub(crate) fn argument_fields(types: &[DataType]) -> Vec<FieldRef> {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| Arc::new(Field::new(format!("argument {}", i + 1), t.clone(), true)))
        .collect()
}

/// The dimension of the vectors the columns `fields` assemble to.
pub(crate) fn assembled_dim(function: &str, fields: &[FieldRef]) -> Result<usize> {
    if fields.is_empty() {
        return plan_err!("{function}: expects at least one column to assemble");
    }
    fields.iter().map(|f| slot_count(function, f)).sum()
}

/// One input column's values, nulls already refused (error) or replaced by NaN (keep).
enum Input {
    /// A numeric or boolean column, one slot a row.
    Scalar(ScalarBuffer<f64>),
    /// A vector column, `width` slots a row.
    Vector { values: ScalarBuffer<f32>, width: usize },
}

/// The columns of one batch an assembler concatenates. A NaN in a scalar column under `error` is found while
/// the values are used (assembled or summed), not in a pass of its own.
pub(crate) struct Columns<'a> {
    inputs: Vec<Input>,
    fields: &'a [FieldRef],
    keep: bool,
    rows: usize,
}

impl<'a> Columns<'a> {
    /// Reads the columns `arrays` (described by `fields`), failing under `error` (`keep == false`) at the
    /// first null.
    pub(crate) fn read(arrays: &[ArrayRef], fields: &'a [FieldRef], keep: bool) -> Result<Self> {
        let rows = arrays.first().map_or(0, Array::len);
        let mut inputs = Vec::with_capacity(arrays.len());
        for (array, field) in arrays.iter().zip(fields) {
            let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
            if let (Some(nulls), false) = (&nulls, keep) {
                let row = nulls.iter().position(|valid| !valid).unwrap_or(0);
                return invalid(field, "null", row, rows);
            }
            inputs.push(match vector_dim(field.data_type()) {
                Some(width) => {
                    let (values, _) = vector_values(array)?;
                    let values = match nulls {
                        None => values.values().clone(),
                        Some(nulls) => {
                            let mut values = values.values().to_vec();
                            for row in (0..rows).filter(|&r| nulls.is_null(r)) {
                                values[row * width..(row + 1) * width].fill(f32::NAN);
                            }
                            values.into()
                        }
                    };
                    Input::Vector { values, width }
                }
                None => {
                    let numbers = cast(array, &DataType::Float64)?;
                    let numbers = as_float64_array(&numbers)?.values();
                    Input::Scalar(match nulls {
                        None => numbers.clone(),
                        Some(nulls) => numbers
                            .iter()
                            .zip(nulls.iter())
                            .map(|(&x, valid)| if valid { x } else { f64::NAN })
                            .collect(),
                    })
                }
            });
        }
        Ok(Self {
            inputs,
            fields,
            keep,
            rows,
        })
    }

    /// Under `error`, fails at the first NaN of scalar column `column` when it has one.
    fn refuse_nan(&self, column: usize) -> Result<()> {
        match &self.inputs[column] {
            Input::Scalar(values) if !self.keep => match values.iter().position(|x| x.is_nan()) {
                Some(row) => invalid(&self.fields[column], "NaN", row, self.rows),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The assembled vectors, row-major, each slot's value passed through `slot(index, value)` (a rounding to
    /// `f32`, or a standard scaling in `f64` first) as it is written.
    pub(crate) fn assemble(&self, dim: usize, slot: impl Fn(usize, f64) -> f32) -> Result<Vec<f32>> {
        // Column by column into a tile of a few rows that stays in L1, appended to the output when full: each
        // output byte is written once, and every column is still read front to back.
        let mut out = Vec::with_capacity(self.rows * dim);
        let mut tile = vec![0f32; TILE_ROWS * dim];
        let mut seen_nan = vec![false; self.inputs.len()];
        let stride = dim.max(1);
        for first in (0..self.rows).step_by(TILE_ROWS) {
            let tile = &mut tile[..(self.rows - first).min(TILE_ROWS) * dim];
            let mut offset = 0;
            for (input, seen_nan) in self.inputs.iter().zip(&mut seen_nan) {
                match input {
                    Input::Scalar(values) => {
                        let mut nan = false;
                        for (slots, &x) in tile.chunks_exact_mut(stride).zip(&values[first..]) {
                            nan |= x.is_nan();
                            slots[offset] = slot(offset, x);
                        }
                        *seen_nan |= nan;
                        offset += 1;
                    }
                    Input::Vector { values, width } => {
                        // Slot by slot, like scalar columns: the slot's scaling is fixed through the loop.
                        for i in 0..*width {
                            let column = values[first * width + i..].iter().step_by(*width);
                            for (slots, &x) in tile.chunks_exact_mut(stride).zip(column) {
                                slots[offset + i] = slot(offset + i, f64::from(x));
                            }
                        }
                        offset += width;
                    }
                }
            }
            out.extend_from_slice(tile);
        }
        for (column, _) in seen_nan.iter().enumerate().filter(|(_, seen)| **seen) {
            self.refuse_nan(column)?;
        }
        Ok(out)
    }

    /// Per-slot moments of the vectors these columns assemble to, without writing them: scalar columns are
    /// summed where they lie, in `f64` as Spark (whose vectors are doubles), in vectorising lanes; twice each
    /// (mean, then squared deviations), the second time from cache.
    pub(crate) fn moments(&self) -> Result<SlotMoments> {
        let mut moments = SlotMoments {
            count: self.rows as i64,
            ..SlotMoments::default()
        };
        if self.rows == 0 {
            return Ok(moments);
        }
        let n = self.rows as f64;
        for (column, input) in self.inputs.iter().enumerate() {
            match input {
                Input::Scalar(values) => {
                    let mean = lane_sum(values, |x| x) / n;
                    if mean.is_nan() {
                        self.refuse_nan(column)?;
                    }
                    moments.mean.push(mean);
                    moments.m2.push(lane_sum(values, |x| (x - mean).powi(2)));
                }
                Input::Vector { values, width } => {
                    let slots = SlotMoments::of_values(values, *width);
                    moments.mean.extend(slots.mean);
                    moments.m2.extend(slots.m2);
                }
            }
        }
        Ok(moments)
    }
}

/// The error for an invalid value under `handle_invalid = "error"`.
fn invalid<T>(field: &Field, what: &str, row: usize, rows: usize) -> Result<T> {
    exec_err!(
        "VectorAssembler: {what} in column {:?} (row {row} of a {rows}-row batch) with handle_invalid = \"error\"; \
         use \"skip\" to drop such rows or \"keep\" to assemble NaN",
        field.name()
    )
}

/// Per-slot mean and sum of squared deviations of `count` vectors, in `f64`.
#[derive(Debug, Default)]
pub(crate) struct SlotMoments {
    pub(crate) count: i64,
    pub(crate) mean: Vec<f64>,
    pub(crate) m2: Vec<f64>,
}

impl SlotMoments {
    /// Moments of `width`-slot rows: two passes (mean, then squared deviations), accurate and vectorisable.
    /// [`SlotMoments::of_values`] is quicker for narrow rows stored together.
    pub(crate) fn of_rows<'a>(rows: impl Iterator<Item = &'a [f32]> + Clone, width: usize) -> Self {
        let count = rows.clone().count();
        let mut mean = vec![0.0f64; width];
        let mut m2 = vec![0.0f64; width];
        if count > 0 {
            for row in rows.clone() {
                for (m, &x) in mean.iter_mut().zip(row) {
                    *m += f64::from(x);
                }
            }
            mean.iter_mut().for_each(|m| *m /= count as f64);
            for row in rows {
                for ((s, &m), &x) in m2.iter_mut().zip(&mean).zip(row) {
                    *s += (f64::from(x) - m).powi(2);
                }
            }
        }
        Self {
            count: count as i64,
            mean,
            m2,
        }
    }

    /// Moments of the `width`-slot rows of `values` (row-major), as [`SlotMoments::of_rows`]; narrow rows (a
    /// one-hot vector) with the width fixed at compile time, so each pass is straight-line code.
    pub(crate) fn of_values(values: &[f32], width: usize) -> Self {
        match width {
            1 => Self::of_narrow_rows::<1>(values),
            2 => Self::of_narrow_rows::<2>(values),
            3 => Self::of_narrow_rows::<3>(values),
            4 => Self::of_narrow_rows::<4>(values),
            _ => Self::of_rows(values.chunks_exact(width.max(1)), width),
        }
    }

    fn of_narrow_rows<const W: usize>(values: &[f32]) -> Self {
        let (rows, _) = values.as_chunks::<W>();
        let mut mean = [0.0f64; W];
        for row in rows {
            for (m, &x) in mean.iter_mut().zip(row) {
                *m += f64::from(x);
            }
        }
        if !rows.is_empty() {
            mean.iter_mut().for_each(|m| *m /= rows.len() as f64);
        }
        let mut m2 = [0.0f64; W];
        for row in rows {
            for ((s, &m), &x) in m2.iter_mut().zip(&mean).zip(row) {
                *s += (f64::from(x) - m).powi(2);
            }
        }
        Self {
            count: rows.len() as i64,
            mean: mean.to_vec(),
            m2: m2.to_vec(),
        }
    }
}

/// `Σ f(x)` over `values`, in `LANES` independent running sums.
fn lane_sum(values: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let chunks = values.chunks_exact(LANES);
    let rest: f64 = chunks.remainder().iter().map(|&x| f(x)).sum();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane += f(x);
        }
    }
    lanes.iter().sum::<f64>() + rest
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::Float64Array;

    use super::*;
    use hearth_exec::vector::vector_array;

    #[test]
    fn laned_sums_equal_plain_sums() {
        let values: Vec<f64> = (0..1003).map(|i| f64::from(i) * 0.25).collect();
        let plain: f64 = values.iter().sum();
        assert_eq!(lane_sum(&values, |x| x), plain);
    }

    #[test]
    fn assembled_moments_equal_moments_of_the_assembled_rows() {
        let scalar: Vec<f64> = (0..37).map(|i| f64::from(i).sin() * 3.0 + 1.0).collect();
        let vector: Vec<f32> = (0..74).map(|i| (i % 5) as f32).collect();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(scalar)),
            vector_array(37, 2, vector, None).unwrap(),
        ];
        let fields: Vec<FieldRef> = arrays
            .iter()
            .map(|a| Arc::new(Field::new("c", a.data_type().clone(), true)))
            .collect();
        let columns = Columns::read(&arrays, &fields, false).unwrap();
        let rows = columns.assemble(3, |_, x| x as f32).unwrap();
        let direct = SlotMoments::of_rows(rows.chunks_exact(3), 3);
        assert_eq!(format!("{:?}", SlotMoments::of_values(&rows, 3)), format!("{direct:?}"));
        let fused = columns.moments().unwrap();
        assert_eq!(fused.count, direct.count);
        for (a, b) in fused
            .mean
            .iter()
            .chain(&fused.m2)
            .zip(direct.mean.iter().chain(&direct.m2))
        {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
}
