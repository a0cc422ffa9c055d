//! Benchmark: the cost of explanations — `ML.EXPLAIN_PREDICT` (integrated gradients, 20 steps, top 5
//! features) against `ML.PREDICT` of the same DNN over the same 100,000 rows, alternated in the same run on
//! `local[2]` (goal: at most 5× the prediction's time), and against `ML.PREDICT` over the rows 20 times — as
//! many network evaluations as the explanation's 20 steps make, without their backward passes.
//!
//! ```text
//! ./dev bench --bench explain            # 100,000 rows; or: ./dev bench --bench explain -- ROWS
//! ```

use std::time::Instant;

use hearth::prelude::*;
use hearth::sql::parse_statements;
use prettytable::{Table, row};

/// Alternated rounds of each query.
const ROUNDS: usize = 5;

/// Runs `script`'s statements; the rows the last one returned.
async fn run(session: &Session, script: &str) -> Result<usize> {
    let mut rows = 0;
    for statement in parse_statements(script)? {
        rows = session
            .execute(&statement)
            .await?
            .collect()
            .await?
            .iter()
            .map(datafusion::arrow::array::RecordBatch::num_rows)
            .sum();
    }
    Ok(rows)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> Result<()> {
    let rows: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let models = std::env::temp_dir().join(format!("hearth-bench-explain-{}", std::process::id()));
    let session = Session::builder().with_default_features().local(2).with_models(&models);
    run(
        &session,
        &format!(
            "CREATE TABLE events AS
             SELECT sin(i * 1.37) AS x0, sin(i * 2.71 + 1) AS x1, sin(i * 0.93 + 2) AS x2, sin(i * 3.17 + 3) AS x3,
                    sin(i * 1.91 + 4) AS x4, sin(i * 2.29 + 5) AS x5, sin(i * 0.61 + 6) AS x6,
                    sin(i * 1.53 + 7) AS x7, CASE WHEN i % 3 = 0 THEN 'a' WHEN i % 3 = 1 THEN 'b' ELSE 'c' END AS kind,
                    CASE WHEN sin(i * 0.93 + 2) + 2 * sin(i * 1.53 + 7) > 0.1 THEN 'yes' ELSE 'no' END AS label
             FROM generate_series(1, {rows}) AS t(i);
             CREATE MODEL events_dnn OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['label'],
                 hidden_units = [64, 32], max_iterations = 2, workers = 2, data_split_method = 'no_split')
             AS SELECT * FROM events"
        ),
    )
    .await?;
    let predict = "SELECT * FROM ML.PREDICT(MODEL events_dnn, TABLE events)";
    let explain = "SELECT * FROM ML.EXPLAIN_PREDICT(MODEL events_dnn, TABLE events)";
    // Every prediction computed (a count alone would let the optimizer skip the network).
    let twenty = "SELECT predicted_label, COUNT(*) FROM ML.PREDICT(MODEL events_dnn,
                    (SELECT events.* FROM events CROSS JOIN generate_series(1, 20) AS s(step))) GROUP BY 1";
    let (mut predicting, mut explaining, mut predicting_twenty) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        assert_eq!(run(&session, predict).await?, rows);
        predicting.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        assert_eq!(run(&session, explain).await?, rows);
        explaining.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        run(&session, twenty).await?;
        predicting_twenty.push(started.elapsed().as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&models);
    let (p, e, t) = (median(predicting), median(explaining), median(predicting_twenty));
    let mut table = Table::new();
    table.set_titles(row!["query", "median s", "rows/s", "notes"]);
    table.add_row(row![
        "ML.PREDICT",
        format!("{p:.3}"),
        format!("{:.0}", rows as f64 / p),
        "baseline"
    ]);
    table.add_row(row![
        "ML.EXPLAIN_PREDICT",
        format!("{e:.3}"),
        format!("{:.0}", rows as f64 / e),
        "integrated gradients, 20 steps, top 5 of 9 features"
    ]);
    table.add_row(row![
        "ML.PREDICT of the rows × 20",
        format!("{t:.3}"),
        format!("{:.0}", rows as f64 / t),
        "the 20 steps' forward passes, no backward (rows/s: of the original rows)"
    ]);
    println!("{rows} rows, a DNN 64-32 over 8 numbers and a one-hot column, local[2], {ROUNDS} alternated rounds\n");
    table.printstd();
    println!(
        "EXPLAIN_PREDICT / PREDICT: {:.2}× (goal ≤ 5×); EXPLAIN_PREDICT / PREDICT of the rows × 20: {:.2}×",
        e / p,
        e / t
    );
    Ok(())
}
