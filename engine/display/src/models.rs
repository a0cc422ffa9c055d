//! Fitted pipelines, trained models and sessions as notebook users see them.

use datafusion::prelude::DataFrame;
use hearth_exec::ballista::{ExecutorResources, fleet_resources};
use hearth_exec::error::Result;
use hearth_exec::master::SessionInfo;
use hearth_exec::session::Session;
use hearth_preprocessing::pipeline::PipelineModel;
use hearth_preprocessing::stage::Stage;
use hearth_training::train::{NetworkModel, Outputs, RankReport};

use super::plot::{Svg, training_curves};
use super::{Grid, Rich};

/// A number of seconds, three decimals.
fn seconds(value: f64) -> String {
    format!("{value:.3}")
}

/// Bytes in MiB, one decimal.
fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// An optional value, four decimals, or `-`.
fn optional(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.4}"))
}

/// A fitted pipeline's stages, one row each: class, uid, what was fitted.
fn pipeline_grid(pipeline: &PipelineModel) -> Grid {
    let mut grid = Grid::new(["#", "stage", "uid", "fitted state"])
        .caption(format!("PipelineModel of {} stages", pipeline.stages().len()));
    for (i, stage) in pipeline.stages().iter().enumerate() {
        grid.push([
            i.to_string(),
            stage.class().to_string(),
            stage.uid().to_string(),
            stage.describe(),
        ]);
    }
    grid
}

impl Rich for PipelineModel {
    fn to_html(&self) -> String {
        pipeline_grid(self).to_html()
    }

    fn to_text(&self) -> String {
        pipeline_grid(self).to_text()
    }
}

/// What a trained network is, how each epoch went, each rank's share and each attempt of its training stage.
fn network_grids<O: Outputs>(model: &NetworkModel<O>) -> Vec<Grid> {
    let overview = Grid::new(["model", "uid", "network", "features", "label", "prediction"])
        .caption(model.class())
        .row([
            model.class().to_string(),
            model.uid().to_string(),
            model.describe(),
            model.features_col().to_string(),
            model.label_col().to_string(),
            model.prediction_col().to_string(),
        ]);
    let mut history = Grid::new([
        "epoch",
        "loss",
        "accuracy",
        "validation loss",
        "validation accuracy",
        "learning rate",
        "rows",
        "seconds",
    ])
    .caption("Training history (averaged over every rank's rows)");
    for epoch in model.history() {
        history.push([
            epoch.epoch.to_string(),
            format!("{:.4}", epoch.loss),
            optional(epoch.accuracy),
            optional(epoch.validation_loss),
            optional(epoch.validation_accuracy),
            format!("{:e}", epoch.learning_rate),
            epoch.rows.to_string(),
            seconds(epoch.seconds),
        ]);
    }
    if model.history().is_empty() {
        history = history.note("no training history was kept with this model");
    }
    let ranks = ranks_grid(&model.summary().ranks);
    let mut attempts = Grid::new(["attempt", "resumed from epoch", "seconds", "outcome"]).caption("Attempts");
    for attempt in &model.summary().attempts {
        attempts.push([
            attempt.attempt.to_string(),
            attempt.resumed_from_epoch.to_string(),
            seconds(attempt.seconds),
            attempt.error.clone().unwrap_or_else(|| "succeeded".to_string()),
        ]);
    }
    vec![overview, history, ranks, attempts]
}

/// Each rank's host, device, rows (held or streamed, and their peak in memory), steps and time; staleness
/// where the ranks had a parameter server.
fn ranks_grid(ranks: &[RankReport]) -> Grid {
    let asynchronous = ranks.iter().any(|r| r.staleness.is_some());
    let mut header = vec![
        "rank",
        "host",
        "device",
        "rows",
        "held",
        "peak memory",
        "steps",
        "seconds",
    ];
    if asynchronous {
        header.extend(["updates", "mean staleness", "max staleness"]);
    }
    let mut grid = Grid::new(header).caption("Ranks");
    for rank in ranks {
        let mut cells = vec![
            rank.rank.to_string(),
            rank.host.clone(),
            rank.device.clone(),
            rank.rows.to_string(),
            match rank.streamed {
                true => "streamed".to_string(),
                false => "in memory".to_string(),
            },
            mebibytes(rank.peak_bytes),
            rank.steps.to_string(),
            seconds(rank.seconds),
        ];
        if asynchronous {
            let s = rank.staleness.unwrap_or_default();
            cells.extend([s.updates.to_string(), format!("{:.2}", s.mean), s.max.to_string()]);
        }
        grid.push(cells);
    }
    grid
}

/// A trained network's plot of loss and accuracy per epoch.
pub trait TrainingCurves {
    /// Loss and accuracy per epoch, training and validation, as SVG.
    fn training_curves(&self) -> Result<Svg>;
}

impl<O: Outputs> TrainingCurves for NetworkModel<O> {
    fn training_curves(&self) -> Result<Svg> {
        training_curves(self.history())
    }
}

impl<O: Outputs> Rich for NetworkModel<O> {
    /// The tables, with the training curves under the history when it has any.
    fn to_html(&self) -> String {
        let mut html = network_grids(self).to_html();
        if let Ok(curves) = self.training_curves() {
            html.push('\n');
            html.push_str(&curves.to_html());
        }
        html
    }

    fn to_text(&self) -> String {
        network_grids(self).to_text()
    }
}

/// Where a session runs: its master, task slots, and — on a fleet — each executor's resources.
#[derive(Clone, Debug)]
pub struct SessionView {
    master: String,
    task_slots: usize,
    executors: Vec<ExecutorResources>,
}

impl SessionView {
    /// Asks `session` (and its fleet's scheduler) what it has.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
    /// use hearth_display::{Rich, SessionView};
    /// let view = SessionView::of(&hearth_exec::session::Session::builder().local(2)).await.unwrap();
    /// assert!(view.to_text().contains("local[2]"));
    /// # });
    /// ```
    pub async fn of(session: &Session) -> Result<Self> {
        let probe: DataFrame = session.context().read_empty()?;
        let info = SessionInfo::of(&probe);
        let executors = match info.scheduler() {
            Some(scheduler) => fleet_resources(scheduler).await?,
            None => Vec::new(),
        };
        Ok(Self {
            master: session.master().to_string(),
            task_slots: info.task_slots().await?,
            executors,
        })
    }

    fn grids(&self) -> Vec<Grid> {
        let overview = Grid::new(["master", "task slots", "executors"])
            .caption("Session")
            .row([
                self.master.clone(),
                self.task_slots.to_string(),
                self.executors.len().to_string(),
            ]);
        if self.executors.is_empty() {
            return vec![overview];
        }
        let mut executors = Grid::new(["executor", "host", "slots", "memory GiB", "GPUs"]).caption("Executors");
        for executor in &self.executors {
            let gpus: Vec<String> = executor
                .gpus
                .iter()
                .map(|g| format!("{} {}", g.index, g.name))
                .collect();
            executors.push([
                executor.executor_id.clone(),
                executor.host.clone(),
                executor.slots.to_string(),
                format!("{:.1}", executor.memory_bytes as f64 / f64::from(1u32 << 30)),
                if gpus.is_empty() {
                    "none".to_string()
                } else {
                    gpus.join(", ")
                },
            ]);
        }
        vec![overview, executors]
    }
}

impl Rich for SessionView {
    fn to_html(&self) -> String {
        self.grids().to_html()
    }

    fn to_text(&self) -> String {
        self.grids().to_text()
    }
}
