//! Training's stage classes and their conformance examples, listed in one place: the estimators and models
//! saved pipelines can hold, which [`TrainingFunctions`](crate::functions::TrainingFunctions) makes loadable
//! in a program whose sessions are built with training.
//!
//! ```
//! let classes: Vec<&str> = hearth_training::classes::TRAINING_CLASSES.iter().map(|c| c.class).collect();
//! assert!(classes.contains(&"MlpClassifier"));
//! ```

use hearth_preprocessing::conformance::{ExampleStage, StageExample};
use hearth_preprocessing::pipeline::{SavedStage, StageClass};

use crate::linear::{LinearRegression, LinearRegressionModel, LogisticRegression, LogisticRegressionModel};
use crate::perceptron::{MultilayerPerceptronClassificationModel, MultilayerPerceptronClassifier};
use crate::train::{
    ClassificationModel, LinearClassifier, LinearRegressor, MlpClassifier, MlpRegressor, RegressionModel,
    SequentialClassifier, SequentialRegressor,
};

/// Training's stage classes: hearth's networks and their models, Spark's linear models and perceptron.
pub const TRAINING_CLASSES: &[StageClass] = &[
    MlpClassifier::CLASS,
    LinearClassifier::CLASS,
    SequentialClassifier::CLASS,
    MlpRegressor::CLASS,
    LinearRegressor::CLASS,
    SequentialRegressor::CLASS,
    ClassificationModel::CLASS,
    RegressionModel::CLASS,
    LogisticRegression::CLASS,
    LogisticRegressionModel::CLASS,
    LinearRegression::CLASS,
    LinearRegressionModel::CLASS,
    MultilayerPerceptronClassifier::CLASS,
    MultilayerPerceptronClassificationModel::CLASS,
];

/// The examples of training's estimators for the conformance battery; with the models they fit, they cover
/// [`TRAINING_CLASSES`].
pub const TRAINING_EXAMPLES: &[StageExample] = &[
    MlpClassifier::EXAMPLE,
    LinearClassifier::EXAMPLE,
    SequentialClassifier::EXAMPLE,
    MlpRegressor::EXAMPLE,
    LinearRegressor::EXAMPLE,
    SequentialRegressor::EXAMPLE,
    LogisticRegression::EXAMPLE,
    LinearRegression::EXAMPLE,
    MultilayerPerceptronClassifier::EXAMPLE,
];
