//! polars interop (the `polars` feature): a hearth data frame's rows as a polars `DataFrame`, and a polars
//! `DataFrame` as a hearth data frame, through Arrow's C data interface — numeric and vector columns' buffers
//! move across as they are, no row is looped over (polars keeps strings as views: they are converted, in
//! bulk, each way). A vector column (`FixedSizeList<Float32>`) is a polars `Array(Float32, n)` column and
//! comes back as a vector; polars' `List` columns come back as `LargeList`, its strings as `Utf8` (nested ones
//! included), which every hearth stage reads. Dictionary columns go to polars as their values. A column's
//! `ml_attr` metadata (a StringIndexer's labels) stays behind: polars has no place for it.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use datafusion::prelude::DataFrame;
//! use hearth_display::polars::{FromPolars, ToPolars};
//! use hearth_exec::session::Session;
//!
//! let session = Session::builder().local(2);
//! let df = session
//!     .context()
//!     .sql("SELECT x, x * 2 AS y FROM generate_series(1, 5) AS t(x)")
//!     .await
//!     .unwrap();
//! let explored = df.to_polars().await.unwrap();
//! assert_eq!(explored.height(), 5);
//! let back = DataFrame::from_polars(&session, &explored).unwrap();
//! assert_eq!(back.count().await.unwrap(), 5);
//! # });
//! ```

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, make_array, new_empty_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema};
use datafusion::arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi, to_ffi};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;
use polars_arrow::ffi as polars_ffi;
use polars_core::prelude::{Column, CompatLevel, DataFrame as PolarsFrame, IntoColumn, PlSmallStr, Series};

/// The polars crates this interop is built with: a `:dep polars = "0.55"` of the same version has the same
/// `DataFrame`.
pub use {polars_arrow, polars_core};

// Both crates' structs are the C data interface's `ArrowArray` and `ArrowSchema` (`#[repr(C)]`, the same fields
// in the same order); the transmutes below rely on it.
const _: () = {
    use std::mem::{align_of, size_of};
    assert!(size_of::<FFI_ArrowArray>() == size_of::<polars_ffi::ArrowArray>());
    assert!(align_of::<FFI_ArrowArray>() == align_of::<polars_ffi::ArrowArray>());
    assert!(size_of::<FFI_ArrowSchema>() == size_of::<polars_ffi::ArrowSchema>());
    assert!(align_of::<FFI_ArrowSchema>() == align_of::<polars_ffi::ArrowSchema>());
};

/// Whether polars (with the data types this build enables) holds a column of `data_type`; a dictionary only at
/// the top, where [`to_polars_array`] decodes it.
fn polars_holds(data_type: &DataType, top: bool) -> bool {
    match data_type {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::Date32
        | DataType::Timestamp(_, None) => true,
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            polars_holds(item.data_type(), false)
        }
        DataType::Dictionary(_, values) => top && polars_holds(values, false),
        _ => false,
    }
}

/// One Arrow array of hearth's, as polars' Arrow array: its buffers handed over through the C data interface
/// (a dictionary's values first decoded).
fn to_polars_array(name: &str, array: &ArrayRef) -> Result<Box<dyn polars_arrow::array::Array>> {
    if !polars_holds(array.data_type(), true) {
        return Err(HearthError::invalid_data(
            "polars",
            name,
            format!("polars cannot hold a column of {} in this build", array.data_type()),
        ));
    }
    let decoded;
    let array = match array.data_type() {
        DataType::Dictionary(_, values) => {
            decoded = cast(array, values)
                .map_err(|e| HearthError::invalid_data("polars", name, "decoding its dictionary").caused_by(e))?;
            &decoded
        }
        _ => array,
    };
    let (array, schema) = to_ffi(&array.to_data())
        .map_err(|e| HearthError::invalid_data("polars", name, "exporting its buffers").caused_by(e))?;
    // SAFETY: the structs are layout-identical (checked above); ownership moves with the release callbacks,
    // which run when the receiving side drops them, also on its error paths.
    let (array, schema) = unsafe {
        (
            std::mem::transmute::<FFI_ArrowArray, polars_ffi::ArrowArray>(array),
            std::mem::transmute::<FFI_ArrowSchema, polars_ffi::ArrowSchema>(schema),
        )
    };
    // SAFETY: `schema` and `array` were exported together just above.
    let field = unsafe { polars_ffi::import_field_from_c(&schema) }
        .map_err(|e| HearthError::invalid_data("polars", name, "importing its type into polars").caused_by(e))?;
    unsafe { polars_ffi::import_array_from_c(array, field.dtype) }
        .map_err(|e| HearthError::invalid_data("polars", name, "importing it into polars").caused_by(e))
}

/// `data_type` with polars' views replaced by the types hearth's stages read (`Utf8View` → `Utf8`,
/// `BinaryView` → `Binary`), nested ones included.
fn readable(data_type: &DataType) -> DataType {
    let item = |field: &FieldRef| Arc::new(field.as_ref().clone().with_data_type(readable(field.data_type())));
    match data_type {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(field) => DataType::List(item(field)),
        DataType::LargeList(field) => DataType::LargeList(item(field)),
        DataType::FixedSizeList(field, size) => DataType::FixedSizeList(item(field), *size),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(item).collect()),
        DataType::Dictionary(keys, values) => DataType::Dictionary(keys.clone(), Box::new(readable(values))),
        other => other.clone(),
    }
}

/// One Arrow array of polars', as hearth's: its buffers handed over, then cast to [`readable`] types.
fn from_polars_array(name: &str, array: Box<dyn polars_arrow::array::Array>) -> Result<(Field, ArrayRef)> {
    // The array's own type describes it (the schema's could differ in nullability or nesting names).
    let field = polars_arrow::datatypes::Field::new(PlSmallStr::from_str(name), array.dtype().clone(), true);
    let schema = polars_ffi::export_field_to_c(&field);
    let array = polars_ffi::export_array_to_c(array);
    // SAFETY: as in `to_polars_array`, the other way.
    let (schema, array) = unsafe {
        (
            std::mem::transmute::<polars_ffi::ArrowSchema, FFI_ArrowSchema>(schema),
            std::mem::transmute::<polars_ffi::ArrowArray, FFI_ArrowArray>(array),
        )
    };
    let imported = Field::try_from(&schema)
        .map_err(|e| HearthError::invalid_data("polars", name, "reading its type from polars").caused_by(e))?;
    // SAFETY: `schema` describes `array`: both were exported from the same polars array just above.
    let data = unsafe { from_ffi(array, &schema) }
        .map_err(|e| HearthError::invalid_data("polars", name, "reading it from polars").caused_by(e))?;
    let array = make_array(data);
    let wanted = readable(imported.data_type());
    let array = if &wanted == imported.data_type() {
        array
    } else {
        cast(&array, &wanted)
            .map_err(|e| HearthError::invalid_data("polars", name, format!("casting it to {wanted}")).caused_by(e))?
    };
    Ok((imported.with_data_type(wanted), array))
}

/// Rows as a polars `DataFrame`: one polars column per Arrow column, one chunk per batch.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::array::{Int64Array, RecordBatch};
/// use hearth_display::polars::batches_to_polars;
/// let batch = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1, 2, 3])) as _)]).unwrap();
/// let frame = batches_to_polars(&batch.schema(), &[batch.clone(), batch]).unwrap();
/// assert_eq!(frame.shape(), (6, 1));
/// ```
pub fn batches_to_polars(schema: &Schema, batches: &[RecordBatch]) -> Result<PolarsFrame> {
    let height = batches.iter().map(RecordBatch::num_rows).sum();
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let chunks = if batches.is_empty() {
                vec![to_polars_array(field.name(), &new_empty_array(field.data_type()))?]
            } else {
                batches
                    .iter()
                    .map(|batch| to_polars_array(field.name(), batch.column(i)))
                    .collect::<Result<Vec<_>>>()?
            };
            let series = Series::from_arrow_chunks(PlSmallStr::from_str(field.name()), chunks).map_err(|e| {
                HearthError::invalid_data("polars", field.name(), "making a polars column").caused_by(e)
            })?;
            Ok(series.into_column())
        })
        .collect::<Result<Vec<Column>>>()?;
    PolarsFrame::new(height, columns)
        .map_err(|e| HearthError::invalid_param("to_polars", "columns", "making a polars data frame").caused_by(e))
}

/// A polars `DataFrame`'s rows as Arrow batches (one per aligned chunk) and their schema.
///
/// ```
/// use hearth_display::polars::polars_core::prelude::{Column, DataFrame as PolarsFrame};
/// use hearth_display::polars::polars_to_batches;
/// let frame = PolarsFrame::new(3, vec![Column::new("s".into(), ["a", "b", "c"])]).unwrap();
/// let (schema, batches) = polars_to_batches(&frame).unwrap();
/// assert_eq!(schema.field(0).data_type(), &datafusion::arrow::datatypes::DataType::Utf8);
/// assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
/// ```
pub fn polars_to_batches(frame: &PolarsFrame) -> Result<(Arc<Schema>, Vec<RecordBatch>)> {
    // The columns' types as hearth reads them, from an empty array of each (a frame without rows may have no
    // chunk to take them from).
    let fields = frame
        .columns()
        .iter()
        .map(|column| {
            let empty = column
                .as_materialized_series()
                .clear()
                .to_arrow(0, CompatLevel::newest());
            from_polars_array(column.name().as_str(), empty).map(|(field, _)| field)
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = Arc::new(Schema::new(fields));
    let mut frame = frame.clone();
    frame.align_chunks_par();
    let mut batches = Vec::new();
    for chunk in frame.iter_chunks(CompatLevel::newest(), false) {
        // A frame of no columns still has rows.
        let rows = RecordBatchOptions::new().with_row_count(Some(chunk.len()));
        let (polars_schema, arrays) = chunk.into_schema_and_arrays();
        let columns = polars_schema
            .iter_values()
            .zip(arrays)
            .map(|(field, array)| from_polars_array(field.name.as_str(), array).map(|(_, array)| array))
            .collect::<Result<Vec<_>>>()?;
        batches.push(RecordBatch::try_new_with_options(Arc::clone(&schema), columns, &rows)?);
    }
    Ok((schema, batches))
}

/// A hearth data frame's rows as a polars `DataFrame`.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
/// use hearth_display::polars::ToPolars;
/// use hearth_exec::session::Session;
/// let df = Session::builder().local(1).context().sql("SELECT 'a' AS s, 1.5 AS x").await.unwrap();
/// let frame = df.to_polars().await.unwrap();
/// assert_eq!(frame.get_column_names(), ["s", "x"]);
/// # });
/// ```
pub trait ToPolars {
    /// Runs the query and hands its rows to polars, column buffers moved across, vectors as `Array` columns.
    fn to_polars(&self) -> impl Future<Output = Result<PolarsFrame>> + Send;
}

impl ToPolars for DataFrame {
    async fn to_polars(&self) -> Result<PolarsFrame> {
        let schema = self.schema().as_arrow().clone();
        let batches = self.clone().collect().await?;
        batches_to_polars(&schema, &batches)
    }
}

/// A hearth data frame made from a polars `DataFrame`.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
/// use datafusion::prelude::DataFrame;
/// use hearth_display::polars::FromPolars;
/// use hearth_display::polars::polars_core::prelude::{Column, DataFrame as PolarsFrame};
/// use hearth_exec::session::Session;
/// let session = Session::builder().local(1);
/// let frame = PolarsFrame::new(2, vec![Column::new("x".into(), [1.0f64, 2.0])]).unwrap();
/// let df = DataFrame::from_polars(&session, &frame).unwrap();
/// assert_eq!(df.count().await.unwrap(), 2);
/// # });
/// ```
pub trait FromPolars: Sized {
    /// The rows of `frame` as a data frame of `session`, ready for a pipeline.
    fn from_polars(session: &Session, frame: &PolarsFrame) -> Result<Self>;
}

impl FromPolars for DataFrame {
    fn from_polars(session: &Session, frame: &PolarsFrame) -> Result<Self> {
        let (schema, batches) = polars_to_batches(frame)?;
        session.read_batches(schema, batches)
    }
}
