//! What a linear fit is told and gives: Spark's `LinearRegression` settings and the fitted coefficients, and
//! the shortcut both solvers take for a constant label.

use serde::{Deserialize, Serialize};

use super::{FitError, Moments, Solved};

/// The most features the `auto` solver solves by the normal equation (Spark's `MAX_FEATURES_FOR_NORMAL_SOLVER`).
pub const MAX_FEATURES_FOR_NORMAL: usize = 4096;

/// Spark's `solver`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinearSolver {
    /// The normal equation up to 4,096 features, L-BFGS beyond.
    #[default]
    Auto,
    /// The normal equation (Cholesky; L-BFGS or OWL-QN on it when singular or with an L1 part).
    Normal,
    /// L-BFGS (OWL-QN with an L1 part) over the rows.
    #[serde(rename = "l-bfgs")]
    LBfgs,
}

/// The settings of a linear fit, Spark's params of the same names and defaults.
///
/// ```
/// use hearth_optim::glm::{LinearSettings, LinearSolver};
/// assert_eq!(LinearSettings::default().solver, LinearSolver::Auto);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LinearSettings {
    /// λ, the penalty's strength.
    pub reg_param: f64,
    /// α: 0 is all L2, 1 all L1.
    pub elastic_net_param: f64,
    /// The solver's iteration limit.
    pub max_iter: usize,
    /// The solver's relative tolerance.
    pub tol: f64,
    /// Whether to fit an intercept.
    pub fit_intercept: bool,
    /// Whether to penalize standardized coefficients.
    pub standardization: bool,
    /// Which solver.
    pub solver: LinearSolver,
}

impl Default for LinearSettings {
    fn default() -> Self {
        Self {
            reg_param: 0.0,
            elastic_net_param: 0.0,
            max_iter: 100,
            tol: 1e-6,
            fit_intercept: true,
            standardization: true,
            solver: LinearSolver::Auto,
        }
    }
}

/// A fitted linear model on the original scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinearFit {
    /// One coefficient per feature.
    pub coefficients: Vec<f64>,
    /// The intercept (0 without one).
    pub intercept: f64,
    /// How the solve went: no iterations and a history of `[0]` for a Cholesky solve or a constant label, as
    /// Spark reports them.
    #[serde(default)]
    pub solved: Solved,
    /// The diagonal of `(XᵀWX)⁻¹` in the original units, the intercept's last (Spark's `diagInvAtWA`, what the
    /// coefficients' standard errors are made of): from a Cholesky solve only, empty after an iterative one.
    #[serde(default)]
    pub inverse_gram_diagonal: Vec<f64>,
}

/// The label's standard deviation to standardize by, or `None` when the label is constant and the answer is its
/// mean (Spark's shortcut); an error when a constant label would have to be regularized.
pub(crate) fn label_scale<E>(moments: &Moments, settings: &LinearSettings) -> Result<Option<f64>, FitError<E>> {
    let std = moments.label_unbiased_std();
    if std != 0.0 {
        return Ok(Some(std));
    }
    if settings.fit_intercept || moments.label_mean == 0.0 {
        return Ok(None);
    }
    if settings.reg_param != 0.0 {
        return Err(FitError::ConstantLabel {
            mean: moments.label_mean,
        });
    }
    Ok(Some(moments.label_mean.abs()))
}

/// The fit of a constant label: zero coefficients, the label as intercept, nothing solved.
pub(crate) fn constant(dim: usize, mean: f64) -> LinearFit {
    LinearFit {
        coefficients: vec![0.0; dim],
        intercept: mean,
        solved: Solved::unsolved(),
        inverse_gram_diagonal: Vec::new(),
    }
}
