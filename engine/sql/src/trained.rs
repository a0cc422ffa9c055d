//! The trained model that ends a model's pipeline — a network (classifier or regressor) or one of Spark's
//! linear models solved exactly — read the same way by the catalog and the `ML.` table functions.

use std::borrow::Cow;

use hearth_preprocessing::pipeline::PipelineModel;
use hearth_preprocessing::stage::ClassifierColumns;
use hearth_torch::artifact::ModelArtifact;
use hearth_training::linear::{LinearRegressionModel, LogisticRegressionModel, Solved};
use hearth_training::train::{ClassificationModel, EpochStats, RegressionModel, TrainingSummary};

use super::linear_artifact::{linear_artifact, logistic_artifact};

/// The trained model ending a pipeline: a network or a linear model, a classifier or a regressor.
#[derive(Clone, Copy)]
pub enum Trained<'a> {
    /// A network classifier, trained by mini-batches.
    Classifier(&'a ClassificationModel),
    /// A network regressor, trained by mini-batches.
    Regressor(&'a RegressionModel),
    /// Spark's logistic regression, solved by L-BFGS.
    Logistic(&'a LogisticRegressionModel),
    /// Spark's linear regression, solved by the normal equation or L-BFGS.
    Linear(&'a LinearRegressionModel),
}

impl<'a> Trained<'a> {
    /// The model ending `pipeline`, if it ends with one.
    pub fn of(pipeline: &'a PipelineModel) -> Option<Self> {
        pipeline
            .last_stage::<ClassificationModel>()
            .map(Trained::Classifier)
            .or_else(|| pipeline.last_stage::<RegressionModel>().map(Trained::Regressor))
            .or_else(|| pipeline.last_stage::<LogisticRegressionModel>().map(Trained::Logistic))
            .or_else(|| pipeline.last_stage::<LinearRegressionModel>().map(Trained::Linear))
    }

    /// A network's training history, one entry per epoch (empty for a linear model: see
    /// [`Trained::solved`]).
    pub fn history(self) -> &'a [EpochStats] {
        match self {
            Trained::Classifier(m) => m.history(),
            Trained::Regressor(m) => m.history(),
            Trained::Logistic(_) | Trained::Linear(_) => &[],
        }
    }

    /// Its training curve: a network's history, a linear model's objective after each solver iteration (as
    /// epochs 1, 2, …; none for the normal equation).
    pub fn curve(self) -> Cow<'a, [EpochStats]> {
        let Some(solved) = self.solved() else {
            return Cow::Borrowed(self.history());
        };
        let iterations = solved.objective_history.iter().enumerate().skip(1);
        Cow::Owned(
            iterations
                .map(|(iteration, objective)| EpochStats {
                    epoch: iteration,
                    loss: *objective,
                    accuracy: None,
                    validation_loss: None,
                    validation_accuracy: None,
                    learning_rate: 0.0,
                    seconds: 0.0,
                    rows: self.training_rows(),
                })
                .collect(),
        )
    }

    /// A linear model's solve: the objective at the start and after each iteration (none for a network, nor
    /// for a logistic regression of one class).
    pub fn solved(self) -> Option<&'a Solved> {
        match self {
            Trained::Logistic(m) => m.summary(),
            Trained::Linear(m) => Some(m.summary()),
            Trained::Classifier(_) | Trained::Regressor(_) => None,
        }
    }

    /// Whether it predicts classes.
    pub fn is_classifier(self) -> bool {
        matches!(self, Trained::Classifier(_) | Trained::Logistic(_))
    }

    /// A network's training summary: its ranks and attempts.
    pub(crate) fn summary(self) -> Option<&'a TrainingSummary> {
        match self {
            Trained::Classifier(m) => Some(m.summary()),
            Trained::Regressor(m) => Some(m.summary()),
            Trained::Logistic(_) | Trained::Linear(_) => None,
        }
    }

    /// The rows it was trained on, over every rank.
    pub(crate) fn training_rows(self) -> u64 {
        match self {
            Trained::Logistic(m) => m.training_rows(),
            Trained::Linear(m) => m.training_rows(),
            network => network
                .summary()
                .map_or(0, |s| s.ranks.iter().map(|r| r.rows as u64).sum()),
        }
    }

    /// The last loss: a network's last epoch's mean loss, a solver's last objective (none for the normal
    /// equation, which has no iterations).
    pub(crate) fn final_loss(self) -> Option<f64> {
        match self.solved() {
            Some(solved) if solved.total_iterations == 0 => None,
            Some(solved) => solved.objective_history.last().copied(),
            None => self.history().last().map(|e| e.loss),
        }
    }

    /// The model as a network artifact, for explanations: a network's own; a linear model's coefficients as
    /// one dense layer (the same predictions, in `f32`).
    pub(crate) fn artifact(self) -> Cow<'a, ModelArtifact> {
        match self {
            Trained::Classifier(m) => Cow::Borrowed(m.artifact()),
            Trained::Regressor(m) => Cow::Borrowed(m.artifact()),
            Trained::Logistic(m) => Cow::Owned(logistic_artifact(m)),
            Trained::Linear(m) => Cow::Owned(linear_artifact(m)),
        }
    }

    /// A classifier's columns and classes; none for a regressor.
    pub fn classifier(self) -> Option<&'a dyn ClassifierColumns> {
        match self {
            Trained::Classifier(m) => Some(m),
            Trained::Logistic(m) => Some(m),
            Trained::Regressor(_) | Trained::Linear(_) => None,
        }
    }

    pub(crate) fn features_col(self) -> &'a str {
        match self {
            Trained::Classifier(m) => m.features_col(),
            Trained::Regressor(m) => m.features_col(),
            Trained::Logistic(m) => m.features_col(),
            Trained::Linear(m) => m.features_col(),
        }
    }

    pub(crate) fn label_col(self) -> &'a str {
        match self {
            Trained::Classifier(m) => m.label_col(),
            Trained::Regressor(m) => m.label_col(),
            Trained::Logistic(m) => m.label_col(),
            Trained::Linear(m) => m.label_col(),
        }
    }

    pub(crate) fn prediction_col(self) -> &'a str {
        match self {
            Trained::Classifier(m) => m.prediction_col(),
            Trained::Regressor(m) => m.prediction_col(),
            Trained::Logistic(m) => m.prediction_col(),
            Trained::Linear(m) => m.prediction_col(),
        }
    }
}
