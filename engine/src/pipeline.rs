//! `Pipeline` and `PipelineModel`: sequences of stages, fitted with Spark's rule and saved as readable JSON.

use std::fs;
use std::path::Path;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::{MemTable, source_as_provider};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::DataFrame;
use serde::{Deserialize, Serialize};

use crate::error::{HearthError, Result};
use crate::feature::{
    OneHotEncoder, OneHotEncoderModel, StandardScaler, StandardScalerModel, StringIndexer, StringIndexerModel,
    VectorAssembler,
};
use crate::params::new_uid;
use crate::stage::{Estimator, Transformer};

/// The version of the JSON layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The file a saved pipeline or pipeline model keeps in its directory.
pub const PIPELINE_FILE: &str = "pipeline.json";

/// One stage of a [`Pipeline`]: an estimator to fit, or a transformer used as is. In JSON, `"class"` names
/// the variant and the other keys are its parameters in Spark's camelCase; a parameter left out takes its
/// default (a fitted model's state cannot be left out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "class")]
pub enum PipelineStage {
    /// Estimator: [`StringIndexer`].
    StringIndexer(StringIndexer),
    /// Estimator: [`OneHotEncoder`].
    OneHotEncoder(OneHotEncoder),
    /// Estimator: [`StandardScaler`].
    StandardScaler(StandardScaler),
    /// A transformer: a stage that needs no fitting, or one fitted before.
    #[serde(untagged)]
    Transformer(FittedStage),
}

/// A stage of a [`PipelineModel`]: a transformer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "class")]
pub enum FittedStage {
    /// [`VectorAssembler`].
    VectorAssembler(VectorAssembler),
    /// [`StringIndexerModel`].
    StringIndexerModel(StringIndexerModel),
    /// [`OneHotEncoderModel`].
    OneHotEncoderModel(OneHotEncoderModel),
    /// [`StandardScalerModel`].
    StandardScalerModel(StandardScalerModel),
}

impl Transformer for FittedStage {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        match self {
            FittedStage::VectorAssembler(s) => s.transform(df),
            FittedStage::StringIndexerModel(s) => s.transform(df),
            FittedStage::OneHotEncoderModel(s) => s.transform(df),
            FittedStage::StandardScalerModel(s) => s.transform(df),
        }
    }
}

impl PipelineStage {
    fn is_estimator(&self) -> bool {
        !matches!(self, PipelineStage::Transformer(_))
    }

    async fn fit(&self, df: &DataFrame) -> Result<FittedStage> {
        Ok(match self {
            PipelineStage::StringIndexer(s) => FittedStage::StringIndexerModel(s.fit(df).await?),
            PipelineStage::OneHotEncoder(s) => FittedStage::OneHotEncoderModel(s.fit(df).await?),
            PipelineStage::StandardScaler(s) => FittedStage::StandardScalerModel(s.fit(df).await?),
            PipelineStage::Transformer(t) => t.clone(),
        })
    }
}

/// `From` conversions into pipeline stages; each variant is named after the type it holds.
macro_rules! stage_from {
    (estimators: $($estimator:ident),*; transformers: $($transformer:ident),*) => {
        $(impl From<$estimator> for PipelineStage {
            fn from(stage: $estimator) -> Self {
                PipelineStage::$estimator(stage)
            }
        })*
        $(impl From<$transformer> for FittedStage {
            fn from(stage: $transformer) -> Self {
                FittedStage::$transformer(stage)
            }
        }
        impl From<$transformer> for PipelineStage {
            fn from(stage: $transformer) -> Self {
                PipelineStage::Transformer(FittedStage::$transformer(stage))
            }
        })*
    };
}

stage_from!(
    estimators: StringIndexer, OneHotEncoder, StandardScaler;
    transformers: VectorAssembler, StringIndexerModel, OneHotEncoderModel, StandardScalerModel
);

/// The JSON document of a saved pipeline or pipeline model, as written.
#[derive(Serialize)]
struct DocumentRef<'a, S> {
    format: &'a str,
    version: u32,
    uid: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_input: Option<bool>,
    stages: &'a [S],
}

/// The JSON document as read back.
#[derive(Deserialize)]
struct Document<S> {
    uid: String,
    #[serde(default)]
    cache_input: Option<bool>,
    stages: Vec<S>,
}

fn write_document<S: Serialize>(
    dir: &Path,
    format: &str,
    uid: &str,
    cache_input: Option<bool>,
    stages: &[S],
) -> Result<()> {
    let failed = |message: String| HearthError::Persistence {
        path: dir.to_path_buf(),
        message,
    };
    let document = DocumentRef {
        format,
        version: FORMAT_VERSION,
        uid,
        cache_input,
        stages,
    };
    let json = serde_json::to_string_pretty(&document).map_err(|e| failed(e.to_string()))?;
    fs::create_dir_all(dir).map_err(|e| failed(format!("cannot create the directory: {e}")))?;
    let file = dir.join(PIPELINE_FILE);
    fs::write(&file, json + "\n").map_err(|e| HearthError::Persistence {
        path: file,
        message: e.to_string(),
    })
}

fn read_document<S: for<'de> Deserialize<'de>>(path: &Path, format: &str) -> Result<Document<S>> {
    let file = if path.is_dir() {
        path.join(PIPELINE_FILE)
    } else {
        path.to_path_buf()
    };
    let failed = |message: String| HearthError::Persistence {
        path: file.clone(),
        message,
    };
    let text = fs::read_to_string(&file).map_err(|e| failed(e.to_string()))?;
    let header: serde_json::Value = serde_json::from_str(&text).map_err(|e| failed(format!("not JSON: {e}")))?;
    let found = header.get("format").and_then(|f| f.as_str()).unwrap_or("");
    if found != format {
        return Err(failed(format!("holds a {found:?}, expected a {format:?}")));
    }
    let version = header.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version != u64::from(FORMAT_VERSION) {
        return Err(failed(format!(
            "format version {version}; this build reads version {FORMAT_VERSION}"
        )));
    }
    serde_json::from_str(&text).map_err(|e| failed(e.to_string()))
}

/// Whether a plan scans anything other than in-memory tables (which caching would only copy).
fn reads_files(plan: &LogicalPlan) -> bool {
    let mut files = false;
    let _ = plan.apply(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let in_memory = source_as_provider(&scan.source)
                .map(|provider| provider.is::<MemTable>())
                .unwrap_or(false);
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
/// When two or more estimators need data read from files, `fit` materialises the input in memory once so a
/// file is parsed once, not once per estimator (turn off with [`Pipeline::cache_input`]).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_engine::prelude::*;
/// let session = Session::local(2);
/// let df = session.sql("SELECT * FROM (VALUES ('a', 1.0), ('b', 2.0), ('a', 4.0)) AS t(c, x)").await.unwrap();
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

    /// The stages.
    pub fn stages(&self) -> &[PipelineStage] {
        &self.stages
    }

    /// Fits the pipeline on `df`.
    pub async fn fit(&self, df: &DataFrame) -> Result<PipelineModel> {
        Ok(self.fit_with_input(df).await?.0)
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
            df.clone().cache().await?
        } else {
            df.clone()
        };
        let mut current = input.clone();
        let mut fitted = Vec::with_capacity(self.stages.len());
        for (i, stage) in self.stages.iter().enumerate() {
            let transformer = stage.fit(&current).await?;
            if last_estimator.is_some_and(|last| i < last) {
                current = transformer.transform(&current)?;
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

    /// Saves the (unfitted) pipeline as `dir/pipeline.json`.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        write_document(
            dir.as_ref(),
            "Pipeline",
            &self.uid,
            Some(self.cache_input),
            &self.stages,
        )
    }

    /// Loads a pipeline saved by [`Pipeline::save`], or written by hand: `path` is the directory or the JSON
    /// file itself.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let document: Document<PipelineStage> = read_document(path.as_ref(), "Pipeline")?;
        Ok(Self {
            uid: document.uid,
            stages: document.stages,
            cache_input: document.cache_input.unwrap_or(true),
        })
    }
}

/// A fitted pipeline: transformers applied in order.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineModel {
    uid: String,
    stages: Vec<FittedStage>,
}

impl PipelineModel {
    /// The fitted stages.
    pub fn stages(&self) -> &[FittedStage] {
        &self.stages
    }

    /// The uid of the pipeline it was fitted from.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// Saves the model as `dir/pipeline.json`.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        write_document(dir.as_ref(), "PipelineModel", &self.uid, None, &self.stages)
    }

    /// Loads a model saved by [`PipelineModel::save`] (the directory or the JSON file).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let document: Document<FittedStage> = read_document(path.as_ref(), "PipelineModel")?;
        Ok(Self {
            uid: document.uid,
            stages: document.stages,
        })
    }
}

impl Transformer for PipelineModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        self.stages
            .iter()
            .try_fold(df.clone(), |current, stage| stage.transform(&current))
    }
}
