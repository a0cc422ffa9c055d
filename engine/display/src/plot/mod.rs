//! Plots as SVG, drawn with plotters: a model's training curves and several models' curves side by side, a
//! binary classifier's ROC and precision-recall curves (Spark's curves, from the evaluator's state), a
//! confusion matrix heat map and clusters against labels. Each shows itself inline in a notebook and saves to
//! a file for a terminal user.

mod curves;
mod heat_map;

use std::path::Path;

use hearth_exec::error::{HearthError, Result};
use plotters::prelude::*;

use super::{Rich, escape};

pub use curves::{compared_curves, pr_curve, roc_curve, training_curves};
pub use heat_map::{cluster_matching, confusion_matrix};

/// The size of a plot, in pixels.
const SIZE: (u32, u32) = (720, 400);

/// The bins Spark's `BinaryClassificationEvaluator` downsamples its curves to by default.
pub const SPARK_NUM_BINS: usize = 1000;

/// A drawn plot: what kind of plot it is, its title and its SVG.
#[derive(Clone, Debug, PartialEq)]
pub struct Svg {
    kind: &'static str,
    title: String,
    markup: String,
}

impl Svg {
    /// The kind of plot, as a file name's part: `training_curves`, `compared_curves`, `roc_curve`, `pr_curve`,
    /// `confusion_matrix` or `cluster_matching`.
    pub fn file_stem(&self) -> String {
        self.kind.to_lowercase().replace(' ', "_")
    }

    /// The SVG document.
    pub fn markup(&self) -> &str {
        &self.markup
    }

    /// What it shows.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// Writes it to `path` (whole, or not at all: a temporary file renamed into place).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let temporary = path.with_extension("svg.tmp");
        std::fs::write(&temporary, &self.markup)
            .map_err(|e| HearthError::persistence(path, "cannot write the plot").caused_by(e))?;
        std::fs::rename(&temporary, path)
            .map_err(|e| HearthError::persistence(path, "cannot write the plot").caused_by(e))
    }
}

impl Rich for Svg {
    fn to_html(&self) -> String {
        format!("<figure title=\"{}\">{}</figure>", escape(&self.title), self.markup)
    }

    fn to_text(&self) -> String {
        format!("{} (an SVG plot; save it with .save(\"plot.svg\"))", self.title)
    }
}

/// Draws with `draw` on a white canvas and returns the SVG.
fn drawn<E: std::error::Error + Send + Sync + 'static>(
    plot: &'static str,
    title: String,
    draw: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>) -> std::result::Result<(), DrawingAreaErrorKind<E>>,
) -> Result<Svg> {
    let mut markup = String::new();
    {
        let root = SVGBackend::with_string(&mut markup, SIZE).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| HearthError::plot(plot, "drawing it").caused_by(e))?;
        draw(&root).map_err(|e| HearthError::plot(plot, "drawing it").caused_by(e))?;
        root.present()
            .map_err(|e| HearthError::plot(plot, "drawing it").caused_by(e))?;
    }
    Ok(Svg {
        kind: plot,
        title,
        markup,
    })
}

/// A chart on `area` under `caption`, with room for the axes' labels (`x_labels` pixels below it).
fn captioned<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    x_labels: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut chart = ChartBuilder::on(area);
    chart
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(x_labels)
        .y_label_area_size(52);
    chart
}

/// A range around `values` with a little room, never empty.
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (low, high) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if !low.is_finite() {
        return 0.0..1.0;
    }
    let room = ((high - low) * 0.08).max(high.abs().max(1e-3) * 0.05);
    (low - room)..(high + room)
}
