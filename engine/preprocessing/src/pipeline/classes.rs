//! The registry of stage classes that loading a saved pipeline looks each stage's `"class"` up in. It starts
//! with the preprocessing side's classes ([`PREPROCESSING_CLASSES`]); the module that owns a stage makes its
//! class with [`stage_class!`](crate::stage_class), the crate lists its classes in one place, and a session's
//! extension registers a crate's list ([`register_stage_classes`]: training's, when a session is built with
//! it). A program adds its own stage types the same way, or one by one with [`register_stage_class`].
//!
//! ```
//! use hearth_preprocessing::pipeline::{is_stage_class, register_stage_class, load_serde_transformer};
//! use hearth_preprocessing::feature::VectorAssembler;
//!
//! assert!(is_stage_class("StringIndexerModel")); // one of PREPROCESSING_CLASSES
//! register_stage_class("MyAssembler", load_serde_transformer::<VectorAssembler>);
//! assert!(is_stage_class("MyAssembler"));
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::sync::{LazyLock, PoisonError, RwLock};

use hearth_exec::error::{HearthError, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::stage::PipelineStage;
use crate::stage::{Estimator, Transformer};

/// Rebuilds a stage from its entry in `pipeline.json` (without `"class"`) and its data directory (which
/// exists only for a stage that saved data).
pub type StageLoader = fn(Value, &Path) -> Result<PipelineStage>;

/// A stage class that saved pipelines can hold: its name (the stage's [`Stage::class`](crate::stage::Stage::class))
/// and how to rebuild it. Made by [`stage_class!`](crate::stage_class) in the module that owns the stage.
#[derive(Debug, Clone, Copy)]
pub struct StageClass {
    /// The class name as `pipeline.json` spells it.
    pub class: &'static str,
    /// How a saved stage of this class is rebuilt.
    pub load: StageLoader,
}

impl StageClass {
    /// The class `class`, rebuilt by `load`.
    pub const fn new(class: &'static str, load: StageLoader) -> Self {
        Self { class, load }
    }
}

/// A stage type whose saved form can be loaded: its [`StageClass`], for a crate's list of classes.
pub trait SavedStage {
    /// The type's class.
    const CLASS: StageClass;
}

/// The preprocessing side's stage classes, which every program can load.
pub const PREPROCESSING_CLASSES: &[StageClass] = &[
    <crate::feature::StringIndexer as SavedStage>::CLASS,
    <crate::feature::StringIndexerModel as SavedStage>::CLASS,
    <crate::feature::OneHotEncoder as SavedStage>::CLASS,
    <crate::feature::OneHotEncoderModel as SavedStage>::CLASS,
    <crate::feature::StandardScaler as SavedStage>::CLASS,
    <crate::feature::StandardScalerModel as SavedStage>::CLASS,
    <crate::feature::VectorAssembler as SavedStage>::CLASS,
    <crate::feature::SqlColumns as SavedStage>::CLASS,
    <crate::clustering::KMeans as SavedStage>::CLASS,
    <crate::clustering::KMeansModel as SavedStage>::CLASS,
    <super::Pipeline as SavedStage>::CLASS,
    <super::PipelineModel as SavedStage>::CLASS,
];

/// Makes a stage type a pipeline stage ([`IntoPipelineStage`](crate::pipeline::IntoPipelineStage)), and its class
/// (the type's name, [`SavedStage`]) loadable from saved pipelines through its serde form, or through `load`
/// when given; the crate's list of classes names it.
#[macro_export]
#[doc(hidden)]
macro_rules! stage_class {
    (estimator $stage:ident) => {
        $crate::stage_class!(estimator $stage, $crate::pipeline::load_serde_estimator::<$stage>);
    };
    (transformer $stage:ident) => {
        $crate::stage_class!(transformer $stage, $crate::pipeline::load_serde_transformer::<$stage>);
    };
    ($kind:ident $stage:ident, $load:expr) => {
        impl $crate::pipeline::IntoPipelineStage for $stage {
            fn into_stage(self) -> $crate::pipeline::PipelineStage {
                $crate::pipeline::PipelineStage::$kind(self)
            }
        }
        impl $crate::pipeline::SavedStage for $stage {
            const CLASS: $crate::pipeline::StageClass = $crate::pipeline::StageClass::new(stringify!($stage), $load);
        }
    };
}

/// Loads an estimator whose serde form is its parameters.
pub fn load_serde_estimator<E: Estimator + DeserializeOwned>(params: Value, dir: &Path) -> Result<PipelineStage> {
    Ok(PipelineStage::estimator(from_params::<E>(params, dir)?))
}

/// Loads a transformer whose serde form is its parameters.
pub fn load_serde_transformer<T: Transformer + DeserializeOwned>(params: Value, dir: &Path) -> Result<PipelineStage> {
    Ok(PipelineStage::transformer(from_params::<T>(params, dir)?))
}

/// `T` from its saved parameters; a failure names the stage's data directory.
pub fn from_params<T: DeserializeOwned>(params: Value, dir: &Path) -> Result<T> {
    serde_json::from_value(params)
        .map_err(|e| HearthError::persistence(dir, "cannot read the stage's parameters").caused_by(e))
}

/// The preprocessing side's classes, then those registered at run time.
static CLASSES: LazyLock<RwLock<HashMap<String, StageLoader>>> = LazyLock::new(|| {
    let own = PREPROCESSING_CLASSES
        .iter()
        .map(|class| (class.class.to_string(), class.load));
    RwLock::new(own.collect())
});

/// Makes saved stages of each of `classes` loadable (a crate's list of classes). A class that already has a
/// loader keeps it, so a program's own [`register_stage_class`] of the same class stays.
///
/// ```
/// use hearth_preprocessing::feature::VectorAssembler;
/// use hearth_preprocessing::pipeline::{PREPROCESSING_CLASSES, load_serde_transformer, register_stage_class, register_stage_classes};
/// register_stage_class("VectorAssembler", load_serde_transformer::<VectorAssembler>); // a replacement
/// register_stage_classes(PREPROCESSING_CLASSES); // keeps it
/// ```
pub fn register_stage_classes(classes: &[StageClass]) {
    let mut known = CLASSES.write().unwrap_or_else(PoisonError::into_inner);
    for class in classes {
        known.entry(class.class.to_string()).or_insert(class.load);
    }
}

/// Makes saved stages of `class` loadable (a stage type of your own); replaces a loader of the same class.
///
/// ```
/// use hearth_preprocessing::feature::VectorAssembler;
/// use hearth_preprocessing::pipeline::{load_serde_transformer, register_stage_class};
/// register_stage_class("MyAssembler", load_serde_transformer::<VectorAssembler>);
/// ```
pub fn register_stage_class(class: &str, loader: StageLoader) {
    let mut classes = CLASSES.write().unwrap_or_else(PoisonError::into_inner);
    classes.insert(class.to_string(), loader);
}

/// Whether saved stages of `class` can be loaded in this program.
pub fn is_stage_class(class: &str) -> bool {
    CLASSES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .contains_key(class)
}

/// Every class saved stages can have in this program, sorted.
pub fn stage_classes() -> Vec<String> {
    let mut known: Vec<String> = CLASSES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .keys()
        .cloned()
        .collect();
    known.sort_unstable();
    known
}

/// The loader of `class`, when one is registered ([`unknown_class`] says so when none is).
pub(super) fn loader(class: &str) -> Option<StageLoader> {
    CLASSES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(class)
        .copied()
}

/// What is wrong with a `class` that has no loader: it is unknown, and which classes are known.
pub(super) fn unknown_class(class: &str) -> String {
    format!("unknown class {class:?} (known: {})", stage_classes().join(", "))
}

/// A stage of `class` rebuilt from its saved parameters (and its data directory `dir`, for a stage with data):
/// also how a stage is made from a class name and Spark's parameters (what a Spark Connect client sends).
///
/// ```
/// use hearth_preprocessing::pipeline::{PipelineStage, rebuild_stage};
///
/// let params = serde_json::json!({"inputCols": ["class"], "outputCols": ["label"]});
/// let stage = rebuild_stage("StringIndexer", params, std::path::Path::new("")).unwrap();
/// assert!(matches!(stage, PipelineStage::Estimator(_)));
/// assert!(rebuild_stage("NoSuchStage", serde_json::json!({}), std::path::Path::new("")).is_err());
/// ```
pub fn rebuild_stage(class: &str, params: Value, dir: &Path) -> Result<PipelineStage> {
    let load = loader(class).ok_or_else(|| HearthError::invalid_param(class, "class", unknown_class(class)))?;
    load(params, dir)
}
