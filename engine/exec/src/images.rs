//! Image data sets as tables: MNIST and Fashion-MNIST IDX files, and CIFAR-10 binary batches. Each becomes an
//! `image` column of `FixedSizeList<Float32>` — channels × height × width, row-major, each pixel divided by 255
//! as the notebooks scale them — and a `Float64` `label`; gzip files are read as they are.
//!
//! ```no_run
//! # async fn run() -> hearth_exec::error::Result<()> {
//! use hearth_exec::session::Session;
//! let session = Session::builder().local(2);
//! let digits = session.read_idx("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")?;
//! let cifar = session.read_cifar10(["data_batch_1.bin", "data_batch_2.bin"])?;
//! # Ok(()) }
//! ```

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, FixedSizeListArray, Float32Array, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::DataFrame;

use crate::error::{HearthError, Result};
use crate::session::Session;

/// The IDX magic numbers: unsigned bytes, 3 dimensions (images) or 1 (labels).
const IDX_IMAGES: u32 = 0x0803;
const IDX_LABELS: u32 = 0x0801;
/// A CIFAR-10 record: a label byte, then 1,024 red, 1,024 green and 1,024 blue bytes of a 32×32 image.
const CIFAR_SIDE: usize = 32;
const CIFAR_RECORD: usize = 1 + 3 * CIFAR_SIDE * CIFAR_SIDE;

/// A file's bytes, gunzipped when it starts with gzip's magic.
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| HearthError::persistence(path, "cannot be read").caused_by(e))?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(raw.as_slice())
        .read_to_end(&mut bytes)
        .map_err(|e| HearthError::persistence(path, "not readable as gzip").caused_by(e))?;
    Ok(bytes)
}

/// The dimensions and the data of an IDX file of unsigned bytes with `magic`.
fn idx(path: &Path, magic: u32) -> Result<(Vec<usize>, Vec<u8>)> {
    let bytes = read_bytes(path)?;
    let word = |i: usize| -> Option<u32> { Some(u32::from_be_bytes(bytes.get(4 * i..4 * i + 4)?.try_into().ok()?)) };
    let found = word(0).ok_or_else(|| HearthError::persistence(path, "shorter than an IDX header"))?;
    if found != magic {
        return Err(HearthError::persistence(
            path,
            format!(
                "IDX magic {found:#06x}, expected {magic:#06x} (unsigned bytes, {} dimensions)",
                magic & 0xff
            ),
        ));
    }
    let dims: Vec<usize> = (1..=(magic & 0xff) as usize)
        .map(|i| word(i).map(|d| d as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| HearthError::persistence(path, "the IDX header ends early"))?;
    let start = 4 * (dims.len() + 1);
    let expected: usize = dims.iter().product();
    if bytes.len() - start != expected {
        return Err(HearthError::persistence(
            path,
            format!(
                "dimensions {dims:?} need {expected} bytes after the header; it has {}",
                bytes.len() - start
            ),
        ));
    }
    Ok((dims, bytes[start..].to_vec()))
}

/// One batch: `image` of `pixels` (each `shape`'s product bytes, scaled to [0, 1]) and `label`.
fn image_batch(shape: [usize; 3], pixels: &[u8], labels: &[u8]) -> Result<RecordBatch> {
    let width: usize = shape.iter().product();
    let values = Float32Array::from_iter_values(pixels.iter().map(|&p| f32::from(p) / 255.0));
    let item = Arc::new(Field::new_list_field(DataType::Float32, false));
    let images = FixedSizeListArray::try_new(item, width as i32, Arc::new(values), None)?;
    let labels = Float64Array::from_iter_values(labels.iter().map(|&l| f64::from(l)));
    let schema = Schema::new(vec![
        Field::new("image", images.data_type().clone(), false),
        Field::new("label", DataType::Float64, false),
    ]);
    Ok(RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(images), Arc::new(labels)],
    )?)
}

impl Session {
    /// An MNIST-style pair of IDX files (gzip or not) as a table: `image` (1 × rows × columns, in [0, 1]) and
    /// `label`. The files must hold the same number of items; every error names the file.
    pub fn read_idx(&self, images: impl AsRef<Path>, labels: impl AsRef<Path>) -> Result<DataFrame> {
        let (images, labels) = (images.as_ref(), labels.as_ref());
        let (dims, pixels) = idx(images, IDX_IMAGES)?;
        let (label_dims, label_bytes) = idx(labels, IDX_LABELS)?;
        if dims[0] != label_dims[0] {
            return Err(HearthError::persistence(
                labels,
                format!(
                    "{} labels for the {} images of {}",
                    label_dims[0],
                    dims[0],
                    images.display()
                ),
            ));
        }
        let batch = image_batch([1, dims[1], dims[2]], &pixels, &label_bytes)?;
        self.read_batches(batch.schema(), vec![batch])
    }

    /// CIFAR-10 binary batch files (gzip or not) as one table: `image` (3 × 32 × 32, in [0, 1]) and `label`
    /// (0 airplane … 9 truck). A file that is not whole records, or a label above 9, is an error naming it.
    pub fn read_cifar10<P: AsRef<Path>>(&self, files: impl IntoIterator<Item = P>) -> Result<DataFrame> {
        let mut batches = Vec::new();
        for file in files {
            let path = file.as_ref();
            let bytes = read_bytes(path)?;
            if bytes.is_empty() || !bytes.len().is_multiple_of(CIFAR_RECORD) {
                return Err(HearthError::persistence(
                    path,
                    format!("{} bytes are not whole CIFAR-10 records of {CIFAR_RECORD}", bytes.len()),
                ));
            }
            let (mut pixels, mut labels) = (Vec::with_capacity(bytes.len()), Vec::new());
            for (i, record) in bytes.chunks_exact(CIFAR_RECORD).enumerate() {
                if record[0] > 9 {
                    return Err(HearthError::persistence(
                        path,
                        format!("record {i}: label {} is not a class 0–9", record[0]),
                    ));
                }
                labels.push(record[0]);
                pixels.extend_from_slice(&record[1..]);
            }
            batches.push(image_batch([3, CIFAR_SIDE, CIFAR_SIDE], &pixels, &labels)?);
        }
        let Some(first) = batches.first() else {
            return Err(HearthError::invalid_param("read_cifar10", "files", "no files given"));
        };
        self.read_batches(first.schema(), batches)
    }
}
