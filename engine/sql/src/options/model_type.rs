//! What `CREATE MODEL` trains (`model_type`) and how a linear model is solved (`optimize_strategy`).

use std::fmt;

/// What `CREATE MODEL` trains (`model_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelType {
    /// `'mlp_classifier'` (alias `'dnn_classifier'`): [`MlpClassifier`](hearth_training::train::MlpClassifier).
    MlpClassifier,
    /// `'logistic_reg'`: Spark's [`LogisticRegression`](hearth_training::linear::LogisticRegression), or under
    /// `optimize_strategy = 'MINI_BATCH'` the network [`LinearClassifier`](hearth_training::train::LinearClassifier).
    LogisticReg,
    /// `'linear_reg'`: Spark's [`LinearRegression`](hearth_training::linear::LinearRegression), or under
    /// `optimize_strategy = 'MINI_BATCH'` the network [`LinearRegressor`](hearth_training::train::LinearRegressor).
    LinearReg,
    /// `'mlp_regressor'` (alias `'dnn_regressor'`): [`MlpRegressor`](hearth_training::train::MlpRegressor).
    MlpRegressor,
    /// `'kmeans'`: [`KMeans`](hearth_preprocessing::clustering::KMeans) clustering, no label.
    KMeans,
}

impl ModelType {
    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_lowercase().as_str() {
            "mlp_classifier" | "dnn_classifier" => Some(ModelType::MlpClassifier),
            "logistic_reg" => Some(ModelType::LogisticReg),
            "linear_reg" => Some(ModelType::LinearReg),
            "mlp_regressor" | "dnn_regressor" => Some(ModelType::MlpRegressor),
            "kmeans" => Some(ModelType::KMeans),
            _ => None,
        }
    }

    /// Whether the model predicts classes.
    pub fn is_classifier(self) -> bool {
        matches!(self, ModelType::MlpClassifier | ModelType::LogisticReg)
    }

    /// Whether the model is trained through the barrier stage, with a label: a network or a linear model (else
    /// k-means).
    pub fn is_network(self) -> bool {
        !matches!(self, ModelType::KMeans)
    }

    /// Whether the model is `linear_reg` or `logistic_reg`.
    pub fn is_linear(self) -> bool {
        matches!(self, ModelType::LinearReg | ModelType::LogisticReg)
    }
}

impl fmt::Display for ModelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ModelType::MlpClassifier => "mlp_classifier",
            ModelType::LogisticReg => "logistic_reg",
            ModelType::LinearReg => "linear_reg",
            ModelType::MlpRegressor => "mlp_regressor",
            ModelType::KMeans => "kmeans",
        })
    }
}

/// How `linear_reg` and `logistic_reg` are solved (`optimize_strategy`, BigQuery ML's option).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimizeStrategy {
    /// `'auto_strategy'` (the default): `linear_reg` by the normal equation when there are at most 4,096
    /// features and no L1 penalty, else as `BATCH_GRADIENT_DESCENT` (Spark's `solver = "auto"`);
    /// `logistic_reg` by L-BFGS.
    Auto,
    /// `'normal_equation'`: `linear_reg` by the Cholesky factorization of the summed Gram matrix (Spark's
    /// `solver = "normal"`).
    NormalEquation,
    /// `'batch_gradient_descent'`: L-BFGS over every row each iteration, OWL-QN with an L1 penalty (Spark's
    /// `solver = "l-bfgs"`).
    BatchGradientDescent,
    /// hearth: `'mini_batch'`: trained as a one-layer network, by mini-batches with the network options
    /// (`optimizer`, `learn_rate`, `batch_size`, `max_iterations` epochs, GPUs): for data too large for
    /// full passes.
    MiniBatch,
}

impl fmt::Display for OptimizeStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptimizeStrategy::Auto => "AUTO_STRATEGY",
            OptimizeStrategy::NormalEquation => "NORMAL_EQUATION",
            OptimizeStrategy::BatchGradientDescent => "BATCH_GRADIENT_DESCENT",
            OptimizeStrategy::MiniBatch => "MINI_BATCH",
        })
    }
}
