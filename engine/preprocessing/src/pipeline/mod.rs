//! `Pipeline` and `PipelineModel`: sequences of stages, fitted with Spark's rule and saved as readable JSON.
//! A pipeline is itself an [`Estimator`] and its model a [`Transformer`], so pipelines nest.

mod classes;
mod persist;
mod reference;
mod stage;
mod writer;

use std::path::Path;
use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::{MemTable, source_as_provider};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::DataFrame;
use hearth_common::params::new_uid;
use hearth_exec::cache::{CachedTable, DEFAULT_MEMORY_BUDGET, for_rereading};
use hearth_exec::error::{HearthError, Result, ResultExt};
use serde::Deserialize;

pub use classes::{
    PREPROCESSING_CLASSES, SavedStage, StageClass, StageLoader, from_params, is_stage_class, load_serde_estimator,
    load_serde_transformer, rebuild_stage, register_stage_class, register_stage_classes, stage_classes,
};
pub use persist::{FORMAT_VERSION, PIPELINE_FILE, refuse_existing};
pub use reference::stage_classes_reference;
pub use stage::{EstimatorStage, IntoPipelineStage, PipelineStage};
pub use writer::MlWriter;

use crate::stage::{Estimator, Stage, Transformer};
use persist::{Document, load_entries, read_document, save_stage_data, stage_entries, write_document};
use stage::same_stage;

/// Whether a plan scans anything other than in-memory tables (which caching would only copy).
pub(crate) fn reads_files(plan: &LogicalPlan) -> bool {
    let mut files = false;
    let _ = plan.apply(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let in_memory = source_as_provider(&scan.source)
                .is_ok_and(|provider| provider.is::<MemTable>() || provider.is::<CachedTable>());
            files |= !in_memory;
        }
        Ok(TreeNodeRecursion::Continue)
    });
    files
}

/// A sequence of stages, fitted as Spark fits a `Pipeline`: estimators are fitted in order, each on the data
/// as transformed by the stages before it; stages after the last estimator are not fitted on, and the data is
/// never transformed by the last estimator's model during fitting. No stages gives an identity model.
///
/// When two or more estimators need data read from files, `fit` caches the input so a file is parsed once,
/// not once per estimator (turn off with [`Pipeline::cache_input`]): on a `local[N]` session as Spark's
/// `persist(MEMORY_AND_DISK)` does — in memory up to [`Pipeline::cache_memory_limit`], the rest on local
/// disk ([`cache`](hearth_exec::cache)); on a fleet not at all, each estimator reading the files again on the
/// executors, so that none of the fleet's data passes through the driver ([`for_rereading`]).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_preprocessing::prelude::*;
/// let session = Session::builder().with_preprocessing().local(2);
/// let df = session.context().sql("SELECT * FROM (VALUES ('a', 1.0), ('b', 2.0), ('a', 4.0)) AS t(c, x)").await.unwrap();
/// let pipeline = Pipeline::new()
///     .stage(StringIndexer::new().input_col("c").output_col("c_idx"))
///     .stage(OneHotEncoder::new().input_col("c_idx").output_col("c_vec"))
///     .stage(VectorAssembler::new().input_cols(["c_vec", "x"]).output_col("features"))
///     .stage(StandardScaler::new().input_col("features").output_col("scaled"));
/// let model = pipeline.fit(&df).await.unwrap();
/// let out = model.transform(&df).unwrap();
/// assert_eq!(out.count().await.unwrap(), 3);
/// # });
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    uid: String,
    stages: Vec<PipelineStage>,
    cache_input: bool,
    cache_memory_limit: usize,
}

impl Default for Pipeline {
    fn default() -> Self {
        Self::new()
    }
}

impl Pipeline {
    /// An empty pipeline.
    pub fn new() -> Self {
        Self {
            uid: new_uid("Pipeline"),
            stages: Vec::new(),
            cache_input: true,
            cache_memory_limit: DEFAULT_MEMORY_BUDGET,
        }
    }

    /// A pipeline of these stages.
    pub fn from_stages(stages: Vec<PipelineStage>) -> Self {
        Self { stages, ..Self::new() }
    }

    /// Appends a stage.
    pub fn stage(mut self, stage: impl Into<PipelineStage>) -> Self {
        self.stages.push(stage.into());
        self
    }

    /// Whether `fit` may hold the input in memory when several estimators read it (default true).
    pub fn cache_input(mut self, cache: bool) -> Self {
        self.cache_input = cache;
        self
    }

    /// How many bytes of a cached input a `local[N]` session holds in memory before it writes the rest to
    /// local disk (default [`DEFAULT_MEMORY_BUDGET`], 1 GiB).
    pub fn cache_memory_limit(mut self, bytes: usize) -> Self {
        self.cache_memory_limit = bytes;
        self
    }

    /// The stages.
    pub fn stages(&self) -> &[PipelineStage] {
        &self.stages
    }

    /// Fits the pipeline and transforms the same data, reading the input once when it is cached
    /// (scikit-learn's `fit_transform`).
    pub async fn fit_transform(&self, df: &DataFrame) -> Result<(PipelineModel, DataFrame)> {
        let (model, input) = self.fit_with_input(df).await?;
        let transformed = model.transform(&input)?;
        Ok((model, transformed))
    }

    async fn fit_with_input(&self, df: &DataFrame) -> Result<(PipelineModel, DataFrame)> {
        let last_estimator = self.stages.iter().rposition(PipelineStage::is_estimator);
        let estimators = self.stages.iter().filter(|s| s.is_estimator()).count();
        let input = if self.cache_input && estimators >= 2 && reads_files(df.logical_plan()) {
            for_rereading(df.clone(), self.cache_memory_limit).await?
        } else {
            df.clone()
        };
        let mut current = input.clone();
        let mut fitted: Vec<Arc<dyn Transformer>> = Vec::with_capacity(self.stages.len());
        let count = self.stages.len();
        for (i, stage) in self.stages.iter().enumerate() {
            let at = || format!("stage {} of {count} ({})", i + 1, stage.as_stage().class());
            let transformer = stage.fit(&current).await.with_context(at)?;
            if last_estimator.is_some_and(|last| i < last) {
                current = transformer.transform(&current).with_context(at)?;
            }
            fitted.push(transformer);
        }
        Ok((
            PipelineModel {
                uid: self.uid.clone(),
                stages: fitted,
            },
            input,
        ))
    }

    /// Saves the (unfitted) pipeline as `dir/pipeline.json`, whole; a `dir` that holds anything is refused
    /// (replace it with `write().overwrite().save(dir)`).
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        self.write().save(dir)
    }

    /// A writer of this pipeline, as Spark's `pipeline.write()`: see [`MlWriter`].
    pub fn write(&self) -> MlWriter<'_> {
        MlWriter::files(|dir| {
            let stages = self.stages.iter().map(PipelineStage::as_stage);
            write_document(dir, "Pipeline", &self.uid, Some(self.cache_input), stages)
        })
    }

    /// Loads a pipeline saved by [`Pipeline::save`], or written by hand: `path` is the directory or the JSON
    /// file itself.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let (document, dir, file) = read_document(path.as_ref(), "Pipeline")?;
        Self::from_document(document, &dir, &file)
    }

    fn from_document(document: Document, dir: &Path, file: &Path) -> Result<Self> {
        Ok(Self {
            uid: document.uid,
            stages: load_entries(document.stages, dir, file)?,
            cache_input: document.cache_input.unwrap_or(true),
            cache_memory_limit: DEFAULT_MEMORY_BUDGET,
        })
    }

    /// A pipeline nested in another's `pipeline.json`, its stages' data in `dir`.
    pub(crate) fn from_entry(params: serde_json::Value, dir: &Path) -> Result<Self> {
        let document = Document::deserialize(params)
            .map_err(|e| HearthError::persistence(dir, "cannot read the nested pipeline").caused_by(e))?;
        Self::from_document(document, dir, dir)
    }
}

impl Estimator for Pipeline {
    type Model = PipelineModel;

    /// Fits the pipeline on `df`.
    async fn fit(&self, df: &DataFrame) -> Result<PipelineModel> {
        Ok(self.fit_with_input(df).await?.0)
    }
}

crate::stage_class!(estimator Pipeline, |params, dir| Ok(Pipeline::from_entry(params, dir)?.into()));

impl Stage for Pipeline {
    fn class(&self) -> &'static str {
        "Pipeline"
    }

    fn uid(&self) -> &str {
        &self.uid
    }

    fn params(&self) -> Result<serde_json::Value> {
        nested_params(
            &self.uid,
            Some(self.cache_input),
            self.stages.iter().map(PipelineStage::as_stage),
        )
    }

    fn describe(&self) -> String {
        let classes: Vec<&str> = self.stages.iter().map(|s| s.as_stage().class()).collect();
        format!("{} stages: {}", classes.len(), classes.join(" → "))
    }

    fn has_data(&self) -> bool {
        self.stages.iter().any(|s| s.as_stage().has_data())
    }

    fn save_data(&self, dir: &Path) -> Result<()> {
        save_stage_data(dir, self.stages.iter().map(PipelineStage::as_stage))
    }
}

/// A nested pipeline's entry: its uid and stages, as its own `pipeline.json` holds them.
fn nested_params<'a>(
    uid: &str,
    cache_input: Option<bool>,
    stages: impl Iterator<Item = &'a dyn Stage>,
) -> Result<serde_json::Value> {
    let mut params = serde_json::Map::new();
    params.insert("uid".to_string(), uid.into());
    if let Some(cache) = cache_input {
        params.insert("cache_input".to_string(), cache.into());
    }
    params.insert("stages".to_string(), serde_json::Value::Array(stage_entries(stages)?));
    Ok(serde_json::Value::Object(params))
}

/// A fitted pipeline: transformers applied in order. Two models are equal when their stages' classes and
/// parameters are.
#[derive(Clone, Debug)]
pub struct PipelineModel {
    uid: String,
    stages: Vec<Arc<dyn Transformer>>,
}

impl PipelineModel {
    /// The fitted stages; [`downcast_ref`](dyn Transformer::downcast_ref) gives one as its type.
    pub fn stages(&self) -> &[Arc<dyn Transformer>] {
        &self.stages
    }

    /// The last stage as `T`, if it is one: the trained model of a pipeline that ends with a classifier.
    pub fn last_stage<T: Transformer>(&self) -> Option<&T> {
        self.stages.last().and_then(|stage| stage.downcast_ref::<T>())
    }

    /// Saves the model as `dir/pipeline.json`, with the data of stages that have any under `dir/stages/`,
    /// whole; a `dir` that holds anything is refused (replace it with `write().overwrite().save(dir)`).
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        self.write().save(dir)
    }

    /// A writer of this model, as Spark's `model.write()`: see [`MlWriter`].
    pub fn write(&self) -> MlWriter<'_> {
        MlWriter::files(|dir| write_document(dir, "PipelineModel", &self.uid, None, self.fitted()))
    }

    /// Loads a model saved by [`PipelineModel::save`] (the directory or the JSON file).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let (document, dir, file) = read_document(path.as_ref(), "PipelineModel")?;
        Self::from_document(document, &dir, &file)
    }

    fn fitted(&self) -> impl Iterator<Item = &dyn Stage> + Clone {
        self.stages.iter().map(|stage| stage.as_ref() as &dyn Stage)
    }

    fn from_document(document: Document, dir: &Path, file: &Path) -> Result<Self> {
        let stages = load_entries(document.stages, dir, file)?
            .into_iter()
            .enumerate()
            .map(|(index, stage)| match stage {
                PipelineStage::Transformer(transformer) => Ok(transformer),
                PipelineStage::Estimator(estimator) => Err(HearthError::persistence(
                    file,
                    format!(
                        "stage {index} ({}) is an estimator; a pipeline model holds fitted stages only",
                        estimator.class()
                    ),
                )),
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            uid: document.uid,
            stages,
        })
    }

    /// A pipeline model nested in another's `pipeline.json`, its stages' data in `dir`.
    pub(crate) fn from_entry(params: serde_json::Value, dir: &Path) -> Result<Self> {
        let document = Document::deserialize(params)
            .map_err(|e| HearthError::persistence(dir, "cannot read the nested pipeline model").caused_by(e))?;
        Self::from_document(document, dir, dir)
    }
}

impl PartialEq for PipelineModel {
    fn eq(&self, other: &Self) -> bool {
        self.uid == other.uid
            && self.stages.len() == other.stages.len()
            && self.fitted().zip(other.fitted()).all(|(a, b)| same_stage(a, b))
    }
}

impl Stage for PipelineModel {
    fn class(&self) -> &'static str {
        "PipelineModel"
    }

    fn uid(&self) -> &str {
        &self.uid
    }

    fn params(&self) -> Result<serde_json::Value> {
        nested_params(&self.uid, None, self.fitted())
    }

    fn describe(&self) -> String {
        let classes: Vec<&str> = self.stages.iter().map(|s| s.class()).collect();
        format!("{} stages: {}", classes.len(), classes.join(" → "))
    }

    fn has_data(&self) -> bool {
        self.stages.iter().any(|s| s.has_data())
    }

    fn save_data(&self, dir: &Path) -> Result<()> {
        save_stage_data(dir, self.fitted())
    }
}

impl Transformer for PipelineModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        self.stages
            .iter()
            .try_fold(df.clone(), |current, stage| stage.transform(&current))
    }
}

crate::stage_class!(transformer PipelineModel, |params, dir| Ok(PipelineModel::from_entry(params, dir)?.into()));
