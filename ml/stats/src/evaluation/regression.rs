//! Regression metrics with Spark's definitions (`RegressionEvaluator`).

use serde::{Deserialize, Serialize};

/// The mergeable state of a regression evaluation: weighted sums of the label, the prediction and the
/// error.
///
/// ```
/// use hearth_stats::evaluation::RegressionState;
///
/// let mut state = RegressionState::default();
/// for (label, prediction) in [(3.0, 2.5), (-0.5, 0.0), (2.0, 2.0), (7.0, 8.0)] {
///     state.add(label, prediction, 1.0);
/// }
/// assert!((state.mse() - 0.375).abs() < 1e-12);
/// assert!((state.r2(false) - 0.9486081370449679).abs() < 1e-12);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RegressionState {
    weight: f64,
    weight_squared: f64,
    label: f64,
    label_squared: f64,
    prediction: f64,
    prediction_squared: f64,
    squared_error: f64,
    absolute_error: f64,
}

impl RegressionState {
    /// The total weight of the rows added (their count when every weight is 1).
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// Adds one row.
    pub fn add(&mut self, label: f64, prediction: f64, weight: f64) {
        let error = label - prediction;
        self.weight += weight;
        self.weight_squared += weight * weight;
        self.label += weight * label;
        self.label_squared += weight * label * label;
        self.prediction += weight * prediction;
        self.prediction_squared += weight * prediction * prediction;
        self.squared_error += weight * error * error;
        self.absolute_error += weight * error.abs();
    }

    /// Folds another partial state into this one.
    pub fn merge(&mut self, other: &RegressionState) {
        self.weight += other.weight;
        self.weight_squared += other.weight_squared;
        self.label += other.label;
        self.label_squared += other.label_squared;
        self.prediction += other.prediction;
        self.prediction_squared += other.prediction_squared;
        self.squared_error += other.squared_error;
        self.absolute_error += other.absolute_error;
    }

    /// How many bytes [`to_bytes`](Self::to_bytes) writes.
    pub fn encoded_len(&self) -> usize {
        64
    }

    /// The state as bytes, for the partial and final halves of an aggregate.
    ///
    /// ```
    /// use hearth_stats::evaluation::RegressionState;
    /// let mut state = RegressionState::default();
    /// state.add(1.0, 2.0, 1.0);
    /// assert_eq!(RegressionState::from_bytes(&state.to_bytes()).unwrap(), state);
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(64);
        super::encoding::put(&mut bytes, &self.fields());
        bytes
    }

    /// Reads a state written by [`RegressionState::to_bytes`]; no bytes is the empty state.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, super::StateDecodeError> {
        let v = super::encoding::values("regression", bytes, 8)?;
        let mut state = Self::default();
        if let [
            weight,
            weight_squared,
            label,
            label_squared,
            prediction,
            prediction_squared,
            squared_error,
            absolute_error,
        ] = v[..]
        {
            state = Self {
                weight,
                weight_squared,
                label,
                label_squared,
                prediction,
                prediction_squared,
                squared_error,
                absolute_error,
            };
        } else if !v.is_empty() {
            return Err(super::StateDecodeError {
                state: "regression",
                message: format!("{} numbers, expected 8", v.len()),
            });
        }
        Ok(state)
    }

    fn fields(&self) -> [f64; 8] {
        [
            self.weight,
            self.weight_squared,
            self.label,
            self.label_squared,
            self.prediction,
            self.prediction_squared,
            self.squared_error,
            self.absolute_error,
        ]
    }

    fn label_mean(&self) -> f64 {
        self.label / self.weight
    }

    /// `Σw(y − ŷ)² / W`.
    pub fn mse(&self) -> f64 {
        self.squared_error / self.weight
    }

    /// `√mse`.
    pub fn rmse(&self) -> f64 {
        self.mse().sqrt()
    }

    /// `Σw|y − ŷ| / W`.
    pub fn mae(&self) -> f64 {
        self.absolute_error / self.weight
    }

    /// `1 − SSerr/SStot`, with `SStot` = the weighted unbiased variance of `y` times `W − 1`, as Spark; through
    /// the origin, `1 − SSerr/Σwy²`.
    pub fn r2(&self, through_origin: bool) -> f64 {
        if through_origin {
            return 1.0 - self.squared_error / self.label_squared;
        }
        let mean = self.label_mean();
        let deviations = self.label_squared - self.weight * mean * mean;
        let unbiased_variance = deviations / (self.weight - self.weight_squared / self.weight);
        1.0 - self.squared_error / (unbiased_variance * (self.weight - 1.0))
    }

    /// Spark's `var`: `Σw(ŷ − ȳ)² / W`, the variance the predictions explain (not scikit-learn's
    /// explained-variance score).
    pub fn explained_variance(&self) -> f64 {
        let mean = self.label_mean();
        (self.prediction_squared - 2.0 * mean * self.prediction + mean * mean * self.weight) / self.weight
    }
}
