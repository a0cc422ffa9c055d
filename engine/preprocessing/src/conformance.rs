//! The conformance battery every stage class goes through, as scikit-learn's `check_estimator`: each class's
//! example (made with [`stage_example!`](crate::stage_example) beside the class, and listed by its crate:
//! [`PREPROCESSING_EXAMPLES`]) has its parameters
//! survive a reload, is fitted on [`example_frame`] when it is an estimator, and its model transforms the
//! frame keeping every row and column, survives a save and load with the same parameters and the same rows out,
//! and describes itself. A stage class of your own gets the battery by [`check_stage`] of an example.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_preprocessing::conformance::{PREPROCESSING_EXAMPLES, check_stage, example_frame, stage_examples};
//! use hearth_exec::session::Session;
//! use hearth_preprocessing::functions::PreprocessingFeature;
//!
//! let session = Session::builder().with_preprocessing().local(2);
//! let frame = example_frame(&session).await.unwrap();
//! let dir = std::env::temp_dir().join(format!("hearth-doc-conformance-{}", std::process::id()));
//! let (_, indexer) = stage_examples(PREPROCESSING_EXAMPLES).into_iter().find(|(class, _)| *class == "StringIndexer").unwrap();
//! let classes = check_stage(&indexer, &frame, &dir).await.unwrap();
//! assert_eq!(classes, ["StringIndexer", "StringIndexerModel"]);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # });
//! ```

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;

use crate::feature::{OneHotEncoder, StringIndexer, VectorAssembler};
use crate::pipeline::{Pipeline, PipelineModel, PipelineStage, rebuild_stage};
use crate::stage::{Estimator, Stage, Transformer};

/// An example of a stage class, configured for the columns of [`example_frame`]; made with
/// [`stage_example!`](crate::stage_example) by the module that owns the class.
#[derive(Debug, Clone, Copy)]
pub struct StageExample {
    /// The class, as [`Stage::class`] names it.
    pub class: &'static str,
    /// Builds the example.
    pub build: fn() -> PipelineStage,
}

/// A stage type with an example for the conformance battery, for its crate's list of examples.
pub trait ExampleStage {
    /// The type's example.
    const EXAMPLE: StageExample;
}

/// Gives a stage class its example for the conformance battery ([`ExampleStage`]): a stage configured for the
/// columns of [`example_frame`](crate::conformance::example_frame).
#[macro_export]
#[doc(hidden)]
macro_rules! stage_example {
    ($class:ident, $build:expr) => {
        impl $crate::conformance::ExampleStage for $class {
            const EXAMPLE: $crate::conformance::StageExample = $crate::conformance::StageExample {
                class: stringify!($class),
                build: || $crate::pipeline::PipelineStage::from($build),
            };
        }
    };
}

/// The examples of the preprocessing side's estimators and transformers; with the models they fit, they
/// cover [`PREPROCESSING_CLASSES`](crate::pipeline::PREPROCESSING_CLASSES).
pub const PREPROCESSING_EXAMPLES: &[StageExample] = &[
    <StringIndexer as ExampleStage>::EXAMPLE,
    <OneHotEncoder as ExampleStage>::EXAMPLE,
    <crate::feature::StandardScaler as ExampleStage>::EXAMPLE,
    <VectorAssembler as ExampleStage>::EXAMPLE,
    <crate::feature::SqlColumns as ExampleStage>::EXAMPLE,
    <crate::clustering::KMeans as ExampleStage>::EXAMPLE,
    <Pipeline as ExampleStage>::EXAMPLE,
];

// The pipeline's example: two of the feature stages.
crate::stage_example!(
    Pipeline,
    Pipeline::new()
        .stage(StringIndexer::new().input_col("text").output_col("text_index"))
        .stage(OneHotEncoder::new().input_col("text_index").output_col("text_vector"))
);

/// Each of `examples` built, with its class, by class.
pub fn stage_examples(examples: &[StageExample]) -> Vec<(&'static str, PipelineStage)> {
    let mut built: Vec<(&'static str, PipelineStage)> = (examples.iter())
        .map(|example| (example.class, (example.build)()))
        .collect();
    built.sort_by_key(|(class, _)| *class);
    built
}

/// The rows every example runs on: `x` and `y` (numbers), `text` (strings), `label` (0 or 1) and `features`
/// (the vector `[x, y]`), twelve rows.
pub async fn example_frame(session: &Session) -> Result<DataFrame> {
    let rows = session
        .context()
        .sql(
            "SELECT * FROM (VALUES (0.1, 1.0, 'a', 0.0), (0.4, 0.8, 'b', 0.0), (0.2, 1.2, 'a', 0.0), \
             (0.3, 0.9, 'c', 0.0), (0.5, 1.1, 'b', 0.0), (0.0, 1.0, 'a', 0.0), (2.1, 3.0, 'c', 1.0), \
             (2.4, 2.8, 'b', 1.0), (2.2, 3.2, 'c', 1.0), (2.3, 2.9, 'c', 1.0), (2.5, 3.1, 'a', 1.0), \
             (2.0, 3.0, 'c', 1.0)) AS t(x, y, text, label)",
        )
        .await?;
    VectorAssembler::new()
        .input_cols(["x", "y"])
        .output_col("features")
        .transform(&rows)
}

/// Runs `stage` through the battery on `frame` (saving under `dir`); returns the classes it exercised: the
/// stage's, and its model's when it is an estimator.
pub async fn check_stage(stage: &PipelineStage, frame: &DataFrame, dir: &Path) -> Result<Vec<&'static str>> {
    let class = stage.as_stage().class();
    check_described(stage.as_stage())?;
    // A stage with data is rebuilt through its save below; one without, from its parameters alone.
    if !stage.as_stage().has_data() {
        let rebuilt = rebuild_stage(class, stage.as_stage().params()?, dir)?;
        same_params(class, stage.as_stage(), rebuilt.as_stage())?;
    }
    let mut classes = vec![class];
    let model = match stage {
        PipelineStage::Estimator(estimator) => {
            let saved = dir.join("estimator");
            Pipeline::from_stages(vec![stage.clone()]).save(&saved)?;
            let loaded = Pipeline::load(&saved)?;
            same_params(class, stage.as_stage(), loaded.stages()[0].as_stage())?;
            let model = estimator.fit_stage(frame).await?;
            check_described(model.as_ref())?;
            classes.push(model.class());
            model
        }
        PipelineStage::Transformer(transformer) => Arc::clone(transformer),
    };
    check_model(model, frame, &dir.join("model")).await?;
    Ok(classes)
}

/// The model keeps every row and column it is given, and a saved and loaded copy has its parameters and
/// gives the same rows.
async fn check_model(model: Arc<dyn Transformer>, frame: &DataFrame, dir: &Path) -> Result<()> {
    let class = model.class();
    let out = model.transform(frame)?;
    for field in frame.schema().fields() {
        if out.schema().field_with_unqualified_name(field.name()).is_err() {
            return Err(HearthError::invalid_data(
                class,
                "",
                format!("conformance: transform dropped the input column {:?}", field.name()),
            ));
        }
    }
    let rows: Vec<RecordBatch> = out.collect().await?;
    let (given, kept) = (
        frame.clone().count().await?,
        rows.iter().map(RecordBatch::num_rows).sum::<usize>(),
    );
    if given != kept {
        return Err(HearthError::invalid_data(
            class,
            "",
            format!("conformance: transform turned {given} rows into {kept}"),
        ));
    }
    let fitted = Pipeline::from_stages(vec![PipelineStage::Transformer(Arc::clone(&model))])
        .fit(frame)
        .await?;
    fitted.save(dir)?;
    let loaded = PipelineModel::load(dir)?;
    let reloaded = &loaded.stages()[0];
    same_params(class, model.as_ref(), reloaded.as_ref())?;
    let again: Vec<RecordBatch> = reloaded.transform(frame)?.collect().await?;
    if sorted_lines(&again)? != sorted_lines(&rows)? {
        return Err(HearthError::invalid_data(
            class,
            "",
            "conformance: a saved and loaded copy transforms the rows differently",
        ));
    }
    Ok(())
}

/// The rows as text, sorted: the same rows in any order give the same lines.
fn sorted_lines(rows: &[RecordBatch]) -> Result<Vec<String>> {
    let text = pretty_format_batches(rows)?.to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort_unstable();
    Ok(lines)
}

fn check_described(stage: &dyn Stage) -> Result<()> {
    match stage.describe().trim().is_empty() {
        true => Err(HearthError::invalid_data(
            stage.class(),
            "",
            "conformance: describe() says nothing",
        )),
        false => Ok(()),
    }
}

fn same_params(class: &str, before: &dyn Stage, after: &dyn Stage) -> Result<()> {
    let (before, after) = (before.params()?, after.params()?);
    match before == after {
        true => Ok(()),
        false => Err(HearthError::invalid_data(
            class,
            "",
            format!("conformance: parameters changed on reload: {before} became {after}"),
        )),
    }
}
