//! A rank's rows as the fitters read them: dense features, labels and weights.

/// One rank's rows: `labels.len()` rows of `dim` features each, row-major, with a weight per row (1 without a
/// weight column). Rows of weight 0 count for nothing, as in Spark.
///
/// ```
/// use hearth_optim::glm::Shard;
/// let shard = Shard::new(2, vec![0.0, 5.0, 1.0, 2.0], vec![1.0, 0.0], None).unwrap();
/// assert_eq!((shard.rows(), shard.row(1)), (2, &[1.0, 2.0][..]));
/// assert_eq!(shard.weight(0), 1.0);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shard {
    dim: usize,
    features: Vec<f64>,
    labels: Vec<f64>,
    weights: Option<Vec<f64>>,
}

/// Why rows cannot be a shard: what is wrong and at which row.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ShardError {
    /// The buffers' lengths disagree.
    #[error("{features} feature values for {rows} rows of {dim} features")]
    Shape {
        /// Feature values given.
        features: usize,
        /// Rows (labels) given.
        rows: usize,
        /// Features per row.
        dim: usize,
    },
    /// A weight is negative or not finite.
    #[error("row {row}: weight {weight} is not a finite non-negative number")]
    Weight {
        /// The row, counted from 0 in this shard.
        row: usize,
        /// The weight found.
        weight: f64,
    },
    /// A label or feature is not finite.
    #[error("row {row}: {what} is {value}, not a finite number")]
    NotFinite {
        /// The row, counted from 0 in this shard.
        row: usize,
        /// "the label" or "feature N".
        what: String,
        /// The value found.
        value: f64,
    },
}

impl Shard {
    /// A shard of `labels.len()` rows; `weights`, when given, one per row.
    pub fn new(
        dim: usize,
        features: Vec<f64>,
        labels: Vec<f64>,
        weights: Option<Vec<f64>>,
    ) -> Result<Self, ShardError> {
        let rows = labels.len();
        if features.len() != rows * dim || weights.as_ref().is_some_and(|w| w.len() != rows) {
            return Err(ShardError::Shape {
                features: features.len(),
                rows,
                dim,
            });
        }
        if let Some((row, &weight)) = weights
            .iter()
            .flatten()
            .enumerate()
            .find(|(_, w)| !(w.is_finite() && **w >= 0.0))
        {
            return Err(ShardError::Weight { row, weight });
        }
        if let Some((row, &value)) = labels.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            let what = "the label".to_string();
            return Err(ShardError::NotFinite { row, what, value });
        }
        if let Some((at, &value)) = features.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            let (row, what) = (at / dim.max(1), format!("feature {}", at % dim.max(1)));
            return Err(ShardError::NotFinite { row, what, value });
        }
        Ok(Self {
            dim,
            features,
            labels,
            weights,
        })
    }

    /// Features per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// The features of row `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.features[i * self.dim..(i + 1) * self.dim]
    }

    /// The label of row `i`.
    pub fn label(&self, i: usize) -> f64 {
        self.labels[i]
    }

    /// The weight of row `i`.
    pub fn weight(&self, i: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[i])
    }

    /// The rows of positive weight: `(features, label, weight)`.
    pub(crate) fn weighted_rows(&self) -> impl Iterator<Item = (&[f64], f64, f64)> {
        (0..self.rows())
            .map(|i| (self.row(i), self.label(i), self.weight(i)))
            .filter(|(_, _, w)| *w > 0.0)
    }
}
