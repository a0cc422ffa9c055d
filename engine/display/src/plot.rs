//! Plots as SVG, drawn with plotters: a model's training curves, a binary classifier's ROC and
//! precision-recall curves (Spark's curves, from the evaluator's state), a confusion matrix heat map. Each
//! shows itself inline in a notebook and saves to a file for a terminal user.

use std::path::Path;

use hearth_stats::evaluation::{BinaryState, MulticlassState};
use hearth_torch::train::EpochStats;
use plotters::prelude::*;

use super::{Rich, escape};
use hearth_engine::error::{HearthError, Result};

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
    /// The kind of plot, as a file name's part: `training_curves`, `roc_curve`, `pr_curve` or
    /// `confusion_matrix`.
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

/// One panel of the training curves: `train` and, when any, `validation` values per epoch.
fn curves_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    name: &str,
    train: &[(f64, f64)],
    validation: &[(f64, f64)],
    epochs: usize,
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let y = padded(train.iter().chain(validation).map(|p| p.1));
    let mut chart = ChartBuilder::on(area)
        .caption(name, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(52)
        .build_cartesian_2d(0.5..epochs as f64 + 0.5, y)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc(name)
        .x_labels(epochs.min(10))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    for (points, color, label) in [(train, BLUE, "train"), (validation, RED, "validation")] {
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

/// Loss and accuracy per epoch (training, and validation when the model held rows out), side by side.
///
/// ```
/// use hearth_display::plot::training_curves;
/// use hearth_torch::train::EpochStats;
/// let epoch = EpochStats {
///     epoch: 1,
///     loss: 0.7,
///     accuracy: Some(0.6),
///     validation_loss: None,
///     validation_accuracy: None,
///     learning_rate: 1e-3,
///     seconds: 0.1,
///     rows: 800,
/// };
/// let svg = training_curves(&[epoch]).unwrap();
/// assert!(svg.markup().starts_with("<svg") && svg.markup().contains("loss"));
/// ```
pub fn training_curves(history: &[EpochStats]) -> Result<Svg> {
    if history.is_empty() {
        return Err(HearthError::plot(
            "training curves",
            "the model kept no training history",
        ));
    }
    let series = |value: fn(&EpochStats) -> Option<f64>| -> Vec<(f64, f64)> {
        history
            .iter()
            .filter_map(|e| value(e).map(|v| (e.epoch as f64, v)))
            .collect()
    };
    let loss = series(|e| Some(e.loss));
    let validation_loss = series(|e| e.validation_loss);
    let accuracy = series(|e| e.accuracy);
    let validation_accuracy = series(|e| e.validation_accuracy);
    let epochs = history.iter().map(|e| e.epoch).max().unwrap_or(1);
    drawn("training curves", format!("Training curves, {epochs} epochs"), |root| {
        let panels = root.split_evenly((1, 2));
        curves_panel(&panels[0], "loss", &loss, &validation_loss, epochs)?;
        if !accuracy.is_empty() || !validation_accuracy.is_empty() {
            curves_panel(&panels[1], "accuracy", &accuracy, &validation_accuracy, epochs)?;
        }
        Ok(())
    })
}

/// A curve from `(0, 0)`-ish to `(1, 1)`-ish with its area in the caption, and the diagonal when `diagonal`.
fn unit_curve(
    plot: &'static str,
    title: String,
    (x_name, y_name): (&str, &str),
    points: Vec<(f64, f64)>,
    diagonal: bool,
) -> Result<Svg> {
    let caption = title.clone();
    drawn(plot, title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(52)
            .build_cartesian_2d(0.0..1.0, 0.0..1.02)?;
        chart.configure_mesh().x_desc(x_name).y_desc(y_name).draw()?;
        if diagonal {
            chart.draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.3)))?;
        }
        chart.draw_series(LineSeries::new(points, BLUE.stroke_width(2)))?;
        Ok(())
    })
}

/// The ROC curve `(false-positive rate, true-positive rate)` as Spark's `BinaryClassificationMetrics`
/// draws it from `num_bins` score bins, with areaUnderROC.
pub fn roc_curve(state: &BinaryState, num_bins: usize) -> Result<Svg> {
    let area = state.area_under_roc(num_bins);
    unit_curve(
        "ROC curve",
        format!("ROC curve, areaUnderROC {area:.4}"),
        ("false positive rate", "true positive rate"),
        state.roc(num_bins),
        true,
    )
}

/// The precision-recall curve `(recall, precision)` as Spark draws it, with areaUnderPR.
pub fn pr_curve(state: &BinaryState, num_bins: usize) -> Result<Svg> {
    let area = state.area_under_pr(num_bins);
    unit_curve(
        "PR curve",
        format!("Precision-recall curve, areaUnderPR {area:.4}"),
        ("recall", "precision"),
        state.pr(num_bins),
        false,
    )
}

/// The confusion matrix as a heat map: true labels down, predicted labels across, each cell's weight written
/// in it and shaded by its share of its true label's rows.
pub fn confusion_matrix(state: &MulticlassState) -> Result<Svg> {
    let cells = state.confusion();
    let mut labels: Vec<i64> = cells.iter().flat_map(|&(l, p, _)| [l, p]).collect();
    labels.sort_unstable();
    labels.dedup();
    if labels.is_empty() {
        return Err(HearthError::plot("confusion matrix", "no rows were evaluated"));
    }
    let n = labels.len();
    let index = |label: i64| labels.binary_search(&label).unwrap_or(0);
    let mut weights = vec![vec![0.0; n]; n];
    for &(label, prediction, weight) in &cells {
        weights[index(label)][index(prediction)] += weight;
    }
    let names: Vec<String> = labels.iter().map(i64::to_string).collect();
    drawn("confusion matrix", format!("Confusion matrix, {n} labels"), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Confusion matrix (shade: share of the true label's rows)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(52)
            // A segmented range 0..k has k + 1 segments.
            .build_cartesian_2d((0..n - 1).into_segmented(), (0..n - 1).into_segmented())?;
        let label_of = |value: &SegmentValue<usize>| match value {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("predicted label")
            .y_desc("true label")
            .x_label_formatter(&label_of)
            .y_label_formatter(&|value| match value {
                SegmentValue::CenterOf(i) if *i < n => label_of(&SegmentValue::CenterOf(n - 1 - i)),
                _ => String::new(),
            })
            .draw()?;
        for (row, weights_of_label) in weights.iter().enumerate() {
            let total: f64 = weights_of_label.iter().sum();
            for (column, &weight) in weights_of_label.iter().enumerate() {
                let share = if total > 0.0 { weight / total } else { 0.0 };
                let shade = (255.0 * (1.0 - 0.75 * share)) as u8;
                // Row 0 at the top, as confusion matrices are read.
                let y = n - 1 - row;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [
                        (SegmentValue::Exact(column), SegmentValue::Exact(y)),
                        (SegmentValue::Exact(column + 1), SegmentValue::Exact(y + 1)),
                    ],
                    RGBColor(shade, shade, 255).filled(),
                )))?;
                chart.draw_series(std::iter::once(Text::new(
                    format!("{weight}"),
                    (SegmentValue::CenterOf(column), SegmentValue::CenterOf(y)),
                    ("sans-serif", 16),
                )))?;
            }
        }
        Ok(())
    })
}
