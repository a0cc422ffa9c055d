//! Benchmark: fitting KMeans through DataFusion aggregates (hearth, `local[2]`) against a hand-written Lloyd
//! loop on two threads over the same points in one `f32` array — the physical limit of this machine for the
//! same arithmetic — from the same initial centers, for the same iterations, measured in the same run.
//!
//! ```text
//! ./dev bench --bench kmeans                 # 1,000,000 points of 16 dimensions, k = 10, 10 iterations
//! ```

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{AsArray, FixedSizeListArray, Float32Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use hearth::prelude::*;
use hearth::stats::clustering::{Centers, ClusterSums, DistanceMeasure};
use hearth::stats::random::Draws;
use prettytable::{Table, row};

const DIM: usize = 16;
const K: usize = 10;
const ITERATIONS: usize = 10;

/// `rows` points around 10 seeded centers.
fn points(rows: usize) -> Vec<f32> {
    let mut draws = Draws::new(11);
    let centers: Vec<f64> = (0..K * DIM).map(|_| draws.between(-4.0, 4.0)).collect();
    let mut values = Vec::with_capacity(rows * DIM);
    for row in 0..rows {
        let center = &centers[(row % K) * DIM..(row % K + 1) * DIM];
        values.extend(center.iter().map(|c| (c + draws.normal(0.0, 3.0)) as f32));
    }
    values
}

/// The points as a frame of `features` vectors in batches of 8192 rows.
fn frame(session: &Session, values: &[f32]) -> DataFrame {
    let item = Arc::new(Field::new_list_field(DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![Field::new(
        "features",
        DataType::FixedSizeList(Arc::clone(&item), DIM as i32),
        false,
    )]));
    let batches = values
        .chunks(8192 * DIM)
        .map(|chunk| {
            let list = FixedSizeListArray::try_new(
                Arc::clone(&item),
                DIM as i32,
                Arc::new(Float32Array::from(chunk.to_vec())),
                None,
            )
            .expect("vectors");
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(list)]).expect("batch")
        })
        .collect();
    session.read_batches(schema, batches).expect("frame")
}

/// Lloyd's algorithm by hand: each iteration, two threads each sum their half of the points into the
/// nearest center, the halves are merged and the centers moved, until no center moves (KMeans's rule with
/// `tol` 0) or `ITERATIONS`. Returns the last cost and the iterations run.
fn bare_lloyd(values: &[f32], initial: &[Vec<f64>]) -> (f64, usize) {
    let mut centers = initial.to_vec();
    let mut cost = 0.0;
    for iteration in 1..=ITERATIONS {
        let current = Centers::from_rows(DIM, &centers).expect("centers");
        let half = values.len() / DIM / 2 * DIM;
        let sums: Vec<ClusterSums> = std::thread::scope(|scope| {
            let k = centers.len();
            let parts = [&values[..half], &values[half..]].map(|part| {
                let current = &current;
                scope.spawn(move || {
                    let mut sums = ClusterSums::new(k, DIM);
                    let mut point = [0.0f64; DIM];
                    for row in part.chunks_exact(DIM) {
                        for (p, v) in point.iter_mut().zip(row) {
                            *p = f64::from(*v);
                        }
                        sums.add(DistanceMeasure::Euclidean, current, &point, 1.0);
                    }
                    sums
                })
            });
            parts.map(|p| p.join().expect("thread")).into_iter().collect()
        });
        let mut merged = sums[0].clone();
        merged.merge(&sums[1]).expect("merge");
        let mut converged = true;
        for (cluster, center) in centers.iter_mut().enumerate() {
            if let Some(moved) = merged.centroid(DistanceMeasure::Euclidean, cluster) {
                converged &= *center == moved;
                *center = moved;
            }
        }
        cost = merged.cost();
        if converged {
            return (cost, iteration);
        }
    }
    (cost, ITERATIONS)
}

#[tokio::main]
async fn main() {
    let rows: usize = std::env::var("HEARTH_BENCH_ROWS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1_000_000);
    let values = points(rows);
    let session = Session::builder().with_default_features().local(2);
    let df = frame(&session, &values);
    // k-means|| picks the start; tol 0 makes both run every iteration.
    let kmeans = KMeans::new().k(K).seed(5).max_iter(ITERATIONS).tol(0.0);
    let mut table = Table::new();
    table.set_titles(row![
        "round",
        "hearth fit s",
        "of which init + sizes s",
        "hearth iterations",
        "bare Lloyd s",
        "bare iterations",
        "hearth / bare per iteration",
        "cost agrees"
    ]);
    for round in 1..=3 {
        let initial = kmeans.clone().max_iter(0).fit(&df).await.expect("init");
        let started = Instant::now();
        let init_only = kmeans.clone().max_iter(0).fit(&df).await.expect("init");
        let init_seconds = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let model = kmeans.fit(&df).await.expect("fit");
        let hearth_seconds = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let (bare_cost, bare_iterations) = bare_lloyd(&values, initial.cluster_centers());
        let bare_seconds = started.elapsed().as_secs_f64();
        assert_eq!(init_only.cluster_centers(), initial.cluster_centers());
        let summary = model.summary().expect("summary");
        let per_iteration = (hearth_seconds - init_seconds) / summary.num_iter as f64;
        table.add_row(row![
            round,
            format!("{hearth_seconds:.2}"),
            format!("{init_seconds:.2}"),
            summary.num_iter,
            format!("{bare_seconds:.2}"),
            bare_iterations,
            format!("{:.2}", per_iteration / (bare_seconds / bare_iterations as f64)),
            format!("{}", ((summary.training_cost - bare_cost) / bare_cost).abs() < 1e-6)
        ]);
    }
    println!(
        "KMeans, {rows} points × {DIM} dimensions in {K} overlapping blobs, k = {K}, at most {ITERATIONS} iterations, local[2]; bare = a two-thread Lloyd loop over one f32 array from hearth's k-means|| start"
    );
    table.printstd();
    sql_against_rust(&session, &df, &kmeans).await;
}

/// The same clustering as BigQuery ML's `CREATE MODEL … model_type = 'kmeans'` — which also assembles the
/// features, computes the training rows' Davies–Bouldin index and saves the model — against the Rust fit.
async fn sql_against_rust(session: &Session, df: &DataFrame, kmeans: &KMeans) {
    let models = std::env::temp_dir().join(format!("hearth-bench-kmeans-{}", std::process::id()));
    let session = session.clone().with_models(&models);
    session.register("points", df).expect("register");
    let statement = format!(
        "CREATE OR REPLACE MODEL points_km OPTIONS (model_type = 'kmeans', num_clusters = {K}, \
         max_iterations = {ITERATIONS}, tol = 0, seed = 5, standardize_features = FALSE) AS SELECT features FROM points"
    );
    let mut table = Table::new();
    table.set_titles(row![
        "round",
        "Rust KMeans.fit s",
        "SQL CREATE MODEL s",
        "SQL / Rust",
        "SQL iterations"
    ]);
    for round in 1..=3 {
        let started = Instant::now();
        kmeans.fit(df).await.expect("fit");
        let rust_seconds = started.elapsed().as_secs_f64();
        let started = Instant::now();
        session
            .sql(&statement)
            .await
            .expect("create model")
            .collect()
            .await
            .expect("create model");
        let sql_seconds = started.elapsed().as_secs_f64();
        let info = session
            .sql("SELECT iterations FROM ML.TRAINING_INFO(MODEL points_km)")
            .await
            .expect("training info")
            .collect()
            .await
            .expect("training info");
        let iterations = info[0]
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .value(0);
        table.add_row(row![
            round,
            format!("{rust_seconds:.2}"),
            format!("{sql_seconds:.2}"),
            format!("{:.2}", sql_seconds / rust_seconds),
            iterations
        ]);
    }
    let _ = std::fs::remove_dir_all(&models);
    println!(
        "The same k-means as SQL: CREATE MODEL … model_type = 'kmeans' (assembling, fitting, the training Davies–Bouldin index, saving) against KMeans.fit"
    );
    table.printstd();
}
