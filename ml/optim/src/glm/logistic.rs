//! Spark's `LogisticRegression` fit: binomial or multinomial, elastic net, by L-BFGS (OWL-QN with an L1 part) on
//! standardized features with the intercept virtually centered, summed over the ranks at every evaluation.

use serde::{Deserialize, Serialize};

use super::bounds::LogisticBounds;
use super::moments::inverse;
use super::penalty::Penalty;
use super::{FitError, Moments, Reduce, Shard, Solved};
use crate::{Lbfgs, Minimum};

/// Spark's `family`: `auto` is multinomial for more than two classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Binomial for one or two classes, multinomial beyond.
    #[default]
    Auto,
    /// One coefficient set, the sigmoid of one margin.
    Binomial,
    /// A coefficient set per class, the softmax of their margins.
    Multinomial,
}

/// The settings of a logistic fit, Spark's params of the same names and defaults.
///
/// ```
/// use hearth_optim::glm::LogisticSettings;
/// let settings = LogisticSettings::default();
/// assert_eq!((settings.max_iter, settings.tol, settings.fit_intercept), (100, 1e-6, true));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogisticSettings {
    /// λ, the penalty's strength.
    pub reg_param: f64,
    /// α: 0 is all L2, 1 all L1.
    pub elastic_net_param: f64,
    /// The solver's iteration limit.
    pub max_iter: usize,
    /// The solver's relative tolerance.
    pub tol: f64,
    /// Whether to fit intercepts.
    pub fit_intercept: bool,
    /// Whether to penalize standardized coefficients (the fit always runs on standardized features).
    pub standardization: bool,
    /// Binomial, multinomial, or by the number of classes.
    pub family: Family,
    /// Bounds on the coefficients and intercepts: with any, the fit runs L-BFGS-B (L2 penalty only).
    #[serde(flatten)]
    pub bounds: LogisticBounds,
}

impl Default for LogisticSettings {
    fn default() -> Self {
        Self {
            reg_param: 0.0,
            elastic_net_param: 0.0,
            max_iter: 100,
            tol: 1e-6,
            fit_intercept: true,
            standardization: true,
            family: Family::Auto,
            bounds: LogisticBounds::default(),
        }
    }
}

/// A fitted logistic model: `K × F` coefficients (row-major; `K = 1` binomial) and `K` intercepts, on the original
/// features' scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogisticFit {
    /// Classes seen: the largest label plus one.
    pub num_classes: usize,
    /// Features per row.
    pub num_features: usize,
    /// Whether the model is multinomial (a coefficient set per class).
    pub multinomial: bool,
    /// `K × F` coefficients, row-major.
    pub coefficient_matrix: Vec<f64>,
    /// `K` intercepts.
    pub intercept_vector: Vec<f64>,
    /// How the solve went; `None` when nothing was solved (a single class with an intercept).
    pub solved: Option<Solved>,
}

/// Fits Spark's `LogisticRegression` on every rank's shard; every rank returns the same fit.
///
/// ```
/// use hearth_optim::glm::{Alone, LogisticSettings, Shard, fit_logistic};
/// // PySpark's LogisticRegression doctest: 4 weighted rows.
/// let shard = Shard::new(2, vec![0., 5., 1., 2., 2., 1., 3., 3.], vec![1., 0., 1., 0.], Some(vec![1., 2., 3., 4.]))
///     .unwrap();
/// let settings = LogisticSettings { reg_param: 0.01, ..LogisticSettings::default() };
/// let fit = fit_logistic(&shard, &settings, &mut Alone).unwrap();
/// assert!((fit.coefficient_matrix[0] - -1.080726443643386).abs() < 1e-9);
/// assert!((fit.intercept_vector[0] - 3.1127664706875913).abs() < 1e-9);
/// ```
pub fn fit_logistic<R: Reduce>(
    shard: &Shard,
    settings: &LogisticSettings,
    ranks: &mut R,
) -> Result<LogisticFit, FitError<R::Error>> {
    let histogram = class_weights(shard, ranks)?;
    let num_classes = histogram.len();
    let multinomial = match settings.family {
        Family::Auto => num_classes > 2,
        Family::Binomial if num_classes > 2 => return Err(FitError::Binomial { num_classes }),
        Family::Binomial => false,
        Family::Multinomial => true,
    };
    let sets = if multinomial { num_classes } else { 1 };
    let dim = shard.dim();
    let present: Vec<usize> = (0..num_classes).filter(|k| histogram[*k] != 0.0).collect();
    if settings.fit_intercept && present.len() == 1 && !settings.bounds.bind_intercepts() {
        return Ok(constant_label(num_classes, dim, multinomial, present[0]));
    }
    let moments = Moments::of(shard, ranks).map_err(FitError::Ranks)?;
    let problem = Problem::new(shard, settings, &moments, sets).map_err(FitError::Settings)?;
    let x0 = problem.start(initial_point(&histogram, dim, sets, settings.fit_intercept));
    if x0.iter().any(|v| !v.is_finite()) {
        return Err(FitError::Settings(format!(
            "the labels hold only class {present:?}: bound intercepts need rows of two classes"
        )));
    }
    let minimum = problem.solve(x0, ranks)?;
    Ok(problem.fit(num_classes, multinomial, settings, minimum))
}

/// The weight of each class over all ranks; the labels must be class indices 0, 1, 2, …
fn class_weights<R: Reduce>(shard: &Shard, ranks: &mut R) -> Result<Vec<f64>, FitError<R::Error>> {
    for i in 0..shard.rows() {
        let label = shard.label(i);
        if label < 0.0 || label.fract() != 0.0 || label > f64::from(u16::MAX) {
            return Err(FitError::Label { row: i, label });
        }
    }
    let mut largest = [(0..shard.rows()).map(|i| shard.label(i)).fold(-1.0, f64::max)];
    ranks.max(&mut largest).map_err(FitError::Ranks)?;
    if largest[0] < 0.0 {
        return Err(FitError::NoRows);
    }
    let mut histogram = vec![0.0; largest[0] as usize + 1];
    for i in 0..shard.rows() {
        histogram[shard.label(i) as usize] += shard.weight(i);
    }
    ranks.sum(&mut histogram).map_err(FitError::Ranks)?;
    Ok(histogram)
}

/// Spark's answer when every row has one class and intercepts are fitted: no solve, zero coefficients, an
/// infinite intercept for that class.
fn constant_label(num_classes: usize, dim: usize, multinomial: bool, class: usize) -> LogisticFit {
    let intercept_vector = if multinomial {
        (0..num_classes)
            .map(|k| if k == class { f64::INFINITY } else { 0.0 })
            .collect()
    } else if num_classes == 2 {
        vec![f64::INFINITY]
    } else {
        vec![f64::NEG_INFINITY]
    };
    let sets = intercept_vector.len();
    LogisticFit {
        num_classes,
        num_features: dim,
        multinomial,
        coefficient_matrix: vec![0.0; sets * dim],
        intercept_vector,
        solved: None,
    }
}

/// Spark's starting point, column-major `K × (F + 1)`: zero coefficients, intercepts at the log-odds of the
/// classes' weights (binomial) or their centered `log1p` (multinomial).
fn initial_point(histogram: &[f64], dim: usize, sets: usize, fit_intercept: bool) -> Vec<f64> {
    let mut x = vec![0.0; sets * (dim + usize::from(fit_intercept))];
    if fit_intercept {
        if sets == 1 {
            x[dim] = (histogram.get(1).copied().unwrap_or(0.0) / histogram[0]).ln();
        } else {
            let raw: Vec<f64> = histogram.iter().map(|h| h.ln_1p()).collect();
            let mean = raw.iter().sum::<f64>() / raw.len() as f64;
            raw.iter().enumerate().for_each(|(k, r)| x[dim * sets + k] = r - mean);
        }
    }
    x
}

/// The standardized problem every rank solves together.
struct Problem<'a> {
    shard: &'a Shard,
    sets: usize,
    fit_intercept: bool,
    weight_sum: f64,
    std: Vec<f64>,
    inverse_std: Vec<f64>,
    /// `mean/σ`: the intercept is solved for features centered on it (Spark's `fitWithMean`); zeros where
    /// the intercepts are bounded, whose bounds hold for the intercept itself.
    scaled_mean: Vec<f64>,
    penalty: Penalty,
    lbfgs: Lbfgs,
    /// Whether it is solved within bounds (L-BFGS-B).
    bounded: bool,
}

impl<'a> Problem<'a> {
    /// The problem; an error says how the bounds do not fit its shape.
    fn new(shard: &'a Shard, settings: &LogisticSettings, moments: &Moments, sets: usize) -> Result<Self, String> {
        let std = moments.unbiased_std();
        let inverse_std = inverse(&std);
        let bounded = settings.bounds.any();
        let scaled_mean = if settings.bounds.bind_intercepts() {
            vec![0.0; std.len()]
        } else {
            moments.mean.iter().zip(&inverse_std).map(|(m, s)| s * m).collect()
        };
        let penalty = Penalty::new(
            settings.reg_param,
            settings.elastic_net_param,
            settings.standardization,
            &std,
        );
        let mut lbfgs = Lbfgs::new().max_iter(settings.max_iter).tol(settings.tol);
        let size = sets * (shard.dim() + usize::from(settings.fit_intercept));
        if penalty.has_l1() {
            lbfgs = lbfgs.l1(penalty.l1_weights(size, |i| (i < sets * shard.dim()).then_some(i / sets)));
        }
        if bounded {
            lbfgs = lbfgs.bounds(settings.bounds.standardized(sets, &std, settings.fit_intercept)?);
        }
        Ok(Self {
            shard,
            sets,
            fit_intercept: settings.fit_intercept,
            weight_sum: moments.weight_sum,
            std,
            inverse_std,
            scaled_mean,
            penalty,
            lbfgs,
            bounded,
        })
    }

    /// Spark's starting point within bounds: clipped into them, each intercept then moved by its
    /// coefficients' centering, so that the start's margins are the unbounded start's.
    fn start(&self, x0: Vec<f64>) -> Vec<f64> {
        if !self.bounded {
            return x0;
        }
        let mut x = self.lbfgs.clip(x0);
        if self.fit_intercept {
            let (dim, sets) = (self.shard.dim(), self.sets);
            for k in 0..sets {
                x[dim * sets + k] += (0..dim).map(|j| x[j * sets + k] * self.scaled_mean[j]).sum::<f64>();
            }
        }
        x
    }

    fn solve<R: Reduce>(&self, x0: Vec<f64>, ranks: &mut R) -> Result<Minimum, FitError<R::Error>> {
        let coefficients = self.sets * self.shard.dim();
        let mut objective = |x: &mut [f64]| -> Result<(f64, Vec<f64>), R::Error> {
            let mut sums = self.loss_and_gradient(x);
            ranks.sum(&mut sums)?;
            let mut value = sums[0] / self.weight_sum;
            let scale = 1.0 / self.weight_sum;
            let mut gradient: Vec<f64> = sums[1..].iter().map(|g| g * scale).collect();
            let feature_of = |i: usize| (i < coefficients).then_some(i / self.sets);
            self.penalty.add_l2(x, feature_of, &mut value, &mut gradient);
            Ok((value, gradient))
        };
        self.lbfgs.minimize(&mut objective, x0).map_err(FitError::Ranks)
    }

    /// This shard's `[Σ loss, Σ gradient…]` at `x` (column-major, standardized).
    fn loss_and_gradient(&self, x: &[f64]) -> Vec<f64> {
        if self.sets == 1 {
            return self.binary_loss_and_gradient(x);
        }
        let (dim, sets) = (self.shard.dim(), self.sets);
        let offsets: Vec<f64> = (0..sets).map(|k| self.offset(x, k)).collect();
        let mut sums = vec![0.0; 1 + x.len()];
        let (mut scaled, mut margins, mut multipliers) = (vec![0.0; dim], vec![0.0; sets], vec![0.0; sets]);
        for (features, label, weight) in self.shard.weighted_rows() {
            scaled
                .iter_mut()
                .zip(features.iter().zip(&self.inverse_std))
                .for_each(|(s, (f, i))| *s = f * i);
            for (k, margin) in margins.iter_mut().enumerate() {
                *margin = offsets[k] + (0..dim).map(|j| x[j * sets + k] * scaled[j]).sum::<f64>();
            }
            sums[0] += if sets == 1 {
                binary_row(margins[0], label, weight, &mut multipliers[0])
            } else {
                multinomial_row(&margins, label as usize, weight, &mut multipliers)
            };
            for j in 0..dim {
                (0..sets).for_each(|k| sums[1 + j * sets + k] += multipliers[k] * scaled[j]);
            }
            if self.fit_intercept {
                (0..sets).for_each(|k| sums[1 + dim * sets + k] += multipliers[k]);
            }
        }
        if self.fit_intercept {
            let multiplier_sums: Vec<f64> = (0..sets).map(|k| sums[1 + dim * sets + k]).collect();
            for (j, mean) in self.scaled_mean.iter().enumerate() {
                (0..sets).for_each(|k| sums[1 + j * sets + k] -= multiplier_sums[k] * mean);
            }
        }
        sums
    }

    /// [`loss_and_gradient`](Self::loss_and_gradient) of a binomial fit, whose one set of coefficients makes
    /// each row's margin a single dot product: the same sums in the same order (so the same bits), without the
    /// bookkeeping of several sets.
    fn binary_loss_and_gradient(&self, x: &[f64]) -> Vec<f64> {
        let dim = self.shard.dim();
        let offset = self.offset(x, 0);
        let coefficients = &x[..dim];
        let mut sums = vec![0.0; 1 + x.len()];
        let (loss, rest) = sums.split_at_mut(1);
        let (gradient, intercept) = rest.split_at_mut(dim);
        let (mut scaled, mut multiplier) = (vec![0.0; dim], 0.0);
        for (features, label, weight) in self.shard.weighted_rows() {
            scaled
                .iter_mut()
                .zip(features.iter().zip(&self.inverse_std))
                .for_each(|(s, (f, i))| *s = f * i);
            let margin = offset + coefficients.iter().zip(&scaled).map(|(c, s)| c * s).sum::<f64>();
            loss[0] += binary_row(margin, label, weight, &mut multiplier);
            gradient.iter_mut().zip(&scaled).for_each(|(g, s)| *g += multiplier * s);
            if let Some(intercept) = intercept.first_mut() {
                *intercept += multiplier;
            }
        }
        if let Some(&multiplier_sum) = intercept.first() {
            gradient
                .iter_mut()
                .zip(&self.scaled_mean)
                .for_each(|(g, mean)| *g -= multiplier_sum * mean);
        }
        sums
    }

    /// Class `k`'s margin offset: its intercept less the centering of its coefficients.
    fn offset(&self, x: &[f64], k: usize) -> f64 {
        if !self.fit_intercept {
            return 0.0;
        }
        let (dim, sets) = (self.shard.dim(), self.sets);
        x[dim * sets + k] - (0..dim).map(|j| x[j * sets + k] * self.scaled_mean[j]).sum::<f64>()
    }

    /// The solution back on the original scale, with Spark's centering of multinomial coefficients.
    fn fit(&self, num_classes: usize, multinomial: bool, settings: &LogisticSettings, minimum: Minimum) -> LogisticFit {
        let (dim, sets, x) = (self.shard.dim(), self.sets, &minimum.x);
        let mut coefficient_matrix = vec![0.0; sets * dim];
        for k in 0..sets {
            for j in 0..dim {
                let std = self.std[j];
                coefficient_matrix[k * dim + j] = if std != 0.0 { x[j * sets + k] / std } else { 0.0 };
            }
        }
        let mut intercept_vector: Vec<f64> = (0..sets).map(|k| self.offset(x, k)).collect();
        // Spark centers neither coefficients nor intercepts found within bounds.
        if multinomial && !self.bounded {
            if settings.reg_param == 0.0 {
                for j in 0..dim {
                    let mean = (0..sets).map(|k| coefficient_matrix[k * dim + j]).sum::<f64>() / sets as f64;
                    (0..sets).for_each(|k| coefficient_matrix[k * dim + j] -= mean);
                }
            }
            if self.fit_intercept {
                let mean = intercept_vector.iter().sum::<f64>() / sets as f64;
                intercept_vector.iter_mut().for_each(|b| *b -= mean);
            }
        }
        LogisticFit {
            num_classes,
            num_features: dim,
            multinomial,
            coefficient_matrix,
            intercept_vector,
            solved: Some(Solved::from(minimum)),
        }
    }
}

/// A row's binomial loss at `margin`, and its gradient multiplier `w·(σ(m) − y)`.
fn binary_row(margin: f64, label: f64, weight: f64, multiplier: &mut f64) -> f64 {
    *multiplier = weight * (1.0 / (1.0 + (-margin).exp()) - label);
    if label > 0.0 {
        weight * log1p_exp(-margin)
    } else {
        weight * (log1p_exp(-margin) + margin)
    }
}

/// A row's multinomial loss `w·(log Σ e^m − m_y)`, and the multipliers `w·(p_k − [y = k])`.
fn multinomial_row(margins: &[f64], label: usize, weight: f64, multipliers: &mut [f64]) -> f64 {
    let largest = margins.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = margins.iter().map(|m| (m - largest).exp()).sum();
    for (k, (multiplier, margin)) in multipliers.iter_mut().zip(margins).enumerate() {
        let probability = (margin - largest).exp() / sum;
        *multiplier = weight * (probability - if k == label { 1.0 } else { 0.0 });
    }
    weight * (sum.ln() + largest - margins[label])
}

/// `log(1 + eˣ)` without overflow.
fn log1p_exp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}
