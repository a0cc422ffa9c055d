//! What notebook users see: data frames, fitted pipelines, trained models, metrics and sessions as HTML
//! (user strings escaped, tags balanced) and text; SVG plots; the awkward cases (no rows, 10,000 columns,
//! one epoch, no history).

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{ArrayRef, Int32Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use hearth::display::plot::training_curves;
use hearth::display::{FramePreview, Grid, Rich};
use hearth::prelude::*;

/// Each of these tags opens as often as it closes in `html`.
fn balanced(html: &str) {
    for tag in ["table", "thead", "tbody", "tr", "th", "td", "caption", "figure", "svg"] {
        let opened = html.matches(&format!("<{tag}>")).count() + html.matches(&format!("<{tag} ")).count();
        assert_eq!(opened, html.matches(&format!("</{tag}>")).count(), "<{tag}> in {html}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_shows_its_first_rows_types_and_escaped_values() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT * FROM (VALUES ('<script>alert(1)</script>', 1.5), ('b', 2.5), ('c', NULL)) AS t(label, x)")
        .await
        .unwrap();
    let preview = df.preview(2).await.unwrap();
    assert_eq!(preview.rows().len(), 2);
    let html = preview.to_html();
    balanced(&html);
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
    assert!(html.contains("<th>label: Utf8</th><th>x: Float64</th>"), "{html}");
    assert!(
        html.contains("3 rows × 2 columns") && html.contains("first 2 of 3 rows"),
        "{html}"
    );
    let everything = df.preview(10).await.unwrap().to_text();
    assert!(
        everything.contains("| c ") && everything.contains("null"),
        "{everything}"
    );

    let empty = df
        .filter(datafusion::prelude::col("x").gt(datafusion::prelude::lit(100.0)))
        .unwrap();
    let shown = empty.preview(5).await.unwrap();
    assert!(shown.rows().is_empty());
    assert!(shown.to_html().contains("no rows"), "{}", shown.to_html());
}

#[test]
fn a_frame_ending_a_cell_shows_its_first_rows_with_or_without_a_runtime() {
    use hearth::display::{FrameDisplay, SHOWN_ROWS};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let df = runtime.block_on(async {
        Session::builder()
            .with_default_features()
            .local(2)
            .sql("SELECT * FROM generate_series(1, 100) AS t(x)")
            .await
            .unwrap()
    });
    // A notebook's async cell: called from inside a multi-threaded runtime.
    let inside = runtime.block_on(async { df.preview_now(SHOWN_ROWS).unwrap() });
    assert_eq!(inside.rows().len(), 20);
    assert!(inside.to_html().contains("first 20 rows"), "{}", inside.to_html());
    drop(runtime);
    // A cell without async code: no runtime at all.
    assert_eq!(df.preview_now(5).unwrap().rows().len(), 5);
    // A single-threaded runtime cannot wait for the query: the error says what to do instead.
    let single = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let error = single.block_on(async { df.preview_now(5).unwrap_err().to_string() });
    assert!(error.contains("df.preview(n).await"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_of_ten_thousand_columns_is_cut_and_says_so() {
    let session = Session::builder().with_default_features().local(1);
    let fields: Vec<Field> = (0..10_000)
        .map(|i| Field::new(format!("c{i}"), DataType::Int32, false))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let columns: Vec<ArrayRef> = (0..10_000)
        .map(|i| Arc::new(Int32Array::from(vec![i, i + 1])) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
    let df = session.read_batches(schema, vec![batch]).unwrap();
    let preview = FramePreview::of(&df, 5).await.unwrap();
    assert_eq!(preview.names().len(), 50);
    assert_eq!(preview.hidden_columns(), 9_950);
    let html = preview.to_html();
    balanced(&html);
    assert!(
        html.contains("first 50 of 10000 columns (9950 more not shown)"),
        "{html}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trained_pipeline_its_model_and_its_metrics_show_with_plots() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql(
            "SELECT CAST(v % 7 AS DOUBLE) AS a, CAST(v % 5 AS DOUBLE) AS b, \
             CASE WHEN v % 7 > 3 THEN 'yes' ELSE '<no>' END AS answer \
             FROM generate_series(1, 400) AS t(v)",
        )
        .await
        .unwrap();
    let model = Pipeline::new()
        .stage(StringIndexer::new().input_col("answer").output_col("label"))
        .stage(VectorAssembler::new().input_cols(["a", "b"]).output_col("features"))
        .stage(
            MlpClassifier::new()
                .hidden_layers([8])
                .workers(2)
                .epochs(1)
                .seed(3)
                .device(DeviceChoice::Cpu)
                .timeout(Duration::from_secs(30)),
        )
        .fit(&df)
        .await
        .unwrap();
    let pipeline_html = model.to_html();
    balanced(&pipeline_html);
    assert!(pipeline_html.contains("PipelineModel of 3 stages") && pipeline_html.contains("StringIndexerModel"));

    let classifier: &ClassificationModel = model.last_stage().unwrap();
    let model_html = classifier.to_html();
    balanced(&model_html);
    for part in ["Training history", "Ranks", "Attempts", "succeeded", "<svg"] {
        assert!(model_html.contains(part), "{part} in {model_html}");
    }
    // One epoch still plots: a point per series.
    assert!(classifier.training_curves().unwrap().markup().contains("<circle"));
    let text = classifier.to_text();
    assert!(text.contains("| rank | host") && !text.contains("<svg"), "{text}");
    without_history_shows_no_curves(classifier);

    let scored = model.transform(&df).unwrap();
    let metrics = Metrics::of_classifier(classifier, &scored).await.unwrap();
    let accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&scored)
        .await
        .unwrap();
    assert_eq!(metrics.get("accuracy"), Some(accuracy));
    assert!(metrics.get("areaUnderROC").is_some());
    let plots = metrics.plots().unwrap();
    let titles: Vec<&str> = plots.iter().map(hearth::display::Svg::title).collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    assert!(titles[1].starts_with("ROC curve, areaUnderROC") && titles[2].starts_with("Precision-recall"));
    let html = metrics.to_html();
    balanced(&html);
    assert_eq!(html.matches("<svg").count(), 3);
    let dir = tempfile::tempdir().unwrap();
    plots[0].save(dir.path().join("confusion.svg")).unwrap();
    let saved = std::fs::read_to_string(dir.path().join("confusion.svg")).unwrap();
    assert!(saved.starts_with("<svg") && saved.contains("Confusion matrix"));
}

/// `classifier` saved, its history emptied in every file that keeps one (as a model trained elsewhere has
/// none), loaded: it shows its tables, says it has no history, and draws no curves.
fn without_history_shows_no_curves(classifier: &ClassificationModel) {
    let dir = tempfile::tempdir().unwrap();
    classifier.save(dir.path()).unwrap();
    for file in ["model.json", "training.json"] {
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        clear_histories(&mut json);
        std::fs::write(&path, json.to_string()).unwrap();
    }
    let bare = ClassificationModel::load(dir.path()).unwrap();
    assert!(bare.history().is_empty());
    let html = bare.to_html();
    balanced(&html);
    assert!(
        html.contains("no training history was kept with this model") && !html.contains("<svg"),
        "{html}"
    );
    assert!(bare.to_text().contains("no training history"));
}

/// Every `history` array in `json` emptied.
fn clear_histories(json: &mut serde_json::Value) {
    match json {
        serde_json::Value::Object(fields) => {
            for (name, value) in fields.iter_mut() {
                if name == "history" {
                    *value = serde_json::Value::Array(Vec::new());
                } else {
                    clear_histories(value);
                }
            }
        }
        serde_json::Value::Array(values) => values.iter_mut().for_each(clear_histories),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_shows_where_it_runs() {
    let view = SessionView::of(&Session::builder().with_default_features().local(3))
        .await
        .unwrap();
    let html = view.to_html();
    balanced(&html);
    assert!(
        html.contains("<td style=\"text-align: left\">local[3]</td><td>3</td><td>0</td>"),
        "{html}"
    );
}

#[test]
fn nothing_to_plot_is_an_error_that_says_so() {
    let error = training_curves(&[]).unwrap_err().to_string();
    assert_eq!(error, "plot training curves: the model kept no training history");
    let grid = Grid::new(["a"]);
    balanced(&grid.to_html());
}
