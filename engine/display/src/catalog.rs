//! The plots of a model in the catalog, as `hearth sql --plots DIR` saves them after `CREATE MODEL`: its
//! training curves and, when it held rows out, its evaluation on them — a classifier's confusion matrix, and a
//! binary one's ROC and precision-recall curves (BigQuery ML's console shows the same after training).

use std::path::{Path, PathBuf};

use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;
use hearth_preprocessing::stage::Transformer;
use hearth_sql::{CatalogModel, Trained, held_out_rows};

use super::Metrics;
use super::plot::{Svg, training_curves};

/// The plots of a model in the catalog: what `hearth sql --plots DIR` saves.
#[allow(async_fn_in_trait)]
pub trait CatalogPlots {
    /// Its plots: the training curves of its network (when it kept a history) or linear model (when solved by
    /// iterations), then the evaluation plots on the rows it held out (when it held any), computed in `session`.
    async fn plots(&self, session: &Session) -> Result<Vec<Svg>>;

    /// Saves [`plots`](Self::plots) into `dir` (created when missing) as `<model>_<plot>.svg` and returns the
    /// files written.
    ///
    /// ```no_run
    /// use hearth_display::CatalogPlots;
    /// use hearth_sql::SqlSessionExt;
    /// # async fn show(session: &hearth_exec::session::Session) -> hearth_exec::error::Result<()> {
    /// let model = session.models()?.get("credit_risk")?;
    /// for file in model.save_plots(session, "plots").await? {
    ///     println!("{}", file.display()); // plots/credit_risk_training_curves.svg, …
    /// }
    /// # Ok(()) }
    /// ```
    async fn save_plots(&self, session: &Session, dir: impl AsRef<Path>) -> Result<Vec<PathBuf>>;
}

impl CatalogPlots for CatalogModel {
    /// Its plots: the training curves of its network (when it kept a history) or linear model (when solved by
    /// iterations), then the evaluation plots on the rows it held out (when it held any), computed in `session`.
    async fn plots(&self, session: &Session) -> Result<Vec<Svg>> {
        let trained = Trained::of(&self.pipeline);
        let curve = trained.map(Trained::curve).unwrap_or_default();
        let mut plots = Vec::new();
        if !curve.is_empty() {
            plots.push(training_curves(&curve)?);
        }
        let classifier = trained.and_then(Trained::classifier);
        if let (Some(classifier), Some(_)) = (classifier, self.evaluation_file()) {
            let held_out = DataFrame::new(session.context().state(), held_out_rows(self)?);
            let scored = self.pipeline.transform(&held_out)?;
            plots.extend(Metrics::of_classifier(classifier, &scored).await?.plots()?);
        }
        Ok(plots)
    }

    async fn save_plots(&self, session: &Session, dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)
            .map_err(|e| HearthError::persistence(dir, "cannot create the plots' directory").caused_by(e))?;
        let mut files = Vec::new();
        for plot in self.plots(session).await? {
            let file = dir.join(format!("{}_{}.svg", self.entry.name, plot.file_stem()));
            plot.save(&file)?;
            files.push(file);
        }
        Ok(files)
    }
}
