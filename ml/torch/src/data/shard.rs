//! A rank's shard of training data: Arrow record batches turned into a dense feature matrix and a label
//! vector, one buffer copy per batch (no per-row loops).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;

use super::DataError;

/// Features `[rows × dim]` (row-major `f32`), one label per row, and optionally one sample weight per row.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{FixedSizeListArray, Float32Array, Float64Array, RecordBatch};
/// use arrow_schema::{DataType, Field};
///
/// let item = Arc::new(Field::new_list_field(DataType::Float32, true));
/// let features = FixedSizeListArray::try_new(item, 2, Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0, 4.0])), None).unwrap();
/// let batch = RecordBatch::try_from_iter([
///     ("features", Arc::new(features) as _),
///     ("label", Arc::new(Float64Array::from(vec![0.0, 1.0])) as _),
/// ]).unwrap();
/// let shard = hearth_torch::data::Shard::from_batches(&[batch], "features", "label").unwrap();
/// assert_eq!((shard.rows(), shard.dim()), (2, 2));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shard {
    features: Vec<f32>,
    labels: Vec<f32>,
    dim: usize,
    weights: Option<Vec<f32>>,
}

impl Shard {
    /// A shard from a row-major feature buffer and labels.
    pub fn new(features: Vec<f32>, labels: Vec<f32>, dim: usize) -> Result<Self, DataError> {
        if labels.len() * dim != features.len() {
            return Err(DataError::column(
                "features",
                format!("{} values do not make {} rows of {dim}", features.len(), labels.len()),
            ));
        }
        Ok(Self {
            features,
            labels,
            dim,
            weights: None,
        })
    }

    /// The shard with a sample weight per row (Spark's `weightCol`): each row's loss counts that much.
    /// Weights must be finite and not negative; the error names the first row that is not.
    ///
    /// ```
    /// let shard = hearth_torch::data::Shard::new(vec![0.0, 1.0], vec![0.0, 1.0], 1).unwrap();
    /// assert_eq!(shard.clone().with_weights(vec![0.5, 2.0]).unwrap().weights(), Some(&[0.5, 2.0][..]));
    /// assert!(shard.with_weights(vec![1.0, -1.0]).unwrap_err().to_string().contains("row 1"));
    /// ```
    pub fn with_weights(mut self, weights: Vec<f32>) -> Result<Self, DataError> {
        if weights.len() != self.rows() {
            let message = format!("{} weights for {} rows", weights.len(), self.rows());
            return Err(DataError::column("weight", message));
        }
        if let Some((row, weight)) = weights.iter().enumerate().find(|(_, w)| !(w.is_finite() && **w >= 0.0)) {
            let message = format!("row {row}: weight {weight} is not a finite number ≥ 0");
            return Err(DataError::column("weight", message));
        }
        self.weights = Some(weights);
        Ok(self)
    }

    /// The shard weighted by the numeric column `column` of `batches` (the batches it was read from).
    pub fn weighted_by(self, batches: &[RecordBatch], column: &str) -> Result<Self, DataError> {
        let mut weights = Vec::with_capacity(self.rows());
        for batch in batches {
            let values = batch
                .column_by_name(column)
                .ok_or_else(|| DataError::column(column, "no such column"))?;
            if values.null_count() > 0 {
                return Err(DataError::column(
                    column,
                    format!("{} null weights", values.null_count()),
                ));
            }
            let values = arrow_cast::cast(values, &DataType::Float64)
                .map_err(|e| DataError::uncastable(column, &DataType::Float64, e))?;
            weights.extend(values.as_primitive::<Float64Type>().values().iter().map(|&v| v as f32));
        }
        self.with_weights(weights).map_err(|e| match e {
            DataError::Column { message, cause, .. } => DataError::Column {
                column: column.to_string(),
                message,
                cause,
            },
            other => other,
        })
    }

    /// Gathers the `features` vector column and the numeric `label` column of every batch.
    pub fn from_batches(batches: &[RecordBatch], features: &str, label: &str) -> Result<Self, DataError> {
        let mut shard = Shard::default();
        for batch in batches {
            let vectors = batch
                .column_by_name(features)
                .ok_or_else(|| DataError::column(features, "no such column"))?;
            let DataType::FixedSizeList(_, dim) = vectors.data_type() else {
                return Err(DataError::column(
                    features,
                    format!("must be a vector column, got {}", vectors.data_type()),
                ));
            };
            let list = vectors.as_fixed_size_list();
            if list.null_count() > 0 {
                return Err(DataError::column(
                    features,
                    format!("{} null vectors", list.null_count()),
                ));
            }
            shard.dim = *dim as usize;
            let values = arrow_cast::cast(list.values(), &DataType::Float32)
                .map_err(|e| DataError::uncastable(features, &DataType::Float32, e))?;
            shard
                .features
                .extend_from_slice(values.as_primitive::<Float32Type>().values());
            let labels = batch
                .column_by_name(label)
                .ok_or_else(|| DataError::column(label, "no such column"))?;
            if labels.null_count() > 0 {
                return Err(DataError::column(label, format!("{} null labels", labels.null_count())));
            }
            let labels = arrow_cast::cast(labels, &DataType::Float64)
                .map_err(|e| DataError::uncastable(label, &DataType::Float64, e))?;
            shard
                .labels
                .extend(labels.as_primitive::<Float64Type>().values().iter().map(|&v| v as f32));
        }
        Ok(shard)
    }

    /// Every `parts`-th row starting at row `part`: the shard of rank `part` of `parts` when rows are dealt
    /// round-robin.
    ///
    /// ```
    /// let shard = hearth_torch::data::Shard::new(vec![0.0, 1.0, 2.0, 3.0, 4.0], vec![0.0, 1.0, 0.0, 1.0, 0.0], 1).unwrap();
    /// assert_eq!(shard.round_robin(1, 2).features(), [1.0, 3.0]);
    /// ```
    pub fn round_robin(&self, part: usize, parts: usize) -> Shard {
        let rows = (0..self.rows()).skip(part).step_by(parts.max(1));
        let mut dealt = Shard {
            dim: self.dim,
            ..Shard::default()
        };
        for i in rows {
            dealt
                .features
                .extend_from_slice(&self.features[i * self.dim..(i + 1) * self.dim]);
            dealt.labels.push(self.labels[i]);
        }
        dealt.weights = self
            .weights
            .as_ref()
            .map(|w| w.iter().skip(part).step_by(parts.max(1)).copied().collect());
        dealt
    }

    /// Appends `other`'s rows (an empty shard takes `other`'s width and weighting).
    ///
    /// ```
    /// use hearth_torch::data::Shard;
    /// let mut rows = Shard::default();
    /// rows.append(&Shard::new(vec![1.0, 2.0], vec![0.0], 2).unwrap());
    /// rows.append(&Shard::new(vec![3.0, 4.0], vec![1.0], 2).unwrap());
    /// assert_eq!((rows.rows(), rows.features()), (2, &[1.0, 2.0, 3.0, 4.0][..]));
    /// ```
    pub fn append(&mut self, other: &Shard) {
        if self.rows() == 0 {
            self.dim = other.dim;
            self.weights = other.weights.as_ref().map(|_| Vec::new());
        }
        self.features.extend_from_slice(&other.features);
        self.labels.extend_from_slice(&other.labels);
        if let (Some(weights), Some(more)) = (&mut self.weights, &other.weights) {
            weights.extend_from_slice(more);
        }
    }

    /// Removes the first `rows` rows (all, if there are fewer) and returns them.
    ///
    /// ```
    /// use hearth_torch::data::Shard;
    /// let mut rows = Shard::new(vec![1.0, 2.0, 3.0], vec![0.0, 1.0, 0.0], 1).unwrap();
    /// assert_eq!(rows.take_front(2).labels(), [0.0, 1.0]);
    /// assert_eq!(rows.labels(), [0.0]);
    /// ```
    pub fn take_front(&mut self, rows: usize) -> Shard {
        let rows = rows.min(self.rows());
        let rest_features = self.features.split_off(rows * self.dim);
        let rest_labels = self.labels.split_off(rows);
        let rest_weights = self.weights.as_mut().map(|w| w.split_off(rows));
        Shard {
            features: std::mem::replace(&mut self.features, rest_features),
            labels: std::mem::replace(&mut self.labels, rest_labels),
            dim: self.dim,
            weights: std::mem::replace(&mut self.weights, rest_weights),
        }
    }

    /// The rows in `order` (indices of rows of this shard).
    ///
    /// ```
    /// use hearth_torch::data::Shard;
    /// let rows = Shard::new(vec![1.0, 2.0, 3.0], vec![0.0, 1.0, 2.0], 1).unwrap();
    /// assert_eq!(rows.picked(&[2, 0]).labels(), [2.0, 0.0]);
    /// ```
    pub fn picked(&self, order: &[usize]) -> Shard {
        let mut features = Vec::with_capacity(order.len() * self.dim);
        for &row in order {
            features.extend_from_slice(&self.features[row * self.dim..(row + 1) * self.dim]);
        }
        Shard {
            features,
            labels: order.iter().map(|&row| self.labels[row]).collect(),
            dim: self.dim,
            weights: self.weights.as_ref().map(|w| order.iter().map(|&row| w[row]).collect()),
        }
    }

    /// The bytes its rows take in memory.
    pub fn bytes(&self) -> usize {
        (self.features.len() + self.labels.len() + self.weights.as_ref().map_or(0, Vec::len)) * size_of::<f32>()
    }

    /// The summed weight of its rows: their sample weights, else their count.
    pub fn total_weight(&self) -> f64 {
        match &self.weights {
            Some(weights) => weights.iter().map(|&w| f64::from(w)).sum(),
            None => self.rows() as f64,
        }
    }

    /// Rows in the shard.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// Features per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The row-major feature matrix.
    pub fn features(&self) -> &[f32] {
        &self.features
    }

    /// The labels.
    pub fn labels(&self) -> &[f32] {
        &self.labels
    }

    /// The sample weights, if the shard has them.
    pub fn weights(&self) -> Option<&[f32]> {
        self.weights.as_deref()
    }
}
