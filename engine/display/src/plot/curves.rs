//! Curves: per-epoch training figures, of one model or of several compared, and a binary classifier's ROC and
//! precision-recall curves.

use hearth_exec::error::{HearthError, Result};
use hearth_stats::evaluation::BinaryState;
use hearth_torch::train::EpochStats;
use plotters::prelude::*;

use super::{Svg, captioned, drawn, padded};

/// A named line of `(epoch, value)` points, in its colour.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// The per-epoch figures a curve can show, by [`EpochStats`]' field names.
const EPOCH_FIGURES: [&str; 4] = ["loss", "accuracy", "validation_loss", "validation_accuracy"];

/// The figure `name` (one of [`EPOCH_FIGURES`]) of each epoch that has it, as `(epoch, value)` points.
fn epoch_figure(history: &[EpochStats], name: &str) -> Option<Vec<(f64, f64)>> {
    let value: fn(&EpochStats) -> Option<f64> = match name {
        "loss" => |e| Some(e.loss),
        "accuracy" => |e| e.accuracy,
        "validation_loss" => |e| e.validation_loss,
        "validation_accuracy" => |e| e.validation_accuracy,
        _ => return None,
    };
    Some(
        history
            .iter()
            .filter_map(|e| value(e).map(|v| (e.epoch as f64, v)))
            .collect(),
    )
}

/// One panel of curves: each series' values per epoch, with a legend.
fn curves_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    name: &str,
    series: &[Series],
    epochs: usize,
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let y = padded(series.iter().flat_map(|(_, _, points)| points).map(|p| p.1));
    let mut chart = captioned(area, name, 32).build_cartesian_2d(0.5..epochs as f64 + 0.5, y)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc(name)
        .x_labels(epochs.min(10))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    for (label, color, points) in series.iter().filter(|(_, _, points)| !points.is_empty()) {
        let color = *color;
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
            .label(*label)
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
    let series = |name: &str| epoch_figure(history, name).unwrap_or_default();
    let loss = [
        ("train", BLUE, series("loss")),
        ("validation", RED, series("validation_loss")),
    ];
    let accuracy = [
        ("train", BLUE, series("accuracy")),
        ("validation", RED, series("validation_accuracy")),
    ];
    let epochs = history.iter().map(|e| e.epoch).max().unwrap_or(1);
    drawn("training curves", format!("Training curves, {epochs} epochs"), |root| {
        let panels = root.split_evenly((1, 2));
        curves_panel(&panels[0], "loss", &loss, epochs)?;
        if accuracy.iter().any(|(_, _, points)| !points.is_empty()) {
            curves_panel(&panels[1], "accuracy", &accuracy, epochs)?;
        }
        Ok(())
    })
}

/// One per-epoch figure of several trained models on one plot, a line each: `figure` is `loss`, `accuracy`,
/// `validation_loss` or `validation_accuracy`, `runs` each model's name and history (`model.history()`).
///
/// ```
/// use hearth_display::plot::compared_curves;
/// use hearth_torch::train::EpochStats;
/// let epoch = |epoch, validation_accuracy| EpochStats {
///     epoch,
///     loss: 0.5,
///     accuracy: None,
///     validation_loss: None,
///     validation_accuracy: Some(validation_accuracy),
///     learning_rate: 1e-3,
///     seconds: 0.1,
///     rows: 800,
/// };
/// let (plain, mixup) = ([epoch(1, 0.80), epoch(2, 0.84)], [epoch(1, 0.78), epoch(2, 0.85)]);
/// let svg = compared_curves("validation_accuracy", &[("no MixUp", &plain), ("MixUp", &mixup)]).unwrap();
/// assert!(svg.markup().contains("MixUp") && svg.title().contains("validation_accuracy"));
/// assert!(compared_curves("validation_loss", &[("no MixUp", &plain)]).is_err()); // none recorded
/// assert!(compared_curves("f1", &[("no MixUp", &plain)]).is_err());
/// ```
pub fn compared_curves(figure: &str, runs: &[(&str, &[EpochStats])]) -> Result<Svg> {
    let plot = "compared curves";
    let mut series = Vec::with_capacity(runs.len());
    for (i, (name, history)) in runs.iter().enumerate() {
        let points = epoch_figure(history, figure).ok_or_else(|| {
            HearthError::plot(
                plot,
                format!("no figure {figure:?}: one of {}", EPOCH_FIGURES.join(", ")),
            )
        })?;
        let (red, green, blue) = Palette99::pick(i).rgb();
        series.push((*name, RGBColor(red, green, blue), points));
    }
    if series.iter().all(|(_, _, points)| points.is_empty()) {
        let hint = if figure.starts_with("validation") {
            " (validation figures need validation rows: validation_indicator_col)"
        } else {
            ""
        };
        return Err(HearthError::plot(plot, format!("no model recorded {figure}{hint}")));
    }
    let epochs = runs
        .iter()
        .flat_map(|(_, history)| history.iter().map(|e| e.epoch))
        .max()
        .unwrap_or(1);
    let names: Vec<&str> = runs.iter().map(|(name, _)| *name).collect();
    drawn(plot, format!("{figure} per epoch: {}", names.join(", ")), |root| {
        curves_panel(root, figure, &series, epochs)
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
        let mut chart = captioned(root, &caption, 36).build_cartesian_2d(0.0..1.0, 0.0..1.02)?;
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
