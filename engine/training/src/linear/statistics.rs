//! A least-squares fit's coefficient statistics, as Spark's `LinearRegressionSummary` reports them for a fit
//! solved by the normal equation: each estimate's standard error `√(σ² · diag((XᵀWX)⁻¹))` with
//! `σ² = RSS / degrees of freedom`, its t statistic, and the two-sided p-value of Student's t with those degrees
//! of freedom — the coefficients' first, the intercept's last.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::LinearRegressionModel;

/// The standard errors, t statistics and p-values of a [`LinearRegressionModel`]'s coefficients and intercept
/// (last, when it has one): Spark's `coefficientStandardErrors`, `tValues` and `pValues`.
#[derive(Clone, Debug, PartialEq)]
pub struct CoefficientStatistics {
    /// Each estimate's standard error.
    pub standard_errors: Vec<f64>,
    /// Each estimate over its standard error.
    pub t_values: Vec<f64>,
    /// The two-sided p-value of each t statistic.
    pub p_values: Vec<f64>,
}

impl LinearRegressionModel {
    /// Spark's `degreesOfFreedom` over `rows` rows: the rows less one per coefficient and the intercept.
    ///
    /// ```
    /// # use hearth_training::linear::LinearRegressionModel;
    /// # fn check(model: &LinearRegressionModel) {
    /// // Two features and an intercept fitted on four rows leave one degree of freedom.
    /// assert_eq!(model.degrees_of_freedom(4), 1);
    /// # }
    /// ```
    pub fn degrees_of_freedom(&self, rows: u64) -> i64 {
        let estimates = self.coefficients().len() + usize::from(self.get_fit_intercept());
        i64::try_from(rows).unwrap_or(i64::MAX) - i64::try_from(estimates).unwrap_or(i64::MAX)
    }

    /// The coefficients' statistics from `rss`, the training rows' weighted residual sum of squares, over
    /// `rows` rows; `None` when the fit was not a Cholesky solve (Spark: "No Std. Error of coefficients
    /// available") or leaves no degree of freedom.
    ///
    /// ```
    /// # use hearth_training::linear::LinearRegressionModel;
    /// # fn check(model: &LinearRegressionModel, rss: f64) {
    /// if let Some(statistics) = model.coefficient_statistics(rss, 1_000) {
    ///     assert_eq!(statistics.p_values.len(), model.coefficients().len() + 1);
    /// }
    /// # }
    /// ```
    pub fn coefficient_statistics(&self, rss: f64, rows: u64) -> Option<CoefficientStatistics> {
        let diagonal = self.inverse_gram_diagonal();
        let degrees = self.degrees_of_freedom(rows);
        if diagonal.is_empty() || degrees <= 0 {
            return None;
        }
        let sigma2 = rss / degrees as f64;
        let standard_errors: Vec<f64> = diagonal.iter().map(|d| (d * sigma2).sqrt()).collect();
        let mut estimates = self.coefficients().to_vec();
        if self.get_fit_intercept() {
            estimates.push(self.intercept());
        }
        let t_values: Vec<f64> = estimates.iter().zip(&standard_errors).map(|(e, s)| e / s).collect();
        let students = StudentsT::new(0.0, 1.0, degrees as f64).ok()?;
        let p_values = t_values.iter().map(|t| 2.0 * (1.0 - students.cdf(t.abs()))).collect();
        Some(CoefficientStatistics {
            standard_errors,
            t_values,
            p_values,
        })
    }
}
