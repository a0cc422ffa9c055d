//! KMeans and the clustering metrics against Spark: every case of `tests/fixtures/spark/clustering.json`
//! (made by `clustering.py` beside it with PySpark 4.0.1), fitted and scored as aggregate queries over two
//! partitions; the same model on `standalone[2]` (Ballista) as on `local[N]`; saving, loading and errors.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use hearth::prelude::*;
use hearth::preprocessing::clustering::KMeansSummary;
use serde_json::Value;

use crate::common::*;

fn fixture() -> Value {
    spark_fixture("clustering.json")
}

/// A frame of `features` (a vector), a second column named `second` and `weight`, from fixture rows
/// `[point, second, weight]`.
fn points(session: &Session, rows: &Value, second: &str) -> DataFrame {
    let rows = rows.as_array().unwrap();
    let dim = rows[0][0].as_array().unwrap().len();
    let values: Vec<f32> = rows
        .iter()
        .flat_map(|r| r[0].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32))
        .collect();
    let column = |i: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| r[i].as_f64().unwrap()),
        ))
    };
    let item = Arc::new(Field::new_list_field(DataType::Float32, true));
    let features = FixedSizeListArray::try_new(item, dim as i32, Arc::new(Float32Array::from(values)), None).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("features", features.data_type().clone(), true),
        Field::new(second, DataType::Float64, false),
        Field::new("weight", DataType::Float64, false),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(features), column(1), column(2)]).unwrap();
    session.read_batches(schema, vec![batch]).unwrap()
}

/// Centers in lexicographic order, with the sizes in the same order.
fn sorted(model: &KMeansModel) -> (Vec<Vec<f64>>, Vec<u64>) {
    let summary = model.summary().unwrap();
    let mut pairs: Vec<(Vec<f64>, u64)> = model
        .cluster_centers()
        .iter()
        .cloned()
        .zip(summary.cluster_sizes.iter().copied())
        .collect();
    pairs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    pairs.into_iter().unzip()
}

fn kmeans_of(case: &Value) -> KMeans {
    let kmeans = KMeans::new()
        .k(case["k"].as_u64().unwrap() as usize)
        .seed(7)
        .max_iter(50)
        .distance_measure(case["measure"].as_str().unwrap());
    match case["weighted"].as_bool().unwrap() {
        true => kmeans.weight_col("weight"),
        false => kmeans,
    }
}

#[tokio::test]
async fn kmeans_matches_spark_where_the_optimum_is_unique() {
    let fixture = fixture();
    let session = Session::builder().with_default_features().local(2);
    for name in ["euclidean", "euclidean_weighted", "cosine", "cosine_weighted"] {
        let spark = fixture_case(&fixture, name);
        let df = points(&session, &spark["rows"], "label");
        let model = kmeans_of(spark).fit(&df).await.unwrap();
        let (centers, sizes) = sorted(&model);
        let want: Vec<Vec<f64>> = spark["centers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| vector(c).unwrap())
            .collect();
        for (got, want) in centers.iter().zip(&want) {
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-6, "{name}: center {got:?}, Spark {want:?}");
            }
        }
        let want_sizes: Vec<u64> = spark["cluster_sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap())
            .collect();
        assert_eq!(sizes, want_sizes, "{name}: cluster sizes");
        let cost = model.summary().unwrap().training_cost;
        assert!(
            close(cost, number(&spark["training_cost"]), 1e-6),
            "{name}: training cost {cost}, Spark {}",
            spark["training_cost"]
        );
        // Every row lands in the cluster of its blob.
        let scored = model.transform(&df).unwrap();
        let accuracy = ClusteringEvaluator::new()
            .metric_name("clusterAccuracy")
            .evaluate(&scored)
            .await
            .unwrap();
        assert_eq!(accuracy, 1.0, "{name}");
    }
}

#[tokio::test]
async fn silhouette_matches_spark() {
    let fixture = fixture();
    let session = Session::builder().with_default_features().local(2);
    for (name, measure) in [
        ("silhouette_euclidean", "squaredEuclidean"),
        ("silhouette_cosine", "cosine"),
    ] {
        let spark = fixture_case(&fixture, name);
        let df = points(&session, &spark["rows"], "prediction");
        for weighted in [false, true] {
            let mut evaluator = ClusteringEvaluator::new().distance_measure(measure);
            if weighted {
                evaluator = evaluator.weight_col("weight");
            }
            let got = evaluator.evaluate(&df).await.unwrap();
            let want = number(&spark["silhouette"][if weighted { "weighted" } else { "unweighted" }]);
            assert!(
                close(got, want, 1e-9),
                "{name} weighted={weighted}: hearth {got}, Spark {want}"
            );
        }
    }
}

/// The fixture rows as a CSV file (`f0…`, `label`, `weight`): what every master can read.
fn write_csv(rows: &Value, path: &std::path::Path) {
    let rows = rows.as_array().unwrap();
    let dim = rows[0][0].as_array().unwrap().len();
    let mut text = (0..dim).map(|i| format!("f{i},")).collect::<String>() + "label,weight\n";
    for row in rows {
        for x in row[0].as_array().unwrap() {
            text += &format!("{},", x.as_f64().unwrap());
        }
        text += &format!("{},{}\n", row[1].as_f64().unwrap(), row[2].as_f64().unwrap());
    }
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_gives_the_same_model_on_any_partitioning_and_on_ballista() {
    let fixture = fixture();
    let spark = fixture_case(&fixture, "euclidean_weighted");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("blobs.csv");
    write_csv(&spark["rows"], &csv);
    let fit = |session: Session| {
        let csv = csv.clone();
        async move {
            let df = session.read_csv(&csv, &CsvOptions::new()).await.unwrap();
            let df = VectorAssembler::new()
                .input_cols(["f0", "f1", "f2", "f3"])
                .output_col("features")
                .transform(&df)
                .unwrap();
            for mode in ["k-means||", "random"] {
                let model = kmeans_of(spark).init_mode(mode).max_iter(3).fit(&df).await.unwrap();
                let summary: &KMeansSummary = model.summary().unwrap();
                assert!(
                    (1..=3).contains(&summary.num_iter),
                    "{mode}: at most maxIter iterations"
                );
            }
            let model = kmeans_of(spark).max_iter(2).fit(&df).await.unwrap();
            (model.cluster_centers().to_vec(), model.summary().unwrap().clone())
        }
    };
    // The centers agree to the last bit; the cost, a sum of products, may differ in its last bits with the
    // order partitions are merged in.
    let same =
        |what: &str, (centers, summary): (Vec<Vec<f64>>, KMeansSummary), one: &(Vec<Vec<f64>>, KMeansSummary)| {
            for (a, b) in centers.iter().flatten().zip(one.0.iter().flatten()) {
                assert!(close(*a, *b, 1e-12), "{what}: {centers:?} vs {:?}", one.0);
            }
            assert_eq!(
                (&summary.cluster_sizes, summary.num_iter),
                (&one.1.cluster_sizes, one.1.num_iter),
                "{what}"
            );
            assert!(
                close(summary.training_cost, one.1.training_cost, 1e-12),
                "{what}: {summary:?} vs {:?}",
                one.1
            );
        };
    let one = fit(Session::builder().with_default_features().local(1)).await;
    same(
        "local[3] vs local[1]",
        fit(Session::builder().with_default_features().local(3)).await,
        &one,
    );
    let standalone = Session::builder()
        .with_default_features()
        .connect("standalone[2]")
        .await
        .unwrap();
    same("standalone[2] vs local[1]", fit(standalone).await, &one);
}

#[tokio::test]
async fn a_kmeans_model_saves_loads_and_refuses_a_broken_file() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT * FROM (VALUES (0.0, 0.0), (0.5, 0.0), (9.0, 9.0), (9.0, 9.5), (0.0, 0.5)) AS t(x, y)")
        .await
        .unwrap();
    let pipeline = Pipeline::new()
        .stage(VectorAssembler::new().input_cols(["x", "y"]).output_col("features"))
        .stage(KMeans::new().k(2).prediction_col("cluster"));
    let model = pipeline.fit(&df).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    let loaded = PipelineModel::load(dir.path()).unwrap();
    let clusters = |m: PipelineModel| {
        let df = df.clone();
        async move { doubles(&m.transform(&df).unwrap(), "cluster").await }
    };
    let expected = clusters(model.clone()).await;
    assert_eq!(clusters(loaded.clone()).await, expected);
    let kmeans: &KMeansModel = stage(&loaded, 1);
    assert_eq!(kmeans.summary(), stage::<KMeansModel>(&model, 1).summary());
    assert_eq!(expected[0], expected[1]);
    assert_ne!(expected[0], expected[2]);

    let file = dir.path().join("pipeline.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let broken = text.replacen("\"clusterCenters\": [", "\"clusterCenters\": [[1.0, 2.0, 3.0],", 1);
    std::fs::write(&file, broken).unwrap();
    let error = PipelineModel::load(dir.path()).unwrap_err().to_string();
    assert!(
        error.contains("pipeline.json") && error.contains("clusterCenters") && error.contains("same width"),
        "{error}"
    );
}

#[tokio::test]
async fn bad_parameters_and_data_are_named() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT * FROM (VALUES (0.0, 0.0), (0.0, 0.0), (1.0, 1.0)) AS t(x, y)")
        .await
        .unwrap();
    let df = VectorAssembler::new()
        .input_cols(["x", "y"])
        .output_col("features")
        .transform(&df)
        .unwrap();
    let error = |kmeans: KMeans| {
        let df = df.clone();
        async move { kmeans.fit(&df).await.unwrap_err().to_string() }
    };
    let message = error(KMeans::new().k(1)).await;
    assert!(
        message.contains("parameter k") && message.contains("greater than 1"),
        "{message}"
    );
    let message = error(KMeans::new().init_mode("k-means++")).await;
    assert!(
        message.contains("initMode") && message.contains("k-means++"),
        "{message}"
    );
    let message = error(KMeans::new().features_col("z")).await;
    assert!(
        message.contains("\"z\"") && message.contains("no such column"),
        "{message}"
    );
    let message = error(KMeans::new().features_col("x")).await;
    assert!(
        message.contains("\"x\"") && message.contains("must be a vector"),
        "{message}"
    );
    let message = error(KMeans::new().distance_measure("cosine")).await;
    assert!(
        message.contains("\"features\"") && message.contains("zero vector"),
        "{message}"
    );
    let message = error(KMeans::new().weight_col("w")).await;
    assert!(message.contains("\"w\""), "{message}");
    let empty = df.clone().filter(datafusion::prelude::lit(false)).unwrap();
    let message = KMeans::new().fit(&empty).await.unwrap_err().to_string();
    assert!(message.contains("empty input"), "{message}");
    // Fewer distinct points than k: fewer centers, as Spark.
    let model = KMeans::new().k(3).fit(&df).await.unwrap();
    assert_eq!(model.cluster_centers().len(), 2);
    let one_cluster = model
        .transform(&df)
        .unwrap()
        .filter(datafusion::prelude::col("prediction").eq(datafusion::prelude::lit(0)))
        .unwrap();
    let message = ClusteringEvaluator::new()
        .evaluate(&one_cluster)
        .await
        .unwrap_err()
        .to_string();
    assert!(message.contains("more than one cluster"), "{message}");
}
