//! Pipelines: Spark's fit rule, persistence as JSON, definition in a file, and the SQL functions.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::logical_expr::ident;
use hearth::prelude::*;

use crate::common::*;

async fn credit(session: &Session) -> DataFrame {
    session
        .read_csv(dataset("german_credit/credit-g.csv"), &CsvOptions::new())
        .await
        .unwrap()
}

fn credit_pipeline() -> Pipeline {
    Pipeline::new()
        .stage(
            StringIndexer::new()
                .input_cols(["purpose", "housing"])
                .output_cols(["p_idx", "h_idx"]),
        )
        .stage(
            OneHotEncoder::new()
                .input_cols(["p_idx", "h_idx"])
                .output_cols(["p_vec", "h_vec"]),
        )
        .stage(
            VectorAssembler::new()
                .input_cols(["p_vec", "h_vec", "age", "duration"])
                .output_col("raw"),
        )
        .stage(StandardScaler::new().input_col("raw").output_col("features"))
}

#[tokio::test]
async fn stages_after_the_last_estimator_are_not_fitted() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let assembler = VectorAssembler::new().input_cols(["age"]).output_col("f");
    let model = Pipeline::new()
        .stage(StringIndexer::new().input_col("purpose").output_col("p"))
        .stage(assembler.clone())
        .fit(&df)
        .await
        .unwrap();
    stage::<StringIndexerModel>(&model, 0);
    assert_eq!(stage::<VectorAssembler>(&model, 1), &assembler);

    let identity = Pipeline::new().fit(&df).await.unwrap();
    assert!(identity.stages().is_empty());
    assert_eq!(identity.transform(&df).unwrap().schema(), df.schema());
}

#[tokio::test]
async fn fit_transform_equals_fit_then_transform_with_or_without_caching() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let (model, fitted_output) = credit_pipeline().fit_transform(&df).await.unwrap();
    let uncached = credit_pipeline().cache_input(false).fit(&df).await.unwrap();
    // A memory limit of 0 bytes: the parsed input cached on local disk instead.
    let (on_disk, on_disk_output) = credit_pipeline()
        .cache_memory_limit(0)
        .fit_transform(&df)
        .await
        .unwrap();
    let direct = vectors(&model.transform(&df).unwrap(), "features").await;
    assert_eq!(vectors(&fitted_output, "features").await, direct);
    assert_eq!(vectors(&uncached.transform(&df).unwrap(), "features").await, direct);
    assert_eq!(vectors(&on_disk.transform(&df).unwrap(), "features").await, direct);
    let mut from_disk = vectors(&on_disk_output, "features").await;
    let mut expected = direct.clone();
    // Partitions read back from disk in the order they were cached, which need not be the scan's.
    from_disk.sort_by(|a, b| a.partial_cmp(b).unwrap());
    expected.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(from_disk, expected);
}

#[tokio::test]
async fn a_fitted_pipeline_round_trips_through_readable_json() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let model = credit_pipeline().fit(&df).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join("pipeline.json")).unwrap();
    assert!(
        text.contains("\"class\": \"StringIndexerModel\"") && text.contains("\"radio/tv\""),
        "{text}"
    );
    assert!(text.contains("\"format\": \"PipelineModel\"") && text.contains("\"version\": 1"));
    let loaded = PipelineModel::load(dir.path()).unwrap();
    assert_eq!(loaded, model);
    assert_eq!(
        vectors(&loaded.transform(&df).unwrap(), "features").await,
        vectors(&model.transform(&df).unwrap(), "features").await
    );
}

#[tokio::test]
async fn a_pipeline_defined_in_a_json_file_fits() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("credit.json");
    std::fs::write(
        &file,
        r#"{
  "format": "Pipeline",
  "version": 1,
  "uid": "credit",
  "stages": [
    {"class": "StringIndexer", "uid": "idx", "inputCols": ["purpose"], "outputCols": ["p"],
     "handleInvalid": "keep", "stringOrderType": "alphabetAsc"},
    {"class": "OneHotEncoder", "uid": "ohe", "inputCols": ["p"], "outputCols": ["p_vec"],
     "dropLast": false, "handleInvalid": "error"},
    {"class": "VectorAssembler", "uid": "va", "inputCols": ["p_vec", "age"], "outputCol": "raw",
     "handleInvalid": "error"},
    {"class": "StandardScaler", "uid": "ss", "inputCol": "raw", "outputCol": "features",
     "withMean": true, "withStd": true}
  ]
}"#,
    )
    .unwrap();
    let pipeline = Pipeline::load(&file).unwrap();
    assert_eq!(pipeline.stages().len(), 4);
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let model = pipeline.fit(&df).await.unwrap();
    let indexer: &StringIndexerModel = stage(&model, 0);
    assert_eq!(indexer.labels()[0][0], "business", "alphabetAsc puts business first");
    let encoder: &OneHotEncoderModel = stage(&model, 1);
    assert_eq!(
        encoder.output_widths(),
        [11],
        "10 purposes + __unknown, dropLast = false"
    );
    let widths = vectors(&model.transform(&df).unwrap(), "features").await;
    assert!(widths.iter().all(|v| v.as_ref().is_some_and(|v| v.len() == 12)));

    pipeline.save(dir.path().join("saved")).unwrap();
    assert_eq!(Pipeline::load(dir.path().join("saved")).unwrap(), pipeline);
}

#[tokio::test]
async fn fitted_transforms_are_callable_from_sql() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql(
            "SELECT ml_string_index(c, ['b', 'a'], 'keep') AS i, \
                    ml_one_hot(ml_string_index(c, ['b', 'a'], 'keep'), 3, true, 'error') AS v, \
                    ml_standard_scale(ml_vector_assemble('error', x, 2 * x), [0.0, 0.0], [2.0, 0.0], false, true) AS s \
             FROM (VALUES ('a', 1.0), ('b', 4.0), ('z', 6.0)) AS t(c, x)",
        )
        .await
        .unwrap();
    assert_eq!(doubles(&df, "i").await, [Some(1.0), Some(0.0), Some(2.0)]);
    assert_eq!(
        vectors(&df, "v").await,
        [Some(vec![0.0, 1.0]), Some(vec![1.0, 0.0]), Some(vec![0.0, 0.0])]
    );
    assert_eq!(
        vectors(&df, "s").await,
        [Some(vec![0.5, 0.0]), Some(vec![2.0, 0.0]), Some(vec![3.0, 0.0])]
    );

    let scaled = session
        .sql(
            "SELECT ml_scaled_assemble('error', [0.0, 0.0], [2.0, 0.0], false, true, x, 2 * x) AS s \
             FROM (VALUES (1.0), (4.0), (6.0)) AS t(x)",
        )
        .await
        .unwrap();
    assert_eq!(
        vectors(&scaled, "s").await,
        [Some(vec![0.5, 0.0]), Some(vec![2.0, 0.0]), Some(vec![3.0, 0.0])]
    );

    // One category with drop_last: empty vectors (Spark's size-0 vectors), which assemble to nothing.
    let empty = session
        .sql(
            "SELECT ml_one_hot(c, 1, true, 'error') AS e, \
                    ml_vector_assemble('error', x, ml_one_hot(c, 1, true, 'error')) AS v, \
                    ml_scaled_assemble('error', [0.0], [2.0], false, true, ml_one_hot(c, 1, true, 'error'), x) AS s \
             FROM (VALUES (0.0, 1.0), (0.0, 4.0)) AS t(c, x)",
        )
        .await
        .unwrap();
    assert_eq!(vectors(&empty, "e").await, [Some(vec![]), Some(vec![])]);
    assert_eq!(vectors(&empty, "v").await, [Some(vec![1.0]), Some(vec![4.0])]);
    assert_eq!(vectors(&empty, "s").await, [Some(vec![0.5]), Some(vec![2.0])]);
    let summary = session
        .sql("SELECT ml_vector_summary(ml_one_hot(c, 1, true, 'error')) AS s FROM (VALUES (0.0), (0.0)) AS t(c)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let summary = summary[0].column(0).as_struct();
    assert_eq!(
        summary.column(0).as_primitive::<Int64Type>().value(0),
        2,
        "empty vectors are counted"
    );

    let counts = session
        .sql(
            "SELECT ml_label_counts(c) AS l, ml_vector_summary(ml_vector_assemble('error', x)) AS s, \
                    ml_assembled_summary('error', x) AS a \
              FROM (VALUES ('a', 1.0), ('b', 2.0), ('a', 3.0)) AS t(c, x)",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(counts[0].num_rows(), 1);
    // Both summaries: count 3, mean 2, sample std 1.
    for column in [1, 2] {
        let summary = counts[0].column(column).as_struct();
        assert_eq!(summary.column(0).as_primitive::<Int64Type>().value(0), 3);
        for (field, want) in [(1, 2.0), (2, 1.0)] {
            let list = summary.column(field).as_list::<i32>().value(0);
            assert_eq!(list.as_primitive::<Float64Type>().values().to_vec(), [want]);
        }
    }
}

#[tokio::test]
async fn string_indexer_output_carries_its_labels_as_metadata() {
    let session = Session::builder().with_default_features().local(1);
    let df = session
        .sql("SELECT * FROM (VALUES ('a'), ('b'), ('b')) AS t(c)")
        .await
        .unwrap();
    let model = StringIndexer::new()
        .input_col("c")
        .output_col("i")
        .handle_invalid(HandleInvalid::Keep)
        .fit(&df)
        .await
        .unwrap();
    let out = model.transform(&df).unwrap().select(vec![ident("i")]).unwrap();
    let field = out.schema().field_with_unqualified_name("i").unwrap();
    let attribute = hearth::exec::attribute::NominalAttribute::from_field(field).unwrap();
    assert_eq!(attribute.values(), ["b", "a", "__unknown"]);
}

#[tokio::test]
async fn a_scaler_after_an_assembler_fits_and_scales_from_the_columns_in_one_pass() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let assembled = VectorAssembler::new()
        .input_cols(["age", "duration", "credit_amount", "installment_commitment"])
        .output_col("raw")
        .transform(&df)
        .unwrap();
    let materialized = assembled.clone().cache().await.unwrap();
    let scaler = StandardScaler::new()
        .input_col("raw")
        .output_col("features")
        .with_mean(true);
    // Fitted from the assembler's columns (no vectors built) and from stored vectors: the same state.
    let fused = scaler.fit(&assembled).await.unwrap();
    let stored = scaler.fit(&materialized).await.unwrap();
    for (got, want) in fused
        .mean()
        .iter()
        .chain(fused.std())
        .zip(stored.mean().iter().chain(stored.std()))
    {
        assert!(close(*got, *want, 1e-6), "fused {got}, from stored vectors {want}");
    }
    // Transformed: assembled and scaled in one pass when only the scaled column is read, as two passes agree.
    let one_pass = fused
        .transform(&assembled)
        .unwrap()
        .select(vec![ident("features")])
        .unwrap();
    let plan = one_pass
        .clone()
        .into_optimized_plan()
        .unwrap()
        .display_indent()
        .to_string();
    assert!(plan.contains("ml_scaled_assemble("), "{plan}");
    let two_passes = vectors(&fused.transform(&materialized).unwrap(), "features").await;
    let one_pass = vectors(&one_pass, "features").await;
    assert_eq!(one_pass.len(), 1000);
    for (row, (a, b)) in one_pass.iter().zip(&two_passes).enumerate() {
        for (x, y) in a.as_ref().unwrap().iter().zip(b.as_ref().unwrap()) {
            assert!(close(f64::from(*x), f64::from(*y), 1e-6), "row {row}: {x} vs {y}");
        }
    }
}
