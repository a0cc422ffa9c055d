//! Benchmark: what showing a result costs. `df.preview(20)` on 200,000 preprocessed Higgs events (30 numbers,
//! a label, two 30-slot vectors) against the bare query it runs (`limit(21)` collected, the baseline), alternated
//! in one process on `local[2]`; and drawing each plot: training curves of 100 epochs, the ROC and PR curves of
//! 200,000 scores (Spark's 1000 bins), a 10-class confusion matrix.
//!
//! With the `polars` feature, handing the same rows to polars (`to_polars`) and back (`from_polars`), against
//! collecting them as Arrow batches (the baseline).
//!
//! ```text
//! ./dev bench --bench display --features polars
//! ```

use std::time::Instant;

use hearth::datasets::higgs;
use hearth::display::plot::{SPARK_NUM_BINS, confusion_matrix, pr_curve, roc_curve, training_curves};
use hearth::prelude::*;
use hearth::stats::evaluation::{BinaryState, MulticlassState};
use hearth::torch::train::EpochStats;
use prettytable::{Table, row};

/// Alternated rounds of the preview and its baseline; plots are drawn as often.
const ROUNDS: usize = 15;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Milliseconds `work` takes, median of [`ROUNDS`].
fn timed_ms(mut work: impl FnMut()) -> f64 {
    median(
        (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                work();
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let session = Session::builder().with_default_features().local(2);
    let events = session.read_batches(higgs::schema(), higgs::batches(200_000, 8192, 42))?;
    let prepared = higgs::preprocessing().fit_transform(&events).await?.1.cache().await?;

    let (mut bare, mut shown) = (Vec::new(), Vec::new());
    let mut html_bytes = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let batches = prepared.clone().limit(0, Some(21))?.collect().await?;
        bare.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(
            batches
                .iter()
                .map(datafusion::arrow::array::RecordBatch::num_rows)
                .sum::<usize>(),
            21
        );
        let started = Instant::now();
        let preview = prepared.preview(20).await?;
        html_bytes = preview.to_html().len();
        shown.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let (bare, shown) = (median(bare), median(shown));

    let history: Vec<EpochStats> = (1..=100)
        .map(|epoch| EpochStats {
            epoch,
            loss: 1.0 / epoch as f64,
            accuracy: Some(1.0 - 0.5 / epoch as f64),
            validation_loss: Some(1.1 / epoch as f64),
            validation_accuracy: Some(1.0 - 0.6 / epoch as f64),
            learning_rate: 1e-3,
            seconds: 0.1,
            rows: 1000,
        })
        .collect();
    let mut scores = BinaryState::default();
    let mut classes = MulticlassState::default();
    for i in 0..200_000u64 {
        let label = (i % 3 == 0) as u8 as f64;
        let score = ((i * 7919) % 10_007) as f64 / 10_007.0 * 0.7 + 0.3 * label;
        scores.add(score, label, 1.0);
        classes.add((i % 10) as f64, ((i * 31) % 10) as f64, 1.0, None);
    }
    let curves = timed_ms(|| drop(training_curves(&history).expect("curves")));
    let roc = timed_ms(|| drop(roc_curve(&scores, SPARK_NUM_BINS).expect("ROC")));
    let pr = timed_ms(|| drop(pr_curve(&scores, SPARK_NUM_BINS).expect("PR")));
    let matrix = timed_ms(|| drop(confusion_matrix(&classes).expect("matrix")));

    println!("200,000 preprocessed Higgs events on local[2], medians of {ROUNDS} alternated rounds\n");
    let mut table = Table::new();
    table.set_titles(row!["showing", "ms", "vs the bare query"]);
    table.add_row(row!["limit(21) collected (baseline)", format!("{bare:.2}"), "-"]);
    table.add_row(row![
        format!("df.preview(20), HTML {html_bytes} bytes"),
        format!("{shown:.2}"),
        format!("{:+.2} ms ({:.2} ×)", shown - bare, shown / bare)
    ]);
    table.printstd();
    let mut plots = Table::new();
    plots.set_titles(row!["plot (SVG)", "ms"]);
    plots.add_row(row![
        "training curves, 100 epochs, train + validation",
        format!("{curves:.2}")
    ]);
    plots.add_row(row!["ROC curve, 200,000 scores, 1000 bins", format!("{roc:.2}")]);
    plots.add_row(row!["PR curve, 200,000 scores, 1000 bins", format!("{pr:.2}")]);
    plots.add_row(row!["confusion matrix, 10 classes", format!("{matrix:.2}")]);
    plots.printstd();
    #[cfg(feature = "polars")]
    polars_rounds(&session, &prepared).await?;
    Ok(())
}

/// `to_polars` and `from_polars` of the prepared events, against collecting them (the baseline).
#[cfg(feature = "polars")]
async fn polars_rounds(session: &Session, prepared: &DataFrame) -> Result<()> {
    let (mut collected, mut to, mut from) = (Vec::new(), Vec::new(), Vec::new());
    let mut shape = (0, 0);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let batches = prepared.clone().collect().await?;
        collected.push(started.elapsed().as_secs_f64() * 1e3);
        drop(batches);
        let started = Instant::now();
        let frame = prepared.to_polars().await?;
        to.push(started.elapsed().as_secs_f64() * 1e3);
        shape = frame.shape();
        let started = Instant::now();
        let back = DataFrame::from_polars(session, &frame)?.collect().await?;
        from.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(
            back.iter()
                .map(datafusion::arrow::array::RecordBatch::num_rows)
                .sum::<usize>(),
            shape.0
        );
    }
    let (collected, to, from) = (median(collected), median(to), median(from));
    let mut table = Table::new();
    table.set_titles(row![
        format!("{} rows × {} columns", shape.0, shape.1),
        "ms",
        "vs collecting"
    ]);
    table.add_row(row![
        "collect() as Arrow batches (baseline)",
        format!("{collected:.2}"),
        "-"
    ]);
    table.add_row(row![
        "df.to_polars()",
        format!("{to:.2}"),
        format!("{:.2} ×", to / collected)
    ]);
    table.add_row(row![
        "DataFrame::from_polars(…) collected",
        format!("{from:.2}"),
        format!("{:.2} ×", from / collected)
    ]);
    table.printstd();
    Ok(())
}
