//! The barrier stage end to end on local masters: preprocessing → repartition → one trainer per partition →
//! model and metrics back on the driver; the gang check, empty partitions, retries and custom barrier code.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::logical_expr::{cast, col};
use hearth::datasets::german_credit;
use hearth::exec::barrier::{BarrierFunction, BarrierInput, BarrierTaskContext};
use hearth::prelude::*;
use hearth::training::train::{TRAIN_FUNCTION, TrainArgs, TrainFunction};

use crate::common::{doubles, frame};
use crate::evaluators::{case, fixture};

/// german_credit preprocessed by the main job's pipeline, split 80/20 with seed 42.
async fn credit(session: &Session) -> (DataFrame, DataFrame) {
    let raw = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let (_, prepared) = german_credit::preprocessing().fit_transform(&raw).await.unwrap();
    let parts = prepared.random_split(&[0.8, 0.2], 42).unwrap();
    (parts[0].clone(), parts[1].clone())
}

fn mlp() -> MlpClassifier {
    MlpClassifier::new()
        .hidden_layers([16])
        .workers(2)
        .epochs(8)
        .batch_size(32)
        .seed(7)
        .device(DeviceChoice::Cpu)
        .timeout(Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mlp_trains_on_two_workers_and_scores_german_credit() {
    let session = Session::builder().with_default_features().local(2);
    let (train, test) = credit(&session).await;
    let rows = train.clone().count().await.unwrap();
    let model = mlp().epochs(20).fit(&train).await.unwrap();

    let summary = model.summary();
    assert_eq!(summary.ranks.len(), 2);
    assert_eq!(summary.attempts.len(), 1);
    assert_eq!(summary.ranks.iter().map(|r| r.rows).sum::<usize>(), rows);
    assert!(summary.ranks.iter().all(|r| r.rows > 0 && r.device == "cpu"));
    let history = model.history();
    assert_eq!(history.len(), 20);
    assert!(history[19].loss < history[0].loss, "{history:?}");

    let scored = model.transform(&test).unwrap();
    let accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&scored)
        .await
        .unwrap();
    let auc = BinaryClassificationEvaluator::new().evaluate(&scored).await.unwrap();
    assert!(accuracy > 0.7, "accuracy {accuracy}");
    assert!(auc > 0.7, "areaUnderROC {auc}");

    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    let loaded = ClassificationModel::load(dir.path()).unwrap();
    assert_eq!(loaded.artifact(), model.artifact());
    let again = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&loaded.transform(&test).unwrap())
        .await
        .unwrap();
    assert_eq!(again, accuracy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_gives_the_same_model_every_run() {
    let session = Session::builder().with_default_features().local(2);
    let (train, _) = credit(&session).await;
    // Dropout draws from each rank's own seeded stream, so two runs in one process agree too.
    let first = mlp().epochs(2).dropout(0.3).fit(&train).await.unwrap();
    let second = mlp().epochs(2).dropout(0.3).fit(&train).await.unwrap();
    assert_eq!(first.artifact().tensors, second.artifact().tensors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_links_train_the_same_model() {
    let session = Session::builder().with_default_features().local(2);
    let (train, _) = credit(&session).await;
    let checked = mlp().epochs(2).fit(&train).await.unwrap();
    let encrypted = mlp()
        .epochs(2)
        .frame_protection(FrameProtection::Encryption)
        .fit(&train)
        .await
        .unwrap();
    assert_eq!(checked.artifact().tensors, encrypted.artifact().tensors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_weights_weigh_each_rows_loss() {
    use datafusion::prelude::{lit, when};
    let session = Session::builder().with_default_features().local(2);
    let (train, _) = credit(&session).await;
    // The bad-credit rows (label 1) weigh nothing: the model (almost) never learns to predict them.
    let weighted = train
        .clone()
        .with_column(
            "w",
            when(col("label").eq(lit(1.0)), lit(0.0)).otherwise(lit(1.0)).unwrap(),
        )
        .unwrap();
    let positives = |model: ClassificationModel, df: DataFrame| async move {
        let scored = model
            .transform(&df)
            .unwrap()
            .filter(col("prediction").eq(lit(1.0)))
            .unwrap();
        scored.count().await.unwrap()
    };
    let plain = positives(mlp().fit(&weighted).await.unwrap(), weighted.clone()).await;
    let model = mlp().weight_col("w").fit(&weighted).await.unwrap();
    let positive = positives(model.clone(), weighted.clone()).await;
    assert!(
        plain > 40 && positive * 20 < plain,
        "{positive} positives weighted, {plain} without"
    );
    let last = model.history().last().unwrap();
    let rows = weighted.clone().count().await.unwrap() as u64;
    assert_eq!(last.rows, rows, "every row is stepped on, weighted or not");
    assert!(
        last.accuracy.unwrap() > 0.99,
        "accuracy is weighted, only label-0 rows count: {last:?}"
    );

    let error = mlp()
        .weight_col("purpose")
        .fit(&weighted)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("\"purpose\"") && error.contains("must be numeric"),
        "{error}"
    );
    let negative = train.with_column("w", lit(-1.0)).unwrap();
    let error = mlp().weight_col("w").fit(&negative).await.unwrap_err().to_string();
    assert!(
        error.contains("\"w\"") && error.contains("weight -1 is not a finite number ≥ 0"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_workers_than_slots_fails_before_training() {
    let session = Session::builder().with_default_features().local(2);
    let (train, _) = credit(&session).await;
    let started = Instant::now();
    let error = mlp().workers(3).fit(&train).await.unwrap_err().to_string();
    assert!(
        error.contains("needs 3 task slots") && error.contains("local[2] has 2"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_an_empty_partition_still_completes() {
    // Equal rows hash to the same partition: with one distinct row, one of the two workers gets nothing.
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT ml_vector_assemble('error', 1.0, 2.0) AS features, 1.0 AS label FROM generate_series(1, 40)")
        .await
        .unwrap();
    let model = mlp().epochs(2).fit(&df).await.unwrap();
    let rows: Vec<usize> = model.summary().ranks.iter().map(|r| r.rows).collect();
    assert_eq!(rows.iter().sum::<usize>(), 40);
    assert!(rows.contains(&0), "{rows:?}");
    assert_eq!(model.history().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_columns_are_named() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT 'a' AS label, ml_vector_assemble('error', 1.0) AS features")
        .await
        .unwrap();
    let error = mlp().fit(&df).await.unwrap_err().to_string();
    assert!(error.contains("\"label\"") && error.contains("numeric"), "{error}");
    let error = mlp().features_col("nope").fit(&df).await.unwrap_err().to_string();
    assert!(
        error.contains("\"nope\"") && error.contains("no such column"),
        "{error}"
    );
    let error = MulticlassClassificationEvaluator::new()
        .metric_name("f2")
        .evaluate(&df)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown metric \"f2\""), "{error}");
}

/// Makes the trainer fail once after its first epoch for jobs whose label column starts with `label_fail_once`.
pub fn fail_once_after_the_first_epoch() {
    register_function(FailOnceAfterFirstEpoch);
}

/// The trainer, failing once after its first epoch for jobs whose label column starts with `label_fail_once`
/// — after rank 0 sent the driver its checkpoint.
#[derive(Debug)]
struct FailOnceAfterFirstEpoch;

impl BarrierFunction for FailOnceAfterFirstEpoch {
    fn name(&self) -> &str {
        TRAIN_FUNCTION
    }

    fn schema(&self, args: &str) -> datafusion::error::Result<datafusion::arrow::datatypes::SchemaRef> {
        TrainFunction.schema(args)
    }

    fn run(
        &self,
        context: &mut BarrierTaskContext,
        args: &str,
        input: Vec<RecordBatch>,
    ) -> datafusion::error::Result<RecordBatch> {
        self.run_input(context, args, BarrierInput::from_batches(input)?)
    }

    fn run_input(
        &self,
        context: &mut BarrierTaskContext,
        args: &str,
        input: BarrierInput,
    ) -> datafusion::error::Result<RecordBatch> {
        let parsed: TrainArgs = serde_json::from_str(args).unwrap();
        if !parsed.label_col.starts_with("label_fail_once") || context.resume().is_some() {
            return TrainFunction.run_input(context, args, input);
        }
        let mut one_epoch = parsed.clone();
        one_epoch.options.settings.epochs = 1;
        TrainFunction.run_input(context, &serde_json::to_string(&one_epoch).unwrap(), input)?;
        // Every rank is past its epoch, so rank 0's checkpoint has reached the driver.
        context.barrier()?;
        Err(datafusion::error::DataFusionError::Execution(format!(
            "injected failure on rank {}",
            context.rank()
        )))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_stage_is_retried_from_the_last_checkpoint() {
    fail_once_after_the_first_epoch();
    let session = Session::builder().with_default_features().local(2);
    let (train, _) = credit(&session).await;
    let renamed = train.clone().with_column("label_fail_once", col("label")).unwrap();

    let straight = mlp().epochs(3).fit(&train).await.unwrap();
    let retried = mlp()
        .epochs(3)
        .label_col("label_fail_once")
        .fit(&renamed)
        .await
        .unwrap();

    let attempts = &retried.summary().attempts;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(
        attempts[0].error.as_deref().unwrap().contains("injected failure"),
        "{attempts:?}"
    );
    assert_eq!(
        (attempts[1].resumed_from_epoch, attempts[1].error.as_deref()),
        (1, None)
    );
    assert_eq!(retried.history().len(), 3);
    for (a, b) in retried.artifact().tensors.iter().zip(&straight.artifact().tensors) {
        assert_eq!(a.name, b.name);
        for (x, y) in a.values.iter().zip(&b.values) {
            assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{}: {x} vs {y}", a.name);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_stage_is_retried_from_the_last_checkpoint_with_the_same_shuffles() {
    fail_once_after_the_first_epoch();
    let session = Session::builder().with_default_features().local(2);
    let (train, _) = credit(&session).await;
    let renamed = train
        .clone()
        .with_column("label_fail_once_streamed", col("label"))
        .unwrap();
    // 16 KiB a rank: its 400 rows are spilled and streamed through a 32-row shuffle buffer.
    let streamed = || mlp().epochs(3).memory_budget(16 << 10).shuffle_buffer_rows(32);

    let straight = streamed().fit(&train).await.unwrap();
    let retried = streamed()
        .label_col("label_fail_once_streamed")
        .fit(&renamed)
        .await
        .unwrap();
    assert!(
        straight.summary().ranks.iter().all(|r| r.streamed),
        "{:?}",
        straight.summary().ranks
    );
    let attempts = &retried.summary().attempts;
    assert_eq!(
        (
            attempts.len(),
            attempts[1].resumed_from_epoch,
            attempts[1].error.as_deref()
        ),
        (2, 1, None),
        "{attempts:?}"
    );
    for (a, b) in retried.artifact().tensors.iter().zip(&straight.artifact().tensors) {
        for (x, y) in a.values.iter().zip(&b.values) {
            assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{}: {x} vs {y}", a.name);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classifier_ends_a_pipeline_that_saves_and_loads_whole() {
    let session = Session::builder().with_default_features().local(2);
    let raw = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let parts = raw.random_split(&[0.8, 0.2], 42).unwrap();
    let pipeline = german_credit::preprocessing().stage(mlp().epochs(3));
    let model = pipeline.fit(&parts[0]).await.unwrap();
    assert_eq!(model.stages().len(), 6);
    let classifier: &ClassificationModel = model.last_stage().unwrap();
    assert_eq!(classifier.history().len(), 3);

    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path().join("model")).unwrap();
    let loaded = PipelineModel::load(dir.path().join("model")).unwrap();
    assert_eq!(loaded, model);
    assert_eq!(
        doubles(&loaded.transform(&parts[1]).unwrap(), "prediction").await,
        doubles(&model.transform(&parts[1]).unwrap(), "prediction").await
    );

    pipeline.save(dir.path().join("pipeline")).unwrap();
    assert_eq!(Pipeline::load(dir.path().join("pipeline")).unwrap(), pipeline);
}

#[test]
fn a_classifier_written_by_hand_in_pipeline_json_loads_with_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pipeline.json");
    std::fs::write(
        &file,
        r#"{"format": "Pipeline", "version": 1, "uid": "p", "stages": [
            {"class": "MlpClassifier", "hiddenLayers": [8, 4], "dropout": 0.1,
             "training": {"epochs": 2, "device": "cpu", "optimizer": {"optimizer": "sgd", "learning_rate": 0.05}},
             "barrier": {"workers": 2, "timeout": 30}}]}"#,
    )
    .unwrap();
    let loaded = Pipeline::load(&file).unwrap();
    let expected = Pipeline::new().stage(
        MlpClassifier::new()
            .hidden_layers([8, 4])
            .dropout(0.1)
            .epochs(2)
            .device(DeviceChoice::Cpu)
            .optimizer(OptimizerSpec::sgd(0.05))
            .workers(2)
            .timeout(Duration::from_secs(30)),
    );
    let [PipelineStage::Estimator(stage)] = loaded.stages() else {
        panic!("{:?}", loaded.stages());
    };
    let [PipelineStage::Estimator(want)] = expected.stages() else {
        unreachable!()
    };
    let (mut got, mut want) = (stage.params().unwrap(), want.params().unwrap());
    got.as_object_mut().unwrap().remove("uid");
    want.as_object_mut().unwrap().remove("uid");
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_rows_are_held_out_and_scored_every_epoch() {
    let session = Session::builder().with_default_features().local(2);
    let (train, _) = credit(&session).await;
    let marked = train
        .with_column("is_validation", col("age").gt(datafusion::prelude::lit(50)))
        .unwrap();
    let held_out = marked
        .clone()
        .filter(col("is_validation"))
        .unwrap()
        .count()
        .await
        .unwrap();
    let rows = marked.clone().count().await.unwrap();
    let model = mlp()
        .epochs(3)
        .validation_indicator_col("is_validation")
        .fit(&marked)
        .await
        .unwrap();
    let trained: usize = model.summary().ranks.iter().map(|r| r.rows).sum();
    assert!(
        held_out > 0 && trained == rows - held_out,
        "{trained} of {rows}, {held_out} held out"
    );
    for epoch in model.history() {
        let (loss, accuracy) = (epoch.validation_loss.unwrap(), epoch.validation_accuracy.unwrap());
        assert!(loss.is_finite() && (0.0..=1.0).contains(&accuracy), "{epoch:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_barrier_stage_resumes_from_what_a_task_sent_the_driver() {
    let schema = Arc::new(Schema::new(vec![Field::new("resumed_from", DataType::UInt64, false)]));
    let out = Arc::clone(&schema);
    register_function(FnBarrier::new("test.resume", schema, move |ctx, _| {
        let Some(point) = ctx.resume() else {
            if ctx.rank() == 0 {
                ctx.driver_channel()
                    .send(7, b"state after epoch 7")
                    .map_err(|e| datafusion::error::DataFusionError::Execution(e.to_string()))?;
            }
            ctx.barrier()?;
            return Err(datafusion::error::DataFusionError::Execution(
                "the first attempt fails".into(),
            ));
        };
        assert_eq!(point.bytes, b"state after epoch 7");
        let epoch = Arc::new(UInt64Array::from(vec![point.epoch as u64])) as _;
        Ok(RecordBatch::try_new(Arc::clone(&out), vec![epoch])?)
    }));
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .sql("SELECT * FROM generate_series(1, 10) AS t(x)")
        .await
        .unwrap();
    let run = BarrierStage::new("test.resume", "")
        .workers(2)
        .run_reporting(&df)
        .await
        .unwrap();
    assert_eq!(run.attempts.len(), 2, "{:?}", run.attempts);
    assert!(
        run.attempts[0]
            .error
            .as_deref()
            .unwrap()
            .contains("the first attempt fails")
    );
    assert_eq!(run.attempts[1].resumed_from_epoch, 7);
    assert_eq!(run.batches.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_barrier_code_sees_ranks_and_gathers() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("rank", DataType::UInt64, false),
        Field::new("world", DataType::UInt64, false),
        Field::new("total_rows", DataType::UInt64, false),
    ]));
    let out = Arc::clone(&schema);
    register_function(FnBarrier::new("test.count_rows", schema, move |ctx, batches| {
        let mine: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        ctx.barrier()?;
        let all = ctx.all_gather(&mine.to_le_bytes())?;
        let total: u64 = all.iter().map(|b| u64::from_le_bytes(b[..8].try_into().unwrap())).sum();
        let column = |v: u64| Arc::new(UInt64Array::from(vec![v])) as _;
        Ok(RecordBatch::try_new(
            Arc::clone(&out),
            vec![
                column(ctx.rank() as u64),
                column(ctx.world_size() as u64),
                column(total),
            ],
        )?)
    }));
    let session = Session::builder().with_default_features().local(3);
    let df = session
        .sql("SELECT * FROM generate_series(1, 1000) AS t(x)")
        .await
        .unwrap();
    let batches = BarrierStage::new("test.count_rows", "")
        .workers(3)
        .run(&df)
        .await
        .unwrap();
    let mut ranks = Vec::new();
    for batch in &batches {
        let column = |i: usize| batch.column(i).as_any().downcast_ref::<UInt64Array>().unwrap().value(0);
        ranks.push(column(0));
        assert_eq!((column(1), column(2)), (3, 1000));
    }
    ranks.sort_unstable();
    assert_eq!(ranks, vec![0, 1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluators_run_as_aggregates_and_match_spark() {
    let fixture = fixture();
    let case = |name: &str| case(&fixture, name).clone();
    let session = Session::builder().with_default_features().local(3);
    let close = |what: &str, got: f64, want: &serde_json::Value| {
        let want = want.as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "{what}: hearth {got}, Spark {want}"
        );
    };

    let multiclass = case("multiclass");
    let rows = multiclass["rows"].as_array().unwrap();
    let columns = serde_json::json!([
        {"name": "label", "type": "double", "values": rows.iter().map(|r| r[0].clone()).collect::<Vec<_>>()},
        {"name": "prediction", "type": "double", "values": rows.iter().map(|r| r[1].clone()).collect::<Vec<_>>()},
        {"name": "probability", "type": "vector", "values": rows.iter().map(|r| r[2].clone()).collect::<Vec<_>>()},
        {"name": "weight", "type": "double", "values": rows.iter().map(|r| r[3].clone()).collect::<Vec<_>>()},
    ]);
    let df = frame(&session, &columns);
    for metric in [
        "f1",
        "accuracy",
        "weightedPrecision",
        "weightedRecall",
        "logLoss",
        "hammingLoss",
    ] {
        let evaluator = MulticlassClassificationEvaluator::new().metric_name(metric);
        close(
            metric,
            evaluator.evaluate(&df).await.unwrap(),
            &multiclass["metrics"][metric],
        );
        let weighted = evaluator.weight_col("weight").evaluate(&df).await.unwrap();
        close(metric, weighted, &multiclass["metrics"][format!("{metric}/weighted")]);
    }
    // Spark's evaluators take the probabilities as array<double> too.
    let as_array = cast(col("probability"), DataType::new_list(DataType::Float64, true));
    let arrays = df.clone().with_column("probability", as_array).unwrap();
    let log_loss = MulticlassClassificationEvaluator::new().metric_name("logLoss");
    close(
        "logLoss of array<double> probabilities",
        log_loss.evaluate(&arrays).await.unwrap(),
        &multiclass["metrics"]["logLoss"],
    );
    let by_label = MulticlassClassificationEvaluator::new()
        .metric_name("precisionByLabel")
        .metric_label(2.0);
    close(
        "precisionByLabel",
        by_label.evaluate(&df).await.unwrap(),
        &multiclass["metrics"]["precisionByLabel/2.0"],
    );

    let binary = case("binary_bins");
    let rows = binary["rows"].as_array().unwrap();
    let columns = serde_json::json!([
        {"name": "rawPrediction", "type": "double", "values": rows.iter().map(|r| r[0].clone()).collect::<Vec<_>>()},
        {"name": "label", "type": "double", "values": rows.iter().map(|r| r[1].clone()).collect::<Vec<_>>()},
    ]);
    let df = frame(&session, &columns);
    for (key, want) in binary["metrics"].as_object().unwrap() {
        let parts: Vec<&str> = key.split('/').collect();
        if parts.len() == 3 {
            continue;
        }
        let evaluator = BinaryClassificationEvaluator::new()
            .metric_name(parts[0])
            .num_bins(parts[1].parse().unwrap());
        close(key, evaluator.evaluate(&df).await.unwrap(), want);
    }

    let regression = case("regression");
    let rows = regression["rows"].as_array().unwrap();
    let columns = serde_json::json!([
        {"name": "label", "type": "double", "values": rows.iter().map(|r| r[0].clone()).collect::<Vec<_>>()},
        {"name": "prediction", "type": "double", "values": rows.iter().map(|r| r[1].clone()).collect::<Vec<_>>()},
    ]);
    let df = frame(&session, &columns);
    for metric in ["rmse", "mse", "mae", "r2", "var"] {
        let got = RegressionEvaluator::new()
            .metric_name(metric)
            .evaluate(&df)
            .await
            .unwrap();
        close(metric, got, &regression["metrics"][metric]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_run_again_resumes_each_training_stage_from_its_checkpoint_in_storage() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = dir.path().join("checkpoints");
    let checkpoints = checkpoints.to_str().unwrap();
    let fit = |session: Session| async move {
        let (train, test) = credit(&session).await;
        let model = mlp().checkpoint_dir(checkpoints).fit(&train).await.unwrap();
        let predicted = doubles(&model.transform(&test).unwrap(), "prediction").await;
        (model, predicted)
    };
    let (first, predicted) = fit(Session::builder()
        .with_default_features()
        .local(2)
        .resume_job("credit-job")
        .unwrap())
    .await;
    assert_eq!(first.summary().attempts[0].resumed_from_epoch, 0);
    let stage = std::fs::read_dir(dir.path().join("checkpoints/credit-job"))
        .unwrap()
        .count();
    assert_eq!(stage, 1, "one stage's checkpoints under the job");

    // The job run again (a new session, as a restarted driver's): its stage resumes from its last
    // checkpoint, trains no epoch again, and gives the same model.
    let (again, predicted_again) = fit(Session::builder()
        .with_default_features()
        .local(2)
        .resume_job("credit-job")
        .unwrap())
    .await;
    assert_eq!(again.summary().attempts[0].resumed_from_epoch, 8);
    assert_eq!(
        again.history(),
        first.history(),
        "the history comes with the checkpoint"
    );
    assert_eq!(predicted_again, predicted);

    // Another job trains afresh.
    let (other, _) = fit(Session::builder()
        .with_default_features()
        .local(2)
        .resume_job("another-job")
        .unwrap())
    .await;
    assert_eq!(other.summary().attempts[0].resumed_from_epoch, 0);
}
