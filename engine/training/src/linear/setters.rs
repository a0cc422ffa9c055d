//! The setters both linear estimators share: their columns, Spark's penalty and solver params, and the ranks.

/// Setters of the columns, the penalty (`reg_param`, `elastic_net_param`), the solver (`max_iter`, `tol`),
/// `fit_intercept`, `standardization` and `workers`, each documented with its default.
macro_rules! glm_setters {
    () => {
        /// The vector column of features (default `features`).
        pub fn features_col(mut self, column: impl Into<String>) -> Self {
            self.features_col = column.into();
            self
        }

        /// The label column (default `label`).
        pub fn label_col(mut self, column: impl Into<String>) -> Self {
            self.label_col = column.into();
            self
        }

        /// A column of non-negative row weights.
        pub fn weight_col(mut self, column: impl Into<String>) -> Self {
            self.weight_col = Some(column.into());
            self
        }

        /// The prediction column the model adds (default `prediction`).
        pub fn prediction_col(mut self, column: impl Into<String>) -> Self {
            self.prediction_col = column.into();
            self
        }

        /// The penalty's strength λ (default 0).
        pub fn reg_param(mut self, value: f64) -> Self {
            self.settings.reg_param = value;
            self
        }

        /// λ, as set.
        pub fn get_reg_param(&self) -> f64 {
            self.settings.reg_param
        }

        /// The penalty's mix α: 0 is L2, 1 is L1 (default 0).
        pub fn elastic_net_param(mut self, value: f64) -> Self {
            self.settings.elastic_net_param = value;
            self
        }

        /// The most solver iterations (default 100).
        pub fn max_iter(mut self, iterations: usize) -> Self {
            self.settings.max_iter = iterations;
            self
        }

        /// The solver's relative tolerance (default 1e-6).
        pub fn tol(mut self, tol: f64) -> Self {
            self.settings.tol = tol;
            self
        }

        /// Whether to fit intercepts (default true).
        pub fn fit_intercept(mut self, fit: bool) -> Self {
            self.settings.fit_intercept = fit;
            self
        }

        /// Whether the penalty applies to standardized coefficients (default true).
        pub fn standardization(mut self, standardize: bool) -> Self {
            self.settings.standardization = standardize;
            self
        }

        /// Ranks of the barrier stage fitting together (default 1).
        pub fn workers(mut self, workers: usize) -> Self {
            self.workers = workers;
            self
        }
    };
}

/// Getters of a fitted model's columns, each by its field's name.
macro_rules! model_columns {
    ($($column:ident),*) => {$(
        #[doc = concat!("The model's `", stringify!($column), "`.")]
        pub fn $column(&self) -> &str {
            &self.$column
        }
    )*};
}

/// The label column of a model saved before models kept theirs: Spark's default.
pub(crate) fn default_label_col() -> String {
    "label".to_string()
}

pub(super) use {glm_setters, model_columns};
