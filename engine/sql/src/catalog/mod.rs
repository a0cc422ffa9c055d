//! The model catalog: a directory with one folder per model — the fitted pipeline (preprocessing and the
//! trained network, as `PipelineModel::save` writes it), `catalog.json` (what SQL needs to know of it), and
//! the rows held out for evaluation. Entries are written to a temporary folder and renamed into place, so a
//! failed `CREATE MODEL` leaves nothing behind.
//!
//! ```text
//! models/
//!   credit_risk/
//!     catalog.json           name, type, label and its values, feature columns, options, SQL, created
//!     pipeline.json          the fitted pipeline (stages/5_MlpClassifier_…/ holds the network)
//!     evaluation.parquet     rows held out by data_split_method, read by ML.EVALUATE(MODEL credit_risk)
//!     trials.json            every trial of a model tuned with num_trials, read by ML.TRIAL_INFO
//!     training_evaluation.json   a k-means model's figures on its training rows, read by ML.EVALUATE
//! ```
//!
//! The catalog may be in an object store instead (`s3://bucket/models`, …): see `remote`.

mod entry;
mod remote;

pub use entry::ModelEntry;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use datafusion::arrow::array::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use hearth_common::files::write_dir_whole;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::object_stores::is_remote;
use hearth_exec::session::Session;
use hearth_preprocessing::feature::StringIndexerModel;
use hearth_preprocessing::pipeline::PipelineModel;
use serde::Serialize;

use super::trained::Trained;
use remote::RemoteCatalog;

/// The file of an entry that describes it.
pub const ENTRY_FILE: &str = "catalog.json";

/// The file of an entry holding the rows held out for evaluation.
pub const EVALUATION_FILE: &str = "evaluation.parquet";

/// A model in the catalog: its entry and its fitted pipeline.
#[derive(Clone, Debug)]
pub struct CatalogModel {
    /// What the catalog knows of it.
    pub entry: ModelEntry,
    /// The fitted pipeline, ending with the trained model.
    pub pipeline: PipelineModel,
    /// Its folder on this machine (for a catalog in an object store, this process's copy of it).
    pub dir: PathBuf,
    /// Its folder where a fleet's executors read it: `dir`, or its version's URL in the object store.
    pub location: String,
}

impl CatalogModel {
    /// The held-out evaluation rows' file on this machine, if the model kept any.
    pub fn evaluation_file(&self) -> Option<PathBuf> {
        let file = self.dir.join(EVALUATION_FILE);
        (self.entry.evaluation_rows > 0 && file.is_file()).then_some(file)
    }

    /// Where a fleet reads the held-out evaluation rows (see [`evaluation_file`](Self::evaluation_file)).
    pub fn evaluation_location(&self) -> String {
        format!("{}/{EVALUATION_FILE}", self.location.trim_end_matches('/'))
    }
}

/// A directory of models, one folder each — on this machine, or in an object store (`s3://bucket/models`).
///
/// ```
/// use hearth_sql::ModelCatalog;
/// let dir = std::env::temp_dir().join(format!("hearth-doc-catalog-{}", std::process::id()));
/// let catalog = ModelCatalog::new(&dir);
/// assert!(catalog.list().unwrap().is_empty());
/// assert!(catalog.get("nope").unwrap_err().to_string().contains("no model named \"nope\""));
/// # let _ = std::fs::remove_dir_all(&dir);
/// ```
#[derive(Clone, Debug)]
pub struct ModelCatalog {
    dir: PathBuf,
    /// The catalog in an object store, when `dir` is a store's URL (or why that URL cannot be one).
    remote: Option<std::result::Result<RemoteCatalog, String>>,
    /// Models loaded or saved by this process, with what tells their versions apart (their entry file's
    /// modification time, a store's manifest's version): a model is read again only when another process
    /// changed it.
    loaded: Arc<Mutex<HashMap<String, (String, CatalogModel)>>>,
}

/// Reads one of an entry's JSON files.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(file: &Path) -> Result<T> {
    let text = fs::read_to_string(file).map_err(|e| HearthError::persistence(file, "cannot read it").caused_by(e))?;
    serde_json::from_str(&text).map_err(|e| HearthError::persistence(file, "unreadable").caused_by(e))
}

/// Writes `value` as pretty JSON into `file` (in an entry's folder while it is written).
pub(crate) fn write_json(file: &Path, value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| HearthError::persistence(file, "cannot write it as JSON").caused_by(e))?;
    fs::write(file, text + "\n").map_err(|e| HearthError::persistence(file, "cannot write it").caused_by(e))
}

/// Writes the rows held out for evaluation into an entry's folder as [`EVALUATION_FILE`] (nothing when
/// there are none).
pub(crate) fn write_evaluation_rows(dir: &Path, batches: &[RecordBatch]) -> Result<()> {
    let file = dir.join(EVALUATION_FILE);
    let Some(first) = batches.iter().find(|b| b.num_rows() > 0) else {
        return Ok(());
    };
    let out = fs::File::create(&file).map_err(|e| HearthError::persistence(&file, "cannot create it").caused_by(e))?;
    let mut writer = ArrowWriter::try_new(out, first.schema(), None)
        .map_err(|e| HearthError::persistence(&file, "cannot start writing it").caused_by(e))?;
    for batch in batches {
        writer
            .write(batch)
            .map_err(|e| HearthError::persistence(&file, "cannot write it").caused_by(e))?;
    }
    writer
        .close()
        .map_err(|e| HearthError::persistence(&file, "cannot finish writing it").caused_by(e))?;
    Ok(())
}

/// What tells one version of a local entry file from another: its modification time.
fn modified_stamp(file: &Path) -> Option<String> {
    fs::metadata(file)
        .and_then(|m| m.modified())
        .ok()
        .map(|when| format!("{when:?}"))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl ModelCatalog {
    /// The catalog in `dir` (created on the first save): a directory, or an object store's URL.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let remote = dir
            .to_str()
            .filter(|location| is_remote(location))
            .map(|location| RemoteCatalog::new(location).map_err(|e| e.to_string()));
        Self {
            dir,
            remote,
            loaded: Arc::default(),
        }
    }

    fn loaded(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, CatalogModel)>> {
        self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The catalog in an object store, if it is one.
    fn remote(&self) -> Result<Option<&RemoteCatalog>> {
        match &self.remote {
            None => Ok(None),
            Some(Ok(remote)) => Ok(Some(remote)),
            Some(Err(why)) => Err(HearthError::persistence(&self.dir, why.clone())),
        }
    }

    /// Remembers `model`, at the version `stamp`.
    fn remember(&self, stamp: String, model: CatalogModel) {
        self.loaded().insert(model.entry.name.clone(), (stamp, model));
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn folder(&self, name: &str) -> Result<PathBuf> {
        let valid = !name.is_empty()
            && name != "."
            && name != ".."
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            return Err(HearthError::invalid_param(
                "model catalog",
                "name",
                format!("{name:?} is not a model name: letters, digits, '_', '-' and '.' only, not starting with '.'"),
            ));
        }
        Ok(self.dir.join(name))
    }

    /// Whether a model of this name exists (`false` where the catalog cannot be read).
    pub fn contains(&self, name: &str) -> bool {
        self.exists(name).unwrap_or(false)
    }

    /// Whether a model of this name exists, or why the catalog cannot tell.
    fn exists(&self, name: &str) -> Result<bool> {
        let folder = self.folder(name)?;
        match self.remote()? {
            Some(remote) => Ok(remote.manifest(name)?.is_some()),
            None => Ok(folder.join(ENTRY_FILE).is_file()),
        }
    }

    /// The error of a model `name` the catalog does not hold, naming those it does: the plan's, as a table
    /// that is not there is DataFusion's.
    fn not_found(&self, name: &str) -> HearthError {
        let known = self.list().unwrap_or_default();
        let names: Vec<&str> = known.iter().map(|e| e.name.as_str()).collect();
        HearthError::invalid_param(
            self.dir.display().to_string(),
            "MODEL",
            format!(
                "no model named {name:?} in the catalog (models: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )
    }

    /// The model `name` of a catalog in an object store.
    fn get_remote(&self, remote: &RemoteCatalog, name: &str) -> Result<CatalogModel> {
        let Some(manifest) = remote.manifest(name)? else {
            return Err(self.not_found(name));
        };
        if let Some((version, model)) = self.loaded().get(name)
            && *version == manifest.version
        {
            return Ok(model.clone());
        }
        let dir = remote.local_copy(name, &manifest)?;
        let model = CatalogModel {
            pipeline: PipelineModel::load(&dir)?,
            location: remote.url_of(&format!("{name}/{}", manifest.version)),
            entry: manifest.entry,
            dir,
        };
        self.remember(manifest.version, model.clone());
        Ok(model)
    }

    /// The model `name`.
    pub fn get(&self, name: &str) -> Result<CatalogModel> {
        let dir = self.folder(name)?;
        if let Some(remote) = self.remote()? {
            return self.get_remote(remote, name);
        }
        let file = dir.join(ENTRY_FILE);
        if !file.is_file() {
            return Err(self.not_found(name));
        }
        let modified = modified_stamp(&file);
        if let Some((when, model)) = self.loaded().get(name)
            && Some(when) == modified.as_ref()
        {
            return Ok(model.clone());
        }
        let entry: ModelEntry = read_json(&file)?;
        let pipeline = PipelineModel::load(&dir)?;
        let location = dir.display().to_string();
        let model = CatalogModel {
            entry,
            pipeline,
            dir,
            location,
        };
        if let Some(stamp) = modified {
            self.remember(stamp, model.clone());
        }
        Ok(model)
    }

    /// Every model's entry, by name.
    pub fn list(&self) -> Result<Vec<ModelEntry>> {
        if let Some(remote) = self.remote()? {
            let mut entries: Vec<ModelEntry> = remote.manifests()?.into_iter().map(|m| m.entry).collect();
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            return Ok(entries);
        }
        let Ok(folders) = fs::read_dir(&self.dir) else {
            return Ok(Vec::new());
        };
        let mut entries = Vec::new();
        for folder in folders.flatten() {
            let file = folder.path().join(ENTRY_FILE);
            if folder.file_name().to_string_lossy().starts_with('.') || !file.is_file() {
                continue;
            }
            entries.push(read_json::<ModelEntry>(&file)?);
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Saves a model: `write` fills a fresh temporary folder (the pipeline and any extra files), then the
    /// entry is written and the folder renamed into place, replacing a model of the same name only when
    /// `replace` is set. Nothing is left behind when any step fails.
    pub fn save(
        &self,
        entry: &ModelEntry,
        pipeline: &PipelineModel,
        replace: bool,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let target = self.folder(&entry.name)?;
        if !replace && self.exists(&entry.name)? {
            return Err(HearthError::persistence(
                &target,
                "a model of this name exists; use CREATE OR REPLACE MODEL",
            ));
        }
        let fill = |staging: &Path| -> Result<()> {
            pipeline.write().write_into(staging)?;
            write(staging)?;
            let file = target.join(ENTRY_FILE);
            let json = serde_json::to_string_pretty(entry)
                .map_err(|e| HearthError::persistence(&file, "cannot write it as JSON").caused_by(e))?;
            fs::write(staging.join(ENTRY_FILE), json + "\n")
                .map_err(|e| HearthError::persistence(&file, "cannot write it").caused_by(e))
        };
        if let Some(remote) = self.remote()? {
            let staging = remote.staging()?;
            fill(staging.path())?;
            let (manifest, moved) = remote.publish(&entry.name, staging.path(), entry)?;
            let dir = match moved {
                Some(dir) => dir,
                None => remote.local_copy(&entry.name, &manifest)?,
            };
            let model = CatalogModel {
                entry: entry.clone(),
                pipeline: pipeline.clone(),
                dir,
                location: remote.url_of(&format!("{}/{}", entry.name, manifest.version)),
            };
            self.remember(manifest.version, model);
            return Ok(());
        }
        write_dir_whole(&target, fill)?;
        let model = CatalogModel {
            entry: entry.clone(),
            pipeline: pipeline.clone(),
            dir: target.clone(),
            location: target.display().to_string(),
        };
        if let Some(stamp) = modified_stamp(&target.join(ENTRY_FILE)) {
            self.remember(stamp, model);
        }
        Ok(())
    }

    /// Registers a pipeline fitted in Rust whose last stage is a trained network or linear model, under `name`;
    /// `label` is the label column of its input. Its label values are read from the `StringIndexerModel`
    /// that indexed the label, if there is one.
    pub fn register(&self, name: &str, pipeline: &PipelineModel, label: &str, replace: bool) -> Result<()> {
        let model = Trained::of(pipeline).ok_or_else(|| {
            HearthError::invalid_param(
                "model catalog",
                "pipeline",
                "the pipeline's last stage must be a ClassificationModel, a RegressionModel, a \
                 LogisticRegressionModel or a LinearRegressionModel",
            )
        })?;
        let label_index = model.label_col().to_string();
        let labels = pipeline.stages().iter().find_map(|stage| {
            let indexer = stage.downcast_ref::<StringIndexerModel>()?;
            let position = indexer.get_output_cols().iter().position(|c| *c == label_index)?;
            (indexer.get_input_cols()[position] == label).then(|| indexer.labels()[position].clone())
        });
        let entry = ModelEntry {
            name: name.to_string(),
            model_type: "pipeline".to_string(),
            label: label.to_string(),
            labels,
            classifier: model.is_classifier(),
            label_index,
            inputs: Vec::new(),
            features: vec![model.features_col().to_string()],
            preprocessing_stages: pipeline.stages().len() - 1,
            options: Default::default(),
            transform: None,
            query: None,
            training_rows: model.training_rows(),
            evaluation_rows: 0,
            training_seconds: model
                .summary()
                .map_or(0.0, |s| s.attempts.iter().map(|a| a.seconds).sum()),
            created_ms: now_ms(),
            feature_means: None,
            feature_deviations: None,
        };
        self.save(&entry, pipeline, replace, |_| Ok(()))
    }

    /// Removes the model `name`; `Ok(false)` when there was none.
    pub fn drop_model(&self, name: &str) -> Result<bool> {
        let dir = self.folder(name)?;
        if let Some(remote) = self.remote()? {
            self.loaded().remove(name);
            return remote.remove(name);
        }
        if !dir.join(ENTRY_FILE).is_file() {
            return Ok(false);
        }
        self.loaded().remove(name);
        let retired = self.dir.join(format!(".{name}-dropped-{}", now_ms()));
        fs::rename(&dir, &retired)
            .map_err(|e| HearthError::persistence(&dir, "cannot move it aside to drop it").caused_by(e))?;
        fs::remove_dir_all(&retired)
            .map_err(|e| HearthError::persistence(&retired, "cannot remove it").caused_by(e))?;
        Ok(true)
    }
}

/// Where `hearth sql` keeps its models unless told otherwise (`--models`): `$HEARTH_MODELS`, else `models` in
/// the working directory.
pub fn default_models_dir() -> PathBuf {
    std::env::var_os("HEARTH_MODELS").map_or_else(|| PathBuf::from("models"), PathBuf::from)
}

impl ModelCatalog {
    /// The catalog `session` keeps (see [`SqlSessionExt::models`](crate::SqlSessionExt::models)), or why it
    /// has none: it was built without one.
    pub fn of(session: &Session) -> Result<Arc<ModelCatalog>> {
        let catalog = session.context().copied_config().get_extension::<ModelCatalog>();
        catalog.ok_or_else(|| {
            HearthError::invalid_param(
                "session",
                "models",
                format!(
                    "this session has no model catalog: build it with `with_models(dir)` (the models in {} are \
                     what `hearth sql` uses)",
                    default_models_dir().display()
                ),
            )
        })
    }
}
