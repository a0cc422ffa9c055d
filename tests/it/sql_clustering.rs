//! k-means in SQL, as BigQuery ML spells it: `CREATE MODEL … OPTIONS (model_type = 'kmeans', …)`,
//! `ML.PREDICT`'s `centroid_id` and distances, `ML.EVALUATE`'s Davies–Bouldin index and mean squared
//! distance (checked against a hand computation from the model's centers), `ML.CENTROIDS` in the columns'
//! own units, `ML.TRAINING_INFO`, and tuning `num_clusters` by the Davies–Bouldin index with `ML.TRIAL_INFO`.
//! Strings clustered by category and the options k-means does not take are in `tests/slt/kmeans.slt`.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
use hearth::prelude::*;
use hearth::sql::ModelCatalog;

use crate::sql::run_script;

/// Three blobs of 30 points around (0, 0), (10, 0) and (0, 10), with a string column naming the blob's side.
async fn blobs_session(dir: &std::path::Path) -> Session {
    let mut text = String::from("x,y,side\n");
    for i in 0..90 {
        let (cx, cy, side) = [(0.0, 0.0, "low"), (10.0, 0.0, "right"), (0.0, 10.0, "up")][i % 3];
        text += &format!("{},{},{side}\n", cx + (i % 7) as f64 * 0.1, cy + (i % 5) as f64 * 0.1);
    }
    let path = dir.join("blobs.csv");
    std::fs::write(&path, text).unwrap();
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(dir.join("models"));
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE blobs STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
            path.display()
        ))
        .await
        .unwrap();
    session
}

fn one(batches: &[RecordBatch]) -> RecordBatch {
    concat_batches(&batches[0].schema(), batches).unwrap()
}

fn float(batch: &RecordBatch, name: &str, row: usize) -> f64 {
    batch
        .column_by_name(name)
        .unwrap()
        .as_primitive::<Float64Type>()
        .value(row)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kmeans_in_sql_predicts_evaluates_and_shows_its_centroids() {
    let dir = tempfile::tempdir().unwrap();
    let session = blobs_session(dir.path()).await;
    let created = run_script(
        &session,
        "CREATE MODEL blobs_km OPTIONS (model_type = 'kmeans', num_clusters = 3, seed = 1) AS SELECT x, y FROM blobs",
    )
    .await
    .unwrap();
    assert_eq!(
        created[0]
            .column_by_name("training_rows")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .value(0),
        90
    );

    // Centroids in the columns' own units: one near each blob's corner.
    let centroids = one(&run_script(
        &session,
        "SELECT * FROM ML.CENTROIDS(MODEL blobs_km) ORDER BY centroid_id, feature",
    )
    .await
    .unwrap());
    assert_eq!(centroids.num_rows(), 6, "3 centroids × 2 features");
    let mut corners: Vec<(f64, f64)> = (0..3)
        .map(|c| {
            (
                float(&centroids, "numerical_value", 2 * c),
                float(&centroids, "numerical_value", 2 * c + 1),
            )
        })
        .collect();
    corners.sort_by(|a, b| (a.0 + 2.0 * a.1).total_cmp(&(b.0 + 2.0 * b.1)));
    for ((x, y), (cx, cy)) in corners.iter().zip([(0.0, 0.0), (10.0, 0.0), (0.0, 10.0)]) {
        assert!(
            (x - cx - 0.3).abs() < 0.2 && (y - cy - 0.2).abs() < 0.2,
            "centroid ({x}, {y}) not near ({cx}, {cy})"
        );
    }

    // Predictions: a blob's points share a centroid, which is the nearest of the distances listed.
    let predicted = one(&run_script(
        &session,
        "SELECT x, y, centroid_id, nearest_centroids_distance FROM ML.PREDICT(MODEL blobs_km, (SELECT x, y FROM blobs))",
    )
    .await
    .unwrap());
    assert_eq!(predicted.num_rows(), 90);
    let ids = predicted
        .column_by_name("centroid_id")
        .unwrap()
        .as_primitive::<Int64Type>();
    let distances = predicted
        .column_by_name("nearest_centroids_distance")
        .unwrap()
        .as_list::<i32>();
    for row in 0..90 {
        let (x, y) = (float(&predicted, "x", row), float(&predicted, "y", row));
        let blob = if x > 5.0 {
            1
        } else if y > 5.0 {
            2
        } else {
            0
        };
        let same_blob = (0..90).find(|&other| {
            let (ox, oy) = (float(&predicted, "x", other), float(&predicted, "y", other));
            (if ox > 5.0 {
                1
            } else if oy > 5.0 {
                2
            } else {
                0
            }) == blob
        });
        assert_eq!(ids.value(row), ids.value(same_blob.unwrap()));
        let entries = distances.value(row);
        let entries = entries.as_struct();
        assert_eq!(entries.len(), 3);
        let listed = entries
            .column_by_name("distance")
            .unwrap()
            .as_primitive::<Float64Type>();
        let nearest = (0..3)
            .min_by(|&a, &b| listed.value(a).total_cmp(&listed.value(b)))
            .unwrap();
        let nearest_id = entries
            .column_by_name("centroid_id")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(nearest);
        assert_eq!(nearest_id, ids.value(row));
    }

    // ML.EVALUATE against the same figures computed here from the standardized rows and the model's centers.
    let model = ModelCatalog::new(dir.path().join("models")).get("blobs_km").unwrap();
    let kmeans = model
        .pipeline
        .stages()
        .last()
        .unwrap()
        .downcast_ref::<KMeansModel>()
        .unwrap()
        .clone();
    let centers = kmeans.cluster_centers().to_vec();
    let standardized = one(&run_script(
        &session,
        "SELECT * FROM ML.TRANSFORM(MODEL blobs_km, (SELECT x, y FROM blobs))",
    )
    .await
    .unwrap());
    let vectors = standardized.column(0).as_fixed_size_list();
    let (mut spread, mut count, mut squared) = (vec![0.0; 3], vec![0.0; 3], 0.0);
    let distance = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>();
    for row in 0..vectors.len() {
        let slots = datafusion::arrow::compute::cast(&vectors.value(row), &DataType::Float64).unwrap();
        let point: Vec<f64> = slots.as_primitive::<Float64Type>().values().to_vec();
        let cluster = kmeans.predict(&point);
        let d = distance(&point, &centers[cluster]);
        squared += d / 90.0;
        spread[cluster] += d.sqrt();
        count[cluster] += 1.0;
    }
    let spread: Vec<f64> = spread.iter().zip(&count).map(|(s, n)| s / n).collect();
    let davies_bouldin = (0..3)
        .map(|i| {
            (0..3)
                .filter(|&j| j != i)
                .map(|j| (spread[i] + spread[j]) / distance(&centers[i], &centers[j]).sqrt())
                .fold(f64::MIN, f64::max)
        })
        .sum::<f64>()
        / 3.0;
    for sql in [
        "SELECT * FROM ML.EVALUATE(MODEL blobs_km)",
        "SELECT * FROM ML.EVALUATE(MODEL blobs_km, (SELECT x, y FROM blobs))",
    ] {
        let evaluated = one(&run_script(&session, sql).await.unwrap());
        let (index, mean) = (
            float(&evaluated, "davies_bouldin_index", 0),
            float(&evaluated, "mean_squared_distance", 0),
        );
        assert!(
            (index - davies_bouldin).abs() < 1e-9,
            "{sql}: {index} vs {davies_bouldin}"
        );
        assert!((mean - squared).abs() < 1e-9, "{sql}: {mean} vs {squared}");
    }

    let info = one(&run_script(&session, "SELECT * FROM ML.TRAINING_INFO(MODEL blobs_km)")
        .await
        .unwrap());
    assert!(
        info.column_by_name("iterations")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0)
            >= 1
    );
    let sizes = info.column_by_name("cluster_sizes").unwrap().as_list::<i32>().value(0);
    assert_eq!(sizes.as_primitive::<UInt64Type>().values().iter().sum::<u64>(), 90);
    assert_eq!(sizes.as_primitive::<UInt64Type>().values().to_vec(), [30, 30, 30]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_segments_example_puts_every_customer_in_one_of_four_segments() {
    let models = tempfile::tempdir().unwrap();
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(models.path());
    let script = std::fs::read_to_string("examples/credit_segments.sql").unwrap();
    let segments = one(&run_script(&session, &script).await.unwrap());
    assert_eq!(segments.num_rows(), 4);
    let customers = segments
        .column_by_name("customers")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(customers.values().iter().sum::<i64>(), 1000);
    for row in 0..4 {
        assert!((0.0..=1.0).contains(&float(&segments, "bad_share", row)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tuning_num_clusters_keeps_the_lowest_davies_bouldin_index() {
    let dir = tempfile::tempdir().unwrap();
    let session = blobs_session(dir.path()).await;
    let created = one(&run_script(
        &session,
        "CREATE MODEL tuned OPTIONS (model_type = 'kmeans', seed = 1, num_trials = 4, max_parallel_trials = 2,
           hparam_tuning_algorithm = 'grid_search', num_clusters = HPARAM_CANDIDATES([2, 3, 4, 5]))
         AS SELECT x, y FROM blobs",
    )
    .await
    .unwrap());
    assert_eq!(
        created
            .column_by_name("training_rows")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .value(0),
        90
    );

    let trials = one(&run_script(
        &session,
        "SELECT trial_id, hyperparameters.num_clusters AS k,
                hparam_tuning_evaluation_metrics.davies_bouldin_index AS dbi, training_loss, eval_loss, is_optimal
         FROM ML.TRIAL_INFO(MODEL tuned) ORDER BY trial_id",
    )
    .await
    .unwrap());
    assert_eq!(trials.num_rows(), 4);
    let ks = trials.column_by_name("k").unwrap().as_primitive::<Int64Type>();
    assert_eq!(
        ks.values().to_vec(),
        [2, 3, 4, 5],
        "the grid in order, as whole numbers"
    );
    let dbi: Vec<f64> = (0..4).map(|row| float(&trials, "dbi", row)).collect();
    let optimal = trials.column_by_name("is_optimal").unwrap().as_boolean();
    let kept: Vec<usize> = (0..4).filter(|&row| optimal.value(row)).collect();
    assert_eq!(kept, [1], "three blobs: k = 3 kept; Davies–Bouldin by k: {dbi:?}");
    assert!(
        dbi.iter().enumerate().all(|(row, d)| row == 1 || *d > dbi[1]),
        "{dbi:?}"
    );
    assert!(
        trials.column_by_name("eval_loss").unwrap().is_null(0),
        "no held-out rows"
    );
    assert!(float(&trials, "training_loss", 1) > 0.0);

    // The kept model has three centroids, and its training figures are the kept trial's.
    let centroids = one(&run_script(
        &session,
        "SELECT count(DISTINCT centroid_id) AS n FROM ML.CENTROIDS(MODEL tuned)",
    )
    .await
    .unwrap());
    assert_eq!(centroids.column(0).as_primitive::<Int64Type>().value(0), 3);
    let evaluated = one(&run_script(&session, "SELECT * FROM ML.EVALUATE(MODEL tuned)")
        .await
        .unwrap());
    assert!((float(&evaluated, "davies_bouldin_index", 0) - dbi[1]).abs() < 1e-12);
    let again = one(&run_script(
        &session,
        "SELECT * FROM ML.EVALUATE(MODEL tuned, (SELECT x, y FROM blobs))",
    )
    .await
    .unwrap());
    assert!((float(&again, "davies_bouldin_index", 0) - dbi[1]).abs() < 1e-9);
}
