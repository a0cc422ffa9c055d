//! Spark's `LinearRegression` fit (squared error): the normal equation for up to 4,096 features, L-BFGS
//! (OWL-QN with an L1 part) on standardized features and label otherwise or when asked.

use super::linear_model::{LinearFit, LinearSettings, LinearSolver, MAX_FEATURES_FOR_NORMAL, constant, label_scale};
use super::moments::inverse;
use super::normal_path::fit_normal;
use super::penalty::Penalty;
use super::{FitError, Moments, Reduce, Shard, Solved};
use crate::Lbfgs;

/// Fits Spark's `LinearRegression` on every rank's shard; every rank returns the same fit.
///
/// ```
/// use hearth_optim::glm::{Alone, LinearSettings, Shard, fit_linear};
/// // Spark's WeightedLeastSquaresSuite rows: y ≈ 18.08 + 6.08·a − 0.6·b.
/// let shard = Shard::new(2, vec![0., 5., 1., 7., 2., 11., 3., 13.], vec![17., 19., 23., 29.], Some(vec![1., 2., 3., 4.]))
///     .unwrap();
/// let fit = fit_linear(&shard, &LinearSettings::default(), &mut Alone).unwrap();
/// assert!((fit.intercept - 18.08).abs() < 1e-9 && (fit.coefficients[0] - 6.08).abs() < 1e-9);
/// ```
pub fn fit_linear<R: Reduce>(
    shard: &Shard,
    settings: &LinearSettings,
    ranks: &mut R,
) -> Result<LinearFit, FitError<R::Error>> {
    let normal = match settings.solver {
        LinearSolver::Normal => true,
        LinearSolver::Auto => shard.dim() <= MAX_FEATURES_FOR_NORMAL,
        LinearSolver::LBfgs => false,
    };
    if normal {
        return fit_normal(shard, settings, ranks);
    }
    let moments = Moments::of(shard, ranks).map_err(FitError::Ranks)?;
    let Some(label_std) = label_scale(&moments, settings)? else {
        return Ok(constant(shard.dim(), moments.label_mean));
    };
    let std = moments.unbiased_std();
    let inverse_std = inverse(&std);
    let scaled_mean: Vec<f64> = moments.mean.iter().zip(&inverse_std).map(|(m, i)| i * m).collect();
    let penalty = Penalty::new(
        settings.reg_param / label_std,
        settings.elastic_net_param,
        settings.standardization,
        &std,
    );
    let dim = shard.dim();
    let mut lbfgs = Lbfgs::new().max_iter(settings.max_iter).tol(settings.tol);
    if penalty.has_l1() {
        lbfgs = lbfgs.l1(penalty.l1_weights(dim, Some));
    }
    let label_offset = if settings.fit_intercept {
        moments.label_mean / label_std
    } else {
        0.0
    };
    let mut objective = |beta: &mut [f64]| -> Result<(f64, Vec<f64>), R::Error> {
        let offset = if settings.fit_intercept {
            label_offset - beta.iter().zip(&scaled_mean).map(|(b, m)| b * m).sum::<f64>()
        } else {
            0.0
        };
        let mut sums = vec![0.0; 1 + dim];
        for (features, label, weight) in shard.weighted_rows() {
            let scaled = features.iter().zip(&inverse_std).map(|(f, i)| f * i);
            let prediction: f64 = scaled.clone().zip(beta.iter()).map(|(x, b)| x * b).sum();
            let diff = prediction - label / label_std + offset;
            sums[0] += weight * diff * diff / 2.0;
            sums[1..]
                .iter_mut()
                .zip(scaled)
                .for_each(|(g, x)| *g += weight * diff * x);
        }
        ranks.sum(&mut sums)?;
        let mut value = sums[0] / moments.weight_sum;
        let scale = 1.0 / moments.weight_sum;
        let mut gradient: Vec<f64> = sums[1..].iter().map(|g| g * scale).collect();
        penalty.add_l2(beta, Some, &mut value, &mut gradient);
        Ok((value, gradient))
    };
    let minimum = lbfgs
        .minimize(&mut objective, vec![0.0; dim])
        .map_err(FitError::Ranks)?;
    let coefficients: Vec<f64> = minimum
        .x
        .iter()
        .zip(&std)
        .map(|(b, s)| if *s != 0.0 { b * (label_std / s) } else { 0.0 })
        .collect();
    let intercept = if settings.fit_intercept {
        moments.label_mean - coefficients.iter().zip(&moments.mean).map(|(c, m)| c * m).sum::<f64>()
    } else {
        0.0
    };
    Ok(LinearFit {
        coefficients,
        intercept,
        solved: Solved::from(minimum),
        inverse_gram_diagonal: Vec::new(),
    })
}
