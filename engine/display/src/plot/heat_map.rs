//! Heat maps of weights: a classifier's confusion matrix, and clusters against the labels they match.

use hearth_exec::error::{HearthError, Result};
use hearth_stats::evaluation::{ClusteringState, MulticlassState};
use plotters::prelude::*;

use super::{Svg, captioned, drawn};

/// Weights by row and column, with the names of both and what each axis holds.
struct Matrix {
    rows: Vec<String>,
    columns: Vec<String>,
    row_axis: &'static str,
    column_axis: &'static str,
    /// `weights[row][column]`.
    weights: Vec<Vec<f64>>,
}

/// `matrix` drawn with its first row at the top, each cell's weight written in it and shaded by its share of
/// its row's weight.
fn heat_map(plot: &'static str, title: String, caption: &str, matrix: &Matrix) -> Result<Svg> {
    let (height, width) = (matrix.rows.len(), matrix.columns.len());
    if height == 0 || width == 0 {
        return Err(HearthError::plot(plot, "no rows were evaluated"));
    }
    let name = |names: &[String], value: &SegmentValue<usize>| match value {
        SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    drawn(plot, title, |root| {
        // A segmented range 0..k has k + 1 segments.
        let mut chart = captioned(root, caption, 36)
            .build_cartesian_2d((0..width - 1).into_segmented(), (0..height - 1).into_segmented())?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(matrix.column_axis)
            .y_desc(matrix.row_axis)
            .x_label_formatter(&|value| name(&matrix.columns, value))
            .y_label_formatter(&|value| match value {
                SegmentValue::CenterOf(i) if *i < height => name(&matrix.rows, &SegmentValue::CenterOf(height - 1 - i)),
                _ => String::new(),
            })
            .draw()?;
        for (row, weights) in matrix.weights.iter().enumerate() {
            let total: f64 = weights.iter().sum();
            // Row 0 at the top, as matrices are read.
            let y = height - 1 - row;
            for (column, &weight) in weights.iter().enumerate() {
                let share = if total > 0.0 { weight / total } else { 0.0 };
                let shade = (255.0 * (1.0 - 0.75 * share)) as u8;
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

/// The confusion matrix as a heat map: true labels down, predicted labels across, each cell's weight written
/// in it and shaded by its share of its true label's rows.
pub fn confusion_matrix(state: &MulticlassState) -> Result<Svg> {
    let cells = state.confusion();
    let mut labels: Vec<i64> = cells.iter().flat_map(|&(l, p, _)| [l, p]).collect();
    labels.sort_unstable();
    labels.dedup();
    let n = labels.len();
    let index = |label: i64| labels.binary_search(&label).unwrap_or(0);
    let mut weights = vec![vec![0.0; n]; n];
    for &(label, prediction, weight) in &cells {
        weights[index(label)][index(prediction)] += weight;
    }
    let names: Vec<String> = labels.iter().map(i64::to_string).collect();
    let matrix = Matrix {
        rows: names.clone(),
        columns: names,
        row_axis: "true label",
        column_axis: "predicted label",
        weights,
    };
    heat_map(
        "confusion matrix",
        format!("Confusion matrix, {n} labels"),
        "Confusion matrix (shade: share of the true label's rows)",
        &matrix,
    )
}

/// Clusters against the true labels of their rows (a clustering's [`ClusteringState`], from
/// `ClusteringEvaluator::accuracy_state`): labels down, clusters across in the order of the label each
/// matches under `clusterAccuracy`'s one-to-one matching (so the matched weight lies on the diagonal), then
/// any unmatched clusters.
///
/// ```
/// use hearth_display::plot::cluster_matching;
/// use hearth_stats::evaluation::ClusteringState;
/// let mut state = ClusteringState::default();
/// for (cluster, digit) in [(4, 0), (4, 0), (1, 1), (1, 1), (1, 0), (7, 1)] {
///     state.add(cluster, digit, 1.0);
/// }
/// let svg = cluster_matching(&state).unwrap();
/// assert!(svg.title().contains("clusterAccuracy 0.6667"), "{}", svg.title());
/// assert!(cluster_matching(&ClusteringState::default()).is_err());
/// ```
pub fn cluster_matching(state: &ClusteringState) -> Result<Svg> {
    let mut labels: Vec<i64> = state.counts().map(|((_, label), _)| label).collect();
    labels.sort_unstable();
    labels.dedup();
    let mut matched = state.matching();
    matched.sort_by_key(|&(_, label)| label);
    let mut clusters: Vec<i64> = matched.iter().map(|&(cluster, _)| cluster).collect();
    let mut unmatched: Vec<i64> = state.counts().map(|((cluster, _), _)| cluster).collect();
    unmatched.dedup();
    unmatched.retain(|cluster| !clusters.contains(cluster));
    clusters.extend(unmatched);
    let mut weights = vec![vec![0.0; clusters.len()]; labels.len()];
    for ((cluster, label), weight) in state.counts() {
        if let (Ok(row), Some(column)) = (
            labels.binary_search(&label),
            clusters.iter().position(|&c| c == cluster),
        ) {
            weights[row][column] += weight;
        }
    }
    let matrix = Matrix {
        rows: labels.iter().map(i64::to_string).collect(),
        columns: clusters.iter().map(i64::to_string).collect(),
        row_axis: "true label",
        column_axis: "cluster (in the order of its matched label)",
        weights,
    };
    heat_map(
        "cluster matching",
        format!("Clusters against labels, clusterAccuracy {:.4}", state.accuracy()),
        "Clusters against labels (shade: share of the label's rows)",
        &matrix,
    )
}
