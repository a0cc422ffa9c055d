//! Spark's bounds on a logistic fit's coefficients and intercepts (`lowerBoundsOnCoefficients`,
//! `upperBoundsOnCoefficients`, `lowerBoundsOnIntercepts`, `upperBoundsOnIntercepts`): checked as Spark
//! checks them, and turned into the box of the standardized problem L-BFGS-B solves.

use serde::{Deserialize, Serialize};

use crate::Bounds;

/// A matrix param as Spark's JSON writes it — dense or sparse (CSC, or CSR when transposed) — held as
/// `rows × cols` values, row-major; written back dense.
///
/// ```
/// use hearth_optim::glm::BoundMatrix;
/// // Matrices.sparse(1, 2, [0, 0, 1], [0], [2.0]): the second column's one value.
/// let json = r#"{"class":"matrix","type":0,"numRows":1,"numCols":2,"colPtrs":[0,0,1],"rowIndices":[0],"values":[2.0],"isTransposed":false}"#;
/// let matrix: BoundMatrix = serde_json::from_str(json).unwrap();
/// assert_eq!((matrix.rows(), matrix.cols(), matrix.get(0, 1)), (1, 2, 2.0));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SparkMatrix", into = "SparkMatrix")]
pub struct BoundMatrix {
    rows: usize,
    cols: usize,
    values: Vec<f64>,
}

impl BoundMatrix {
    /// A `rows × cols` matrix of row-major `values`; `None` when their number is not `rows × cols`.
    pub fn new(rows: usize, cols: usize, values: Vec<f64>) -> Option<Self> {
        (values.len() == rows * cols).then_some(Self { rows, cols, values })
    }

    /// Its rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Its columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The value at `(row, col)`.
    pub fn get(&self, row: usize, col: usize) -> f64 {
        self.values[row * self.cols + col]
    }
}

/// Spark's `JsonMatrixConverter` form.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SparkMatrix {
    #[serde(default)]
    class: Option<String>,
    #[serde(rename = "type")]
    kind: u8,
    num_rows: usize,
    num_cols: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    col_ptrs: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    row_indices: Option<Vec<usize>>,
    values: Vec<f64>,
    #[serde(default)]
    is_transposed: bool,
}

impl TryFrom<SparkMatrix> for BoundMatrix {
    type Error = String;

    fn try_from(m: SparkMatrix) -> Result<Self, String> {
        let (rows, cols) = (m.num_rows, m.num_cols);
        // Stored major by major: columns (rows when transposed), each of `minor` values.
        let (majors, minor) = if m.is_transposed { (rows, cols) } else { (cols, rows) };
        let mut values = vec![0.0; rows * cols];
        let mut place = |major: usize, minor_index: usize, value: f64| -> Result<(), String> {
            let (row, col) = if m.is_transposed {
                (major, minor_index)
            } else {
                (minor_index, major)
            };
            if row >= rows || col >= cols {
                return Err(format!("a {rows} × {cols} matrix has no entry ({row}, {col})"));
            }
            values[row * cols + col] = value;
            Ok(())
        };
        match (m.kind, m.col_ptrs, m.row_indices) {
            (1, _, _) if m.values.len() == rows * cols => {
                for (i, value) in m.values.iter().enumerate() {
                    place(i / minor.max(1), i % minor.max(1), *value)?;
                }
            }
            (0, Some(pointers), Some(indices)) if pointers.len() == majors + 1 && indices.len() == m.values.len() => {
                for major in 0..majors {
                    let (start, end) = (pointers[major], pointers[major + 1]);
                    if start > end || end > indices.len() {
                        return Err(format!("the sparse matrix's pointers {pointers:?} are out of order"));
                    }
                    for (index, value) in indices[start..end].iter().zip(&m.values[start..end]) {
                        place(major, *index, *value)?;
                    }
                }
            }
            _ => return Err(format!("not a {rows} × {cols} matrix as Spark writes one")),
        }
        Ok(Self { rows, cols, values })
    }
}

impl From<BoundMatrix> for SparkMatrix {
    fn from(m: BoundMatrix) -> Self {
        let column_major = (0..m.cols).flat_map(|c| (0..m.rows).map(move |r| (r, c)));
        Self {
            class: Some("matrix".into()),
            kind: 1,
            num_rows: m.rows,
            num_cols: m.cols,
            col_ptrs: None,
            row_indices: None,
            values: column_major.map(|(r, c)| m.get(r, c)).collect(),
            is_transposed: false,
        }
    }
}

/// Spark's four bound params of `LogisticRegression`; with any set, the fit runs L-BFGS-B.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogisticBounds {
    /// Lower bounds on the coefficients, classes × features (one row when binomial).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower_bounds_on_coefficients: Option<BoundMatrix>,
    /// Upper bounds on the coefficients, classes × features.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upper_bounds_on_coefficients: Option<BoundMatrix>,
    /// Lower bounds on the intercepts, one per class (one when binomial).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower_bounds_on_intercepts: Option<Vec<f64>>,
    /// Upper bounds on the intercepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upper_bounds_on_intercepts: Option<Vec<f64>>,
}

impl LogisticBounds {
    /// Whether any bound is set (Spark's `usingBoundConstrainedOptimization`).
    pub fn any(&self) -> bool {
        self.lower_bounds_on_coefficients.is_some()
            || self.upper_bounds_on_coefficients.is_some()
            || self.lower_bounds_on_intercepts.is_some()
            || self.upper_bounds_on_intercepts.is_some()
    }

    /// Whether the intercepts are bounded by a finite value: the problem is then solved without centering
    /// the features (Spark's `fitWithMean` off).
    pub fn bind_intercepts(&self) -> bool {
        let finite = |bounds: &Option<Vec<f64>>| bounds.iter().flatten().any(|b| b.is_finite());
        finite(&self.lower_bounds_on_intercepts) || finite(&self.upper_bounds_on_intercepts)
    }

    /// Spark's checks before the data is read: only an L2 penalty, no intercept bounds without an
    /// intercept, each lower bound at most its upper one.
    pub fn check(&self, elastic_net_param: f64, fit_intercept: bool) -> Result<(), String> {
        if !self.any() {
            return Ok(());
        }
        if elastic_net_param != 0.0 {
            return Err(format!(
                "Fitting under bound constrained optimization only supports L2 regularization, but got \
                 elasticNetParam = {elastic_net_param}."
            ));
        }
        if !fit_intercept && (self.lower_bounds_on_intercepts.is_some() || self.upper_bounds_on_intercepts.is_some()) {
            return Err("Please don't set bounds on intercepts if fitting without intercept.".into());
        }
        if let (Some(lower), Some(upper)) = (&self.lower_bounds_on_coefficients, &self.upper_bounds_on_coefficients)
            && (lower.rows, lower.cols) == (upper.rows, upper.cols)
            && lower.values.iter().zip(&upper.values).any(|(l, u)| l > u)
        {
            return Err("LowerBoundsOnCoefficients should always be less than or equal to \
                        upperBoundsOnCoefficients."
                .into());
        }
        if let (Some(lower), Some(upper)) = (&self.lower_bounds_on_intercepts, &self.upper_bounds_on_intercepts)
            && lower.len() == upper.len()
            && lower.iter().zip(upper).any(|(l, u)| l > u)
        {
            return Err("LowerBoundsOnIntercepts should always be less than or equal to \
                        upperBoundsOnIntercepts."
                .into());
        }
        Ok(())
    }

    /// The box of the standardized problem of `sets` coefficient sets over features of standard deviations
    /// `std` (column-major `K × (F + 1)`, intercepts last when `fit_intercept`): coefficient bounds scaled by
    /// their feature's deviation, intercept bounds as they are. An error names a shape that does not fit.
    pub(crate) fn standardized(&self, sets: usize, std: &[f64], fit_intercept: bool) -> Result<Bounds, String> {
        let dim = std.len();
        let family = "for binomial regression, or (number of classes, number of features) for multinomial regression";
        for (name, matrix) in [
            ("LowerBoundsOnCoefficients", &self.lower_bounds_on_coefficients),
            ("UpperBoundsOnCoefficients", &self.upper_bounds_on_coefficients),
        ] {
            if let Some(m) = matrix
                && (m.rows, m.cols) != (sets, dim)
            {
                return Err(format!(
                    "The shape of {name} must be compatible with (1, number of features) {family}, but found: \
                     ({}, {}); here ({sets}, {dim}).",
                    m.rows, m.cols
                ));
            }
        }
        for (name, vector) in [
            ("lowerBoundsOnIntercepts", &self.lower_bounds_on_intercepts),
            ("upperBoundsOnIntercepts", &self.upper_bounds_on_intercepts),
        ] {
            if let Some(v) = vector
                && v.len() != sets
            {
                return Err(format!(
                    "The size of {name} must be equal to 1 for binomial regression, or the number of classes for \
                     multinomial regression, but found: {}; here {sets}.",
                    v.len()
                ));
            }
        }
        let size = sets * (dim + usize::from(fit_intercept));
        let side = |matrix: &Option<BoundMatrix>, intercepts: &Option<Vec<f64>>, unbounded: f64| -> Vec<f64> {
            (0..size)
                .map(|i| {
                    let (k, j) = (i % sets, i / sets);
                    if j < dim {
                        // A constant feature's coefficient stays at 0 (its scaled column is all zeros).
                        matrix
                            .as_ref()
                            .map_or(unbounded, |m| if std[j] == 0.0 { 0.0 } else { m.get(k, j) * std[j] })
                    } else {
                        intercepts.as_ref().map_or(unbounded, |b| b[k])
                    }
                })
                .collect()
        };
        Ok(Bounds::new(
            side(
                &self.lower_bounds_on_coefficients,
                &self.lower_bounds_on_intercepts,
                f64::NEG_INFINITY,
            ),
            side(
                &self.upper_bounds_on_coefficients,
                &self.upper_bounds_on_intercepts,
                f64::INFINITY,
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stop;
    use crate::glm::{Alone, LogisticSettings, Shard, fit_logistic};

    /// PySpark's `test_binomial_logistic_regression_with_bound`: four weighted rows, λ = 0.01, coefficients at
    /// least −1 and the intercept at most 0; Spark's answer to 1e-4.
    #[test]
    fn sparks_bounded_binomial_fit() {
        let shard = Shard::new(
            2,
            vec![0., 5., 1., 2., 2., 1., 3., 3.],
            vec![1., 0., 1., 0.],
            Some(vec![1., 2., 3., 4.]),
        )
        .unwrap();
        let bounds = LogisticBounds {
            lower_bounds_on_coefficients: BoundMatrix::new(1, 2, vec![-1.0, -1.0]),
            upper_bounds_on_intercepts: Some(vec![0.0]),
            ..LogisticBounds::default()
        };
        let settings = LogisticSettings {
            reg_param: 0.01,
            bounds,
            ..LogisticSettings::default()
        };
        let fit = fit_logistic(&shard, &settings, &mut Alone).unwrap();
        let want = [-0.2944, -0.0484];
        for (got, want) in fit.coefficient_matrix.iter().zip(want) {
            assert!((got - want).abs() < 1e-4, "{:?}", fit.coefficient_matrix);
        }
        assert!(fit.intercept_vector[0].abs() < 1e-4, "{:?}", fit.intercept_vector);
        assert_ne!(fit.solved.unwrap().stop, Stop::MaxIterations);
    }

    #[test]
    fn bounds_that_do_not_fit_are_refused_as_spark_refuses_them() {
        let bounds = LogisticBounds {
            lower_bounds_on_intercepts: Some(vec![1.0]),
            upper_bounds_on_intercepts: Some(vec![0.0]),
            ..LogisticBounds::default()
        };
        assert!(bounds.check(0.5, true).unwrap_err().contains("only supports L2"));
        assert!(bounds.check(0.0, false).unwrap_err().contains("without intercept"));
        assert!(bounds.check(0.0, true).unwrap_err().contains("LowerBoundsOnIntercepts"));
        let wide = LogisticBounds {
            lower_bounds_on_coefficients: BoundMatrix::new(1, 3, vec![0.0; 3]),
            ..LogisticBounds::default()
        };
        let error = wide.standardized(1, &[1.0, 1.0], true).unwrap_err();
        assert!(error.contains("found: (1, 3)"), "{error}");
    }

    #[test]
    fn a_transposed_dense_matrix_reads_row_by_row() {
        let json = r#"{"type":1,"numRows":2,"numCols":2,"values":[1,2,3,4],"isTransposed":true}"#;
        let m: BoundMatrix = serde_json::from_str(json).unwrap();
        assert_eq!((m.get(0, 1), m.get(1, 0)), (2.0, 3.0));
        let back: BoundMatrix = serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
