//! Spark's `WeightedLeastSquares`: one pass for the weighted Gram matrix of features, intercept column and label,
//! standardized by population deviations, then a Cholesky solve — or L-BFGS / OWL-QN on the same quadratic
//! when the matrix is singular or the penalty has an L1 part.

use super::linear_model::{LinearFit, LinearSettings, constant};
use super::{FitError, Reduce, Shard, Solved};
use crate::{Lbfgs, normal_equation_and_inverse_diagonal};

/// The standardized normal equation `AA·x = AB` (intercept last), and what undoes the standardization.
struct Standardized {
    dim: usize,
    fit_intercept: bool,
    aa: Vec<f64>,
    ab: Vec<f64>,
    bb_bar: f64,
    b_bar: f64,
    a_bar: Vec<f64>,
    a_std: Vec<f64>,
    b_std: f64,
}

/// Fits by the normal equation; see the [module](self).
pub(crate) fn fit_normal<R: Reduce>(
    shard: &Shard,
    settings: &LinearSettings,
    ranks: &mut R,
) -> Result<LinearFit, FitError<R::Error>> {
    let dim = shard.dim();
    let sums = weighted_sums(shard, ranks).map_err(FitError::Ranks)?;
    let Some(system) = Standardized::new(dim, &sums, settings)? else {
        return Ok(constant(dim, sums[1] / sums[0]));
    };
    if settings.elastic_net_param != 0.0 && settings.reg_param != 0.0 {
        let (solution, solved) = system.iterative(settings, true);
        return Ok(system.original_scale(&solution, solved));
    }
    Ok(match normal_equation_and_inverse_diagonal(&system.aa, &system.ab) {
        Ok((solution, inverse)) => LinearFit {
            inverse_gram_diagonal: system.original_inverse_diagonal(&inverse, sums[0]),
            ..system.original_scale(&solution, Solved::unsolved())
        },
        Err(_) => {
            let (solution, solved) = system.iterative(settings, false);
            system.original_scale(&solution, solved)
        }
    })
}

/// `[W, Σwb, Σwb², Σwa…, Σwab…, Σw·aᵢaⱼ (row-major)…]` over every rank.
fn weighted_sums<R: Reduce>(shard: &Shard, ranks: &mut R) -> Result<Vec<f64>, R::Error> {
    let dim = shard.dim();
    let mut sums = vec![0.0; 3 + 2 * dim + dim * dim];
    let (label, rest) = sums.split_at_mut(3);
    let (features, rest) = rest.split_at_mut(dim);
    let (cross, gram) = rest.split_at_mut(dim);
    for (a, b, w) in shard.weighted_rows() {
        label[0] += w;
        label[1] += w * b;
        label[2] += w * b * b;
        for (i, ai) in a.iter().enumerate() {
            let w_ai = w * ai;
            features[i] += w_ai;
            cross[i] += w_ai * b;
            // The upper triangle of row i, as slices the compiler vectorizes.
            let row = &mut gram[i * dim + i..(i + 1) * dim];
            row.iter_mut().zip(&a[i..]).for_each(|(sum, aj)| *sum += w_ai * aj);
        }
    }
    ranks.sum(&mut sums)?;
    Ok(sums)
}

impl Standardized {
    /// The system from the sums, or `None` for a constant label answered by its mean.
    fn new<E>(dim: usize, sums: &[f64], settings: &LinearSettings) -> Result<Option<Self>, FitError<E>> {
        let w = sums[0];
        if w <= 0.0 {
            return Err(FitError::NoRows);
        }
        let (b_bar, bb_bar) = (sums[1] / w, sums[2] / w);
        let a_bar: Vec<f64> = (0..dim).map(|i| sums[3 + i] / w).collect();
        let ab_bar: Vec<f64> = (0..dim).map(|i| sums[3 + dim + i] / w).collect();
        let gram = |i: usize, j: usize| sums[3 + 2 * dim + i.min(j) * dim + i.max(j)] / w;
        let a_std: Vec<f64> = (0..dim)
            .map(|i| (gram(i, i) - a_bar[i] * a_bar[i]).max(0.0).sqrt())
            .collect();
        let raw_b_std = (bb_bar - b_bar * b_bar).max(0.0).sqrt();
        let b_std = if raw_b_std != 0.0 {
            raw_b_std
        } else if settings.fit_intercept || b_bar == 0.0 {
            return Ok(None);
        } else if settings.reg_param != 0.0 {
            return Err(FitError::ConstantLabel { mean: b_bar });
        } else {
            b_bar.abs()
        };
        let scaled = |v: f64, s: f64| if s != 0.0 { v / s } else { 0.0 };
        let effective = settings.reg_param / b_std;
        let l2 = (1.0 - settings.elastic_net_param) * effective;
        let n = dim + usize::from(settings.fit_intercept);
        let mut aa = vec![0.0; n * n];
        for i in 0..dim {
            for j in 0..dim {
                aa[i * n + j] = scaled(gram(i, j), a_std[i] * a_std[j]);
            }
            aa[i * n + i] += match (settings.standardization, a_std[i]) {
                (true, _) => l2,
                (false, s) if s != 0.0 => l2 / (s * s),
                (false, _) => 0.0,
            };
        }
        let mut ab: Vec<f64> = (0..dim).map(|i| scaled(ab_bar[i], a_std[i] * b_std)).collect();
        if settings.fit_intercept {
            for i in 0..dim {
                let a = scaled(a_bar[i], a_std[i]);
                aa[i * n + dim] = a;
                aa[dim * n + i] = a;
            }
            aa[dim * n + dim] = 1.0;
            ab.push(b_bar / b_std);
        }
        let (bb_bar, b_bar) = (bb_bar / (b_std * b_std), b_bar / b_std);
        let a_bar = a_bar.iter().zip(&a_std).map(|(a, s)| scaled(*a, *s)).collect();
        let fit_intercept = settings.fit_intercept;
        Ok(Some(Self {
            dim,
            fit_intercept,
            aa,
            ab,
            bb_bar,
            b_bar,
            a_bar,
            a_std,
            b_std,
        }))
    }

    /// L-BFGS (OWL-QN when `with_l1`) on `½·bb − AB·x + ½·xᵀ·AA·x`; the intercept is written into every point
    /// evaluated as its closed form, as Spark's `QuasiNewtonSolver` does.
    fn iterative(&self, settings: &LinearSettings, with_l1: bool) -> (Vec<f64>, Solved) {
        let n = self.ab.len();
        let mut lbfgs = Lbfgs::new().max_iter(settings.max_iter).tol(settings.tol);
        let l1 = settings.elastic_net_param * settings.reg_param / self.b_std;
        if with_l1 && l1 != 0.0 {
            let weight = |i: usize| match (i == self.dim, settings.standardization, self.a_std.get(i)) {
                (true, _, _) => 0.0,
                (false, true, _) => l1,
                (false, false, Some(s)) if *s != 0.0 => l1 / s,
                (false, false, _) => 0.0,
            };
            lbfgs = lbfgs.l1((0..n).map(weight).collect());
        }
        let mut x0 = vec![0.0; n];
        if self.fit_intercept {
            x0[self.dim] = self.b_bar;
        }
        let mut objective = |x: &mut [f64]| -> Result<(f64, Vec<f64>), std::convert::Infallible> {
            if self.fit_intercept {
                x[self.dim] = self.b_bar - (0..self.dim).map(|i| x[i] * self.a_bar[i]).sum::<f64>();
            }
            let aax: Vec<f64> = (0..n)
                .map(|i| (0..n).map(|j| self.aa[i * n + j] * x[j]).sum())
                .collect();
            let ab_x: f64 = self.ab.iter().zip(x.iter()).map(|(a, b)| a * b).sum();
            let x_aa_x: f64 = x.iter().zip(&aax).map(|(a, b)| a * b).sum();
            let gradient = aax.iter().zip(&self.ab).map(|(a, b)| a - b).collect();
            Ok((0.5 * self.bb_bar - ab_x + 0.5 * x_aa_x, gradient))
        };
        let Ok(minimum) = lbfgs.minimize(&mut objective, x0);
        (minimum.x.clone(), Solved::from(minimum))
    }

    /// The diagonal of `(XᵀWX)⁻¹` in the original units from that of the standardized system's inverse, the
    /// rows' weights summing to `weight_sum` (Spark's `diagInvAtWA`): a feature's entry over its variance, the
    /// intercept's as it is.
    fn original_inverse_diagonal(&self, inverse: &[f64], weight_sum: f64) -> Vec<f64> {
        inverse
            .iter()
            .enumerate()
            .map(|(i, v)| match self.a_std.get(i) {
                Some(std) => v / (weight_sum * std * std),
                None => v / weight_sum,
            })
            .collect()
    }

    /// The solution's coefficients and intercept in the original units.
    fn original_scale(&self, solution: &[f64], solved: Solved) -> LinearFit {
        let coefficients = (0..self.dim)
            .map(|i| {
                if self.a_std[i] != 0.0 {
                    solution[i] * self.b_std / self.a_std[i]
                } else {
                    0.0
                }
            })
            .collect();
        let intercept = if self.fit_intercept {
            solution[self.dim] * self.b_std
        } else {
            0.0
        };
        LinearFit {
            coefficients,
            intercept,
            solved,
            inverse_gram_diagonal: Vec::new(),
        }
    }
}
