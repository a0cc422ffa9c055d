//! A session's fitted models, by the ids its client holds (`ObjectRef`): made by `fit`, used by `transform`
//! and attribute fetches, dropped by `delete` and `clean_cache` (PySpark sends them when a model is garbage
//! collected and at exit). Another session's ids are not found here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use hearth_engine::stage::Transformer;

use crate::errors::{ConnectError, Result};

/// Fitted models by id.
#[derive(Default)]
pub(crate) struct ModelCache {
    models: Mutex<HashMap<String, Arc<dyn Transformer>>>,
}

impl ModelCache {
    /// Keeps `model`; the id the client refers to it by (a UUID: Spark's ids hold no `.`).
    pub(crate) fn insert(&self, model: Arc<dyn Transformer>) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.models
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), model);
        id
    }

    /// The model `id` names; Spark's `CONNECT_ML.CACHE_INVALID` when this session has none of that id.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<dyn Transformer>> {
        let models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        models.get(id).cloned().ok_or_else(|| {
            ConnectError::IllegalArgument(format!(
                "[CONNECT_ML.CACHE_INVALID] The model {id} is not in this session's cache: it was deleted, or \
                 belongs to another session."
            ))
        })
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
            .map(|(id, model)| format!("{id}: {}", model.class()))
            .collect()
    }
}
