//! Spark's elastic-net penalty on standardized coefficients: the L2 half added to the smooth objective, the L1
//! half handed to OWL-QN per coordinate.

/// `regParam` and `elasticNetParam` split as Spark splits them, for coefficients that multiply standardized
/// features: `L2 = (1 − α)·λ` inside the objective, `L1 = α·λ` for OWL-QN. Without standardization both
/// penalize the original-scale coefficient (divided by `σ²` and `σ`); a feature of no variance is not penalized.
#[derive(Clone, Debug)]
pub(crate) struct Penalty {
    l2: f64,
    l1: f64,
    /// `None` when standardizing; else each feature's standard deviation.
    std: Option<Vec<f64>>,
}

impl Penalty {
    pub(crate) fn new(reg_param: f64, elastic_net_param: f64, standardization: bool, std: &[f64]) -> Self {
        Self {
            l2: (1.0 - elastic_net_param) * reg_param,
            l1: elastic_net_param * reg_param,
            std: (!standardization).then(|| std.to_vec()),
        }
    }

    /// Whether the L1 half is active (the solve is OWL-QN).
    pub(crate) fn has_l1(&self) -> bool {
        self.l1 != 0.0
    }

    /// The L1 weight of each of `size` coordinates, where coordinate `i` is feature `feature_of(i)`'s
    /// coefficient or, for `None`, an intercept (never penalized).
    pub(crate) fn l1_weights(&self, size: usize, feature_of: impl Fn(usize) -> Option<usize>) -> Vec<f64> {
        (0..size)
            .map(|i| match (feature_of(i), &self.std) {
                (None, _) => 0.0,
                (Some(_), None) => self.l1,
                (Some(j), Some(std)) if std[j] != 0.0 => self.l1 / std[j],
                (Some(_), Some(_)) => 0.0,
            })
            .collect()
    }

    /// Adds the L2 half's value and gradient at `coefficients` to `value` and `gradient`.
    pub(crate) fn add_l2(
        &self,
        coefficients: &[f64],
        feature_of: impl Fn(usize) -> Option<usize>,
        value: &mut f64,
        gradient: &mut [f64],
    ) {
        if self.l2 == 0.0 {
            return;
        }
        let mut sum = 0.0;
        for (i, &c) in coefficients.iter().enumerate() {
            let Some(j) = feature_of(i) else { continue };
            let scaled = match &self.std {
                None => c,
                Some(std) if std[j] != 0.0 => c / (std[j] * std[j]),
                Some(_) => continue,
            };
            sum += c * scaled;
            gradient[i] += self.l2 * scaled;
        }
        *value += 0.5 * sum * self.l2;
    }
}
