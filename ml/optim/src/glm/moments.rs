//! The weighted moments of features and label that the fitters standardize with, summed over all ranks: Spark's
//! `Summarizer` mean and variance.

use super::{Reduce, Shard};

/// Weighted moments over the rows of positive weight of every rank.
///
/// ```
/// use hearth_optim::glm::{Alone, Moments, Shard};
/// let shard = Shard::new(1, vec![1.0, 2.0, 3.0], vec![0.0, 0.0, 1.0], None).unwrap();
/// let moments = Moments::of(&shard, &mut Alone).unwrap();
/// assert_eq!(moments.mean, vec![2.0]);
/// assert_eq!(moments.unbiased_std(), vec![1.0]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Moments {
    /// Rows of positive weight.
    pub count: f64,
    /// `W = Σ w`.
    pub weight_sum: f64,
    /// `Σ w²`.
    pub weight_square_sum: f64,
    /// Each feature's weighted mean.
    pub mean: Vec<f64>,
    /// Each feature's `Σ w·(x − mean)²`.
    pub m2: Vec<f64>,
    /// The label's weighted mean.
    pub label_mean: f64,
    /// The label's `Σ w·(y − mean)²`.
    pub label_m2: f64,
}

impl Moments {
    /// The moments of every rank's shard: two sums over the ranks (totals, then squared deviations).
    pub fn of<R: Reduce>(shard: &Shard, ranks: &mut R) -> Result<Self, R::Error> {
        let dim = shard.dim();
        let mut totals = vec![0.0; dim + 4];
        for (x, y, w) in shard.weighted_rows() {
            totals[0] += 1.0;
            totals[1] += w;
            totals[2] += w * w;
            totals[3] += w * y;
            totals[4..].iter_mut().zip(x).for_each(|(t, xj)| *t += w * xj);
        }
        ranks.sum(&mut totals)?;
        let weight_sum = totals[1];
        let mean_of = |total: f64| if weight_sum > 0.0 { total / weight_sum } else { 0.0 };
        let mean: Vec<f64> = totals[4..].iter().map(|t| mean_of(*t)).collect();
        let label_mean = mean_of(totals[3]);
        let mut squares = vec![0.0; dim + 1];
        for (x, y, w) in shard.weighted_rows() {
            squares[0] += w * (y - label_mean).powi(2);
            squares[1..]
                .iter_mut()
                .zip(x.iter().zip(&mean))
                .for_each(|(s, (xj, mj))| *s += w * (xj - mj).powi(2));
        }
        ranks.sum(&mut squares)?;
        Ok(Self {
            count: totals[0],
            weight_sum,
            weight_square_sum: totals[2],
            mean,
            m2: squares[1..].to_vec(),
            label_mean,
            label_m2: squares[0],
        })
    }

    /// The denominator of the unbiased weighted variance, `W − Σw²/W` (`n − 1` for unit weights).
    fn unbiased_denominator(&self) -> f64 {
        self.weight_sum - self.weight_square_sum / self.weight_sum
    }

    /// Each feature's unbiased weighted standard deviation, Spark's `Summarizer.std` (0 when undefined).
    pub fn unbiased_std(&self) -> Vec<f64> {
        self.m2.iter().map(|m2| self.unbiased(*m2)).collect()
    }

    /// The label's unbiased weighted standard deviation.
    pub fn label_unbiased_std(&self) -> f64 {
        self.unbiased(self.label_m2)
    }

    fn unbiased(&self, m2: f64) -> f64 {
        let denominator = self.unbiased_denominator();
        if denominator > 0.0 {
            (m2 / denominator).max(0.0).sqrt()
        } else {
            0.0
        }
    }
}

/// `1/σ`, or 0 for a feature of no variance (whose coefficient is then 0).
pub(crate) fn inverse(std: &[f64]) -> Vec<f64> {
    std.iter().map(|s| if *s != 0.0 { 1.0 / s } else { 0.0 }).collect()
}
