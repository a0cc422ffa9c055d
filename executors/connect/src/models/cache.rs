//! A session's fitted models, by the ids its client holds (`ObjectRef`): made by `fit` (with the plan of the
//! data they were fitted on, for their training summary) or `load`, used by `transform` and attribute fetches,
//! dropped by `delete` and `clean_cache` (PySpark sends them when a model is garbage collected and at exit).
//! Another session's ids are not found here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use datafusion::prelude::DataFrame;
use hearth_preprocessing::stage::Transformer;

use crate::errors::{ConnectError, Result};

/// A model and, when it was fitted here, the data it was fitted on — or a summary of a model on other data
/// (`model.evaluate(df)`).
#[derive(Clone)]
struct Entry {
    model: Arc<dyn Transformer>,
    training: Option<DataFrame>,
    evaluation: bool,
}

/// Fitted models by id.
#[derive(Default)]
pub(crate) struct ModelCache {
    models: Mutex<HashMap<String, Entry>>,
}

impl ModelCache {
    /// Keeps `model`, fitted on `training` if it was fitted here; the id the client refers to it by (a UUID:
    /// Spark's ids hold no `.`).
    pub(crate) fn insert(&self, model: Arc<dyn Transformer>, training: Option<DataFrame>) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.models.lock().unwrap_or_else(PoisonError::into_inner).insert(
            id.clone(),
            Entry {
                model,
                training,
                evaluation: false,
            },
        );
        id
    }

    /// Keeps the summary of `model` on `data` (`model.evaluate(data)`); the id the client refers to it by.
    pub(crate) fn insert_evaluation(&self, model: Arc<dyn Transformer>, data: DataFrame) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let entry = Entry {
            model,
            training: Some(data),
            evaluation: true,
        };
        self.models
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), entry);
        id
    }

    /// Whether `id` names a summary made by `model.evaluate(df)` rather than a model.
    pub(crate) fn is_evaluation(&self, id: &str) -> Result<bool> {
        Ok(self.entry(id)?.evaluation)
    }

    /// The model `id` names; Spark's `CONNECT_ML.CACHE_INVALID` when this session has none of that id.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<dyn Transformer>> {
        Ok(self.entry(id)?.model)
    }

    /// The model `id` names and the data it was fitted on (`None` for a loaded model).
    pub(crate) fn with_training(&self, id: &str) -> Result<(Arc<dyn Transformer>, Option<DataFrame>)> {
        let entry = self.entry(id)?;
        Ok((entry.model, entry.training))
    }

    /// Gives model `id` the data its summary is computed on (PySpark's `CreateSummary`).
    pub(crate) fn set_training(&self, id: &str, training: DataFrame) -> Result<()> {
        let mut models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = models.get_mut(id).ok_or_else(|| invalid(id))?;
        entry.training = Some(training);
        Ok(())
    }

    fn entry(&self, id: &str) -> Result<Entry> {
        let models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        models.get(id).cloned().ok_or_else(|| invalid(id))
    }

    /// Drops the models `ids` names; the ids that were there.
    pub(crate) fn remove(&self, ids: &[String]) -> Vec<String> {
        let mut models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        ids.iter()
            .filter(|id| models.remove(id.as_str()).is_some())
            .cloned()
            .collect()
    }

    /// Drops every model; how many there were.
    pub(crate) fn clear(&self) -> usize {
        let mut models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        let count = models.len();
        models.clear();
        count
    }

    /// What the cache holds, one line per model (`get_cache_info`).
    pub(crate) fn describe(&self) -> Vec<String> {
        let models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        models
            .iter()
            .map(|(id, entry)| format!("{id}: {}", entry.model.class()))
            .collect()
    }
}

fn invalid(id: &str) -> ConnectError {
    ConnectError::IllegalArgument(format!(
        "[CONNECT_ML.CACHE_INVALID] The model {id} is not in this session's cache: it was deleted, or belongs to \
         another session."
    ))
}
