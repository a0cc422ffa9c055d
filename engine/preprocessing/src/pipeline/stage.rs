//! A pipeline's stages: any [`Estimator`] or [`Transformer`], held behind `Arc<dyn …>` so user stages sit
//! beside hearth's.

use std::fmt;
use std::sync::Arc;

use datafusion::prelude::DataFrame;
use futures::future::BoxFuture;
use hearth_exec::error::Result;

use crate::stage::{Estimator, Stage, Transformer};

/// An estimator as a pipeline holds it: fitting gives a transformer of any type. Every [`Estimator`] is one.
pub trait EstimatorStage: Stage {
    /// Fits the stage on `df`.
    fn fit_stage<'a>(&'a self, df: &'a DataFrame) -> BoxFuture<'a, Result<Arc<dyn Transformer>>>;
}

impl<E: Estimator> EstimatorStage for E {
    fn fit_stage<'a>(&'a self, df: &'a DataFrame) -> BoxFuture<'a, Result<Arc<dyn Transformer>>> {
        Box::pin(async move {
            let model = self.fit(df).await?;
            Ok(Arc::new(model) as Arc<dyn Transformer>)
        })
    }
}

/// One stage of a [`Pipeline`](super::Pipeline): an estimator to fit, or a transformer used as is (a stage
/// that needs no fitting, or one fitted before). Two stages are equal when their class and parameters are.
#[derive(Clone)]
pub enum PipelineStage {
    /// Fitted by the pipeline.
    Estimator(Arc<dyn EstimatorStage>),
    /// Used as is.
    Transformer(Arc<dyn Transformer>),
}

impl PipelineStage {
    /// Any estimator as a stage.
    pub fn estimator(estimator: impl Estimator) -> Self {
        PipelineStage::Estimator(Arc::new(estimator))
    }

    /// Any transformer as a stage.
    pub fn transformer(transformer: impl Transformer) -> Self {
        PipelineStage::Transformer(Arc::new(transformer))
    }

    /// The stage as a [`Stage`]: class, uid, parameters.
    pub fn as_stage(&self) -> &dyn Stage {
        match self {
            PipelineStage::Estimator(e) => e.as_ref(),
            PipelineStage::Transformer(t) => t.as_ref(),
        }
    }

    pub(crate) fn is_estimator(&self) -> bool {
        matches!(self, PipelineStage::Estimator(_))
    }

    /// The stage's transformer: fitted on `df` for an estimator, itself for a transformer.
    pub(crate) async fn fit(&self, df: &DataFrame) -> Result<Arc<dyn Transformer>> {
        match self {
            PipelineStage::Estimator(e) => e.fit_stage(df).await,
            PipelineStage::Transformer(t) => Ok(Arc::clone(t)),
        }
    }
}

impl fmt::Debug for PipelineStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipelineStage::Estimator(e) => f.debug_tuple("Estimator").field(e).finish(),
            PipelineStage::Transformer(t) => f.debug_tuple("Transformer").field(t).finish(),
        }
    }
}

/// A stage type that enters a pipeline as an estimator to fit or a transformer used as is: what
/// [`Pipeline::stage`](super::Pipeline::stage) takes. Each stage's own module implements it.
pub trait IntoPipelineStage {
    /// The stage as a pipeline holds it.
    fn into_stage(self) -> PipelineStage;
}

impl<S: IntoPipelineStage> From<S> for PipelineStage {
    fn from(stage: S) -> Self {
        stage.into_stage()
    }
}

/// Two stages are the same when their class and parameters are.
pub(crate) fn same_stage(a: &dyn Stage, b: &dyn Stage) -> bool {
    a.class() == b.class() && matches!((a.params(), b.params()), (Ok(x), Ok(y)) if x == y)
}

impl PartialEq for PipelineStage {
    fn eq(&self, other: &Self) -> bool {
        self.is_estimator() == other.is_estimator() && same_stage(self.as_stage(), other.as_stage())
    }
}
