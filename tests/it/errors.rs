//! Bad input never panics: each mistake gives an error naming what was wrong and where.

use std::io::Write;

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{ident, lit};
use hearth::exec::error::Blame;
use hearth::exec::read::schema_of;
use hearth::prelude::*;

use crate::common::*;

async fn credit(session: &Session) -> DataFrame {
    session
        .read_csv(dataset("german_credit/credit-g.csv"), &CsvOptions::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_missing_column_is_named_with_the_columns_there_are() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let error = StringIndexer::new()
        .input_col("purpos")
        .output_col("i")
        .fit(&df)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("column \"purpos\": no such column (did you mean \"purpose\"?)"),
        "{error}"
    );
    let error = VectorAssembler::new()
        .input_cols(["age", "agee"])
        .output_col("f")
        .transform(&df)
        .unwrap_err();
    assert!(error.to_string().contains("column \"agee\""), "{error}");
}

/// A pipeline's error says which of its stages failed, counting from 1, and who is to blame; the stage's own
/// error stays underneath, to match on.
#[tokio::test]
async fn a_pipelines_error_names_the_stage_of_how_many_and_the_blame() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let pipeline = Pipeline::new()
        .stage(StringIndexer::new().input_col("purpose").output_col("purpose_index"))
        .stage(
            VectorAssembler::new()
                .input_cols(["age", "duration"])
                .output_col("features"),
        )
        .stage(StandardScaler::new().input_col("feature").output_col("scaled"));
    let error = pipeline.fit(&df).await.unwrap_err();
    let text = error.to_string();
    assert!(text.starts_with("stage 3 of 3 (StandardScaler): "), "{text}");
    assert!(
        text.contains("column \"feature\": no such column (did you mean \"features\"?)"),
        "{text}"
    );
    assert_eq!(error.blame(), Blame::Plan);
    assert!(matches!(error.root(), HearthError::Schema { .. }), "{error:?}");
}

#[tokio::test]
async fn a_wrong_type_is_named_with_the_column() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await;
    let error = VectorAssembler::new()
        .input_cols(["age", "purpose"])
        .output_col("f")
        .transform(&df)
        .unwrap_err();
    assert!(
        error.to_string().contains("column \"purpose\": data type Utf8"),
        "{error}"
    );
    let error = StandardScaler::new()
        .input_col("age")
        .output_col("s")
        .fit(&df)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("column \"age\": must be a vector column"),
        "{error}"
    );
    let error = OneHotEncoder::new()
        .input_col("purpose")
        .output_col("v")
        .fit(&df)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("column \"purpose\": has type Utf8"),
        "{error}"
    );
    let assembled = VectorAssembler::new()
        .input_cols(["age"])
        .output_col("f")
        .transform(&df)
        .unwrap();
    let error = StringIndexer::new()
        .input_col("f")
        .output_col("i")
        .fit(&assembled)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("column \"f\": has type FixedSizeList"),
        "{error}"
    );
}

#[tokio::test]
async fn an_existing_output_column_is_refused() {
    let session = Session::builder().with_default_features().local(1);
    let df = credit(&session).await;
    let error = VectorAssembler::new()
        .input_cols(["age"])
        .output_col("duration")
        .transform(&df)
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("column \"duration\": output column already exists"),
        "{error}"
    );
}

#[tokio::test]
async fn null_and_nan_under_error_name_the_column_and_row() {
    let session = Session::builder().with_default_features().local(1);
    let columns = serde_json::json!([
        {"name": "x", "type": "double", "values": [1.0, "NaN", 3.0]},
        {"name": "c", "type": "string", "values": ["a", "b", null]},
    ]);
    let df = frame(&session, &columns);
    let nan = VectorAssembler::new()
        .input_cols(["x"])
        .output_col("f")
        .transform(&df)
        .unwrap();
    let error = query_error(nan.clone()).await;
    assert!(
        error.contains("NaN in column \"x\" (row 1 of a 3-row batch)"),
        "{error}"
    );
    // A scaler fitted or applied right after the assembler reads the columns itself, and says the same.
    let scaler = StandardScaler::new().input_col("f").output_col("scaled");
    let error = scaler.fit(&nan).await.unwrap_err().to_string();
    assert!(
        error.contains("NaN in column \"x\" (row 1 of a 3-row batch)"),
        "{error}"
    );
    let valid = VectorAssembler::new()
        .input_cols(["x"])
        .output_col("f")
        .transform(&df.clone().filter(ident("x").eq(lit(1.0))).unwrap())
        .unwrap();
    let scaled = scaler.fit(&valid).await.unwrap().transform(&nan).unwrap();
    let error = query_error(scaled.select(vec![ident("scaled")]).unwrap()).await;
    assert!(
        error.contains("NaN in column \"x\" (row 1 of a 3-row batch)"),
        "{error}"
    );
    let model = StringIndexer::new()
        .input_col("c")
        .output_col("i")
        .fit(&df)
        .await
        .unwrap();
    let error = query_error(model.transform(&df).unwrap()).await;
    assert!(
        error.contains("null in column \"c\" (row 2 of a 3-row batch)"),
        "{error}"
    );
}

/// A CSV file of `rows` rows after its header, 35 columns, the row on `short_line` (of the file) one field short.
fn ragged_csv(path: &std::path::Path, rows: usize, short_line: usize) {
    let mut text = (0..35).map(|c| format!("c{c}")).collect::<Vec<_>>().join(",") + "\n";
    for line in 2..rows + 2 {
        let fields = if line == short_line { 34 } else { 35 };
        let row: Vec<String> = (0..fields).map(|c| format!("{}.{c}", line % 97)).collect();
        text += &(row.join(",") + "\n");
    }
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn a_malformed_csv_row_names_the_file_and_its_line_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, "a,b\n1,2\n3,4\n5,6,7\n").unwrap();
    let session = Session::builder().with_default_features().local(1);
    let df = session.read_csv(&path, &CsvOptions::new()).await;
    let error = match df {
        Ok(df) => query_error(df).await,
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains("bad.csv: line 4: 3 fields where 2 were expected"),
        "{error}"
    );

    let typed = schema_of(&[("a", DataType::Int64), ("b", DataType::Int64)]);
    std::fs::write(&path, "a,b\n1,2\nx,4\n").unwrap();
    let df = session.read_csv(&path, &CsvOptions::new().schema(typed)).await.unwrap();
    let error = query_error(df).await;
    assert!(
        error.contains("bad.csv: line 3: value \"x\" in column 1 does not parse as Int64"),
        "{error}"
    );

    // Found while inferring the types (the first 1,000 rows), and while reading a file split between two
    // partitions (4 MB): the reader counts from where its chunk or range began, the message from the file's top.
    let session = Session::builder().with_default_features().local(2);
    ragged_csv(&path, 200, 51);
    let error = session
        .read_csv(&path, &CsvOptions::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("bad.csv: line 51: 34 fields where 35 were expected"),
        "{error}"
    );
    // Through an SQL external table, whose types DataFusion's own reader infers.
    let created = session
        .sql(&format!(
            "CREATE EXTERNAL TABLE ragged_head STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
            path.display()
        ))
        .await;
    let error = match created {
        Err(e) => e.to_string(),
        Ok(_) => query_error(session.sql("SELECT count(*) FROM ragged_head").await.unwrap()).await,
    };
    assert!(
        error.contains("bad.csv: line 51: 34 fields where 35 were expected"),
        "{error}"
    );
    ragged_csv(&path, 20_000, 15_001);
    let df = session.read_csv(&path, &CsvOptions::new()).await.unwrap();
    let error = query_error(df.clone()).await;
    assert!(
        error.contains("bad.csv: line 15001: 34 fields where 35 were expected"),
        "{error}"
    );
    // Through SQL's external tables too.
    let location = path.display();
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE ragged STORED AS CSV LOCATION '{location}' OPTIONS ('format.has_header' 'true')"
        ))
        .await
        .unwrap();
    let error = query_error(session.sql("SELECT count(*) FROM ragged").await.unwrap()).await;
    assert!(
        error.contains("bad.csv: line 15001: 34 fields where 35 were expected"),
        "{error}"
    );
}

#[tokio::test]
async fn an_empty_csv_file_is_named_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.csv");
    std::fs::write(&path, "").unwrap();
    let session = Session::builder().with_default_features().local(2);
    let error = session
        .read_csv(&path, &CsvOptions::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("empty.csv: the file is empty"), "{error}");
    let error = session
        .sql(&format!(
            "CREATE EXTERNAL TABLE nothing STORED AS CSV LOCATION '{}'",
            path.display()
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("empty.csv is empty"), "{error}");
    // With the columns given, an empty file is an empty table.
    let typed = schema_of(&[("a", DataType::Int64)]);
    let df = session.read_csv(&path, &CsvOptions::new().schema(typed)).await.unwrap();
    assert_eq!(df.count().await.unwrap(), 0);
}

#[tokio::test]
async fn an_empty_input_cannot_be_fitted() {
    let session = Session::builder().with_default_features().local(2);
    let df = credit(&session).await.filter(lit(false)).unwrap();
    let assembled = VectorAssembler::new()
        .input_cols(["age"])
        .output_col("f")
        .transform(&df)
        .unwrap();
    let error = StandardScaler::new()
        .input_col("f")
        .output_col("s")
        .fit(&assembled)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("column \"f\": cannot fit on an empty input"),
        "{error}"
    );
    let error = OneHotEncoder::new()
        .input_col("age")
        .output_col("v")
        .fit(&df)
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("column \"age\": cannot fit on an empty input"),
        "{error}"
    );
    let error = StringIndexer::new()
        .input_col("purpose")
        .output_col("i")
        .fit(&df)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("column \"purpose\": no labels"), "{error}");
}

#[tokio::test]
async fn bad_parameters_and_files_are_named() {
    let error = OneHotEncoder::new()
        .input_col("x")
        .handle_invalid(HandleInvalid::Skip)
        .fit(
            &Session::builder()
                .with_default_features()
                .local(1)
                .sql("SELECT 1.0 AS x")
                .await
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("parameter handleInvalid"), "{error}");
    let error = StringIndexer::new()
        .input_cols(["a", "b"])
        .output_cols(["i"])
        .fit(
            &Session::builder()
                .with_default_features()
                .local(1)
                .sql("SELECT 'x' AS a, 'y' AS b")
                .await
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("2 input columns but 1 output columns"),
        "{error}"
    );
    let error = Session::builder()
        .with_default_features()
        .local(1)
        .read_csv("no/such/file.csv", &CsvOptions::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no/such/file.csv: no such file"), "{error}");
    let error = Session::builder()
        .with_default_features()
        .build("local[x]")
        .unwrap_err();
    assert!(error.to_string().contains("master \"local[x]\""), "{error}");
    let error = Session::builder().with_default_features().build("yarn").unwrap_err();
    assert!(error.to_string().contains("unknown master"), "{error}");
}

#[tokio::test]
async fn a_broken_pipeline_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pipeline.json");
    std::fs::write(&file, "{ not json").unwrap();
    let error = Pipeline::load(&file).unwrap_err().to_string();
    assert!(error.contains("pipeline.json: not JSON"), "{error}");
    std::fs::write(
        &file,
        r#"{"format": "Pipeline", "version": 99, "uid": "p", "stages": []}"#,
    )
    .unwrap();
    let error = Pipeline::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("format version 99"), "{error}");
    std::fs::write(
        &file,
        r#"{"format": "Pipeline", "version": 1, "uid": "p", "stages": [{"class": "Nope"}]}"#,
    )
    .unwrap();
    let error = Pipeline::load(&file).unwrap_err().to_string();
    assert!(
        error.contains("pipeline.json: stage 0: unknown class \"Nope\"") && error.contains("MlpClassifier"),
        "{error}"
    );
    std::fs::write(
        &file,
        r#"{"format": "PipelineModel", "version": 1, "uid": "p", "stages": [{"class": "StandardScaler"}]}"#,
    )
    .unwrap();
    let error = PipelineModel::load(&file).unwrap_err().to_string();
    assert!(error.contains("stage 0 (StandardScaler) is an estimator"), "{error}");
    std::fs::write(
        &file,
        r#"{"format": "PipelineModel", "version": 1, "uid": "p", "stages": [{"class": "ClassificationModel", "uid": "m"}]}"#,
    )
    .unwrap();
    let error = PipelineModel::load(&file).unwrap_err().to_string();
    assert!(
        error.contains("stage 0: ClassificationModel") && error.contains("0_m"),
        "{error}"
    );
    let error = PipelineModel::load(dir.path().join("missing")).unwrap_err().to_string();
    assert!(error.contains("missing"), "{error}");
}

#[tokio::test]
async fn training_on_gpus_the_session_lacks_fails_before_it_starts() {
    let session = Session::builder().with_default_features().local(2);
    let gpus = hearth::exec::barrier::offered_gpus().len();
    let df = session
        .sql("SELECT ml_vector_assemble('error', x) AS features, y AS label FROM (VALUES (1.0, 0.0), (2.0, 1.0)) AS t(x, y)")
        .await
        .unwrap();
    let fit = MlpClassifier::new()
        .workers(2)
        .device(DeviceChoice::Cuda(None))
        .fit(&df)
        .await;
    if gpus >= 2 {
        assert!(fit.is_ok(), "{gpus} GPUs: {:?}", fit.err());
        return;
    }
    let error = fit.unwrap_err().to_string();
    let asked = format!(
        "a barrier stage of 2 tasks needs 2 GPUs at once (one per task), but local[2] can give {gpus} tasks a GPU at once"
    );
    assert!(error.starts_with(&asked), "{error}");
    assert!(
        error.ends_with("; use device cpu, fewer workers or more GPUs"),
        "{error}"
    );
    if gpus == 0 {
        // And why this process has none: what libtorch says of its CUDA library.
        let why = hearth::torch::train::why_no_gpus().unwrap();
        assert!(error.contains(&format!(" (libtorch: {why})")), "{error}");
    }
}

#[tokio::test]
async fn device_auto_without_a_gpu_trains_on_the_cpu_and_the_ranks_table_says_so() {
    let session = Session::builder().with_default_features().local(2);
    if !hearth::exec::barrier::offered_gpus().is_empty() {
        return; // a machine with a GPU: auto takes it
    }
    let df = session
        .sql("SELECT ml_vector_assemble('error', x) AS features, y AS label FROM (VALUES (1.0, 0.0), (2.0, 1.0)) AS t(x, y)")
        .await
        .unwrap();
    let model = MlpClassifier::new()
        .workers(2)
        .epochs(1)
        .device(DeviceChoice::Auto)
        .fit(&df)
        .await
        .unwrap();
    let devices: Vec<&str> = model.summary().ranks.iter().map(|r| r.device.as_str()).collect();
    assert_eq!(devices, ["cpu (auto: no GPU)", "cpu (auto: no GPU)"]);
}
