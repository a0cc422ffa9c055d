//! The trained network that ends a model's pipeline, a classifier or a regressor, read the same way by the
//! catalog and the `ML.` table functions.

use hearth_engine::pipeline::PipelineModel;
use hearth_engine::train::{ClassificationModel, EpochStats, RegressionModel, TrainingSummary};
use hearth_torch::artifact::ModelArtifact;

/// The trained network ending a pipeline: a classifier or a regressor, read the same way.
#[derive(Clone, Copy)]
pub enum Trained<'a> {
    /// A classifier.
    Classifier(&'a ClassificationModel),
    /// A regressor.
    Regressor(&'a RegressionModel),
}

impl<'a> Trained<'a> {
    /// The network ending `pipeline`, if it ends with one.
    pub fn of(pipeline: &'a PipelineModel) -> Option<Self> {
        pipeline
            .last_stage::<ClassificationModel>()
            .map(Trained::Classifier)
            .or_else(|| pipeline.last_stage::<RegressionModel>().map(Trained::Regressor))
    }

    /// Its training history, one entry per epoch.
    pub fn history(self) -> &'a [EpochStats] {
        match self {
            Trained::Classifier(m) => m.history(),
            Trained::Regressor(m) => m.history(),
        }
    }

    pub(crate) fn summary(self) -> &'a TrainingSummary {
        match self {
            Trained::Classifier(m) => m.summary(),
            Trained::Regressor(m) => m.summary(),
        }
    }

    pub(crate) fn artifact(self) -> &'a ModelArtifact {
        match self {
            Trained::Classifier(m) => m.artifact(),
            Trained::Regressor(m) => m.artifact(),
        }
    }

    pub(crate) fn features_col(self) -> &'a str {
        match self {
            Trained::Classifier(m) => m.features_col(),
            Trained::Regressor(m) => m.features_col(),
        }
    }

    pub(crate) fn label_col(self) -> &'a str {
        match self {
            Trained::Classifier(m) => m.label_col(),
            Trained::Regressor(m) => m.label_col(),
        }
    }

    pub(crate) fn prediction_col(self) -> &'a str {
        match self {
            Trained::Classifier(m) => m.prediction_col(),
            Trained::Regressor(m) => m.prediction_col(),
        }
    }
}
