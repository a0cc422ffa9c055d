//! The same seeded pipeline on every master — `local[2]`, `standalone[2]` and a real fleet of one
//! `hearth scheduler` and two `hearth executor` processes on loopback — gives the same fitted preprocessing
//! and the same model; the fleet fails fast when a stage needs more slots than it has, and survives an
//! executor killed mid-training.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::{MemTable, source_as_provider};
use datafusion::logical_expr::LogicalPlan;
use hearth::datasets::german_credit;
use hearth::exec::cache::{CachedTable, DEFAULT_MEMORY_BUDGET, for_rereading};
use hearth::exec::master::SessionInfo;
use hearth::prelude::*;
use hearth::training::train::{EpochStats, ProgressSessionExt, TrainingProgress};

use crate::common::stage;

/// The `hearth` program cargo built beside this test binary (`cargo test --workspace` builds it).
pub(crate) fn hearth_program() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target directory");
    let program = dir.join("hearth");
    assert!(
        program.exists(),
        "{} is missing: build it with `cargo build -p hearth-cli` (./dev test does)",
        program.display()
    );
    program
}

/// A scheduler and executors running as processes; killed when dropped.
pub(crate) struct Fleet {
    scheduler: String,
    processes: Vec<Child>,
    /// The scheduler's and executors' work directories, removed with the fleet.
    work: tempfile::TempDir,
}

/// Starts `hearth args…` with the variables `env` and waits (up to 60 s) for a line of its output starting
/// with `prefix`.
pub(crate) fn spawn_until(args: &[&str], env: &[(&str, &str)], prefix: &str) -> (Child, String) {
    let mut child = Command::new(hearth_program())
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hearth");
    let stdout = child.stdout.take().expect("stdout");
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => return (child, line),
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill();
                panic!("hearth {args:?} did not print {prefix:?} within 60 s");
            }
        }
    }
}

impl Fleet {
    /// One scheduler and an executor per entry of `slots`, all registered.
    pub(crate) async fn start(slots: &[usize]) -> Fleet {
        Self::start_allowing(slots, None).await
    }

    /// [`Fleet::start`], with executors that may run the driver programs in `programs`.
    pub(crate) async fn start_allowing(slots: &[usize], programs: Option<&Path>) -> Fleet {
        // The scheduler's job records in a directory the fleet removes (its processes are killed, not stopped).
        let work = tempfile::tempdir().unwrap();
        let work_dir = work.path().to_str().unwrap();
        let (scheduler, line) = spawn_until(
            // No secret: these tests' in-process clients reach it without one.
            &[
                "scheduler",
                "--bind",
                "127.0.0.1:0",
                "--work-dir",
                work_dir,
                "--insecure",
            ],
            &[],
            "hearth scheduler listening on",
        );
        let address = line.rsplit(' ').next().expect("address").to_string();
        let mut fleet = Fleet {
            scheduler: address.clone(),
            processes: vec![scheduler],
            work,
        };
        for &n in slots {
            fleet.spawn_executor(n, programs);
        }
        let want: usize = slots.iter().sum();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let session = fleet.session().await;
            let df = session.sql("SELECT 1").await.unwrap();
            let found = SessionInfo::of(&df).task_slots().await.unwrap_or(0);
            if found == want {
                return fleet;
            }
            assert!(
                Instant::now() < deadline,
                "{found} of {want} slots registered after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Starts one more executor with `slots` slots, running driver programs from `programs`; its shuffle
    /// files go to the fleet's directory, removed with it even when the executor is killed.
    fn spawn_executor(&mut self, slots: usize, programs: Option<&Path>) {
        let slots = slots.to_string();
        let work_dir = self.work.path().join(format!("executor-{}", self.processes.len()));
        let work_dir = work_dir.to_str().unwrap();
        let mut args = vec![
            "executor",
            "--scheduler",
            &self.scheduler,
            "--slots",
            &slots,
            "--work-dir",
            work_dir,
            "--insecure",
        ];
        if let Some(programs) = programs {
            args.extend(["--allow-programs", programs.to_str().unwrap()]);
        }
        let (executor, _) = spawn_until(&args, &[], "hearth executor");
        self.processes.push(executor);
    }

    pub(crate) fn master(&self) -> String {
        format!("df://{}", self.scheduler)
    }

    pub(crate) async fn session(&self) -> Session {
        Session::builder()
            .with_default_features()
            .connect(&self.master())
            .await
            .unwrap()
    }

    /// Kills executor `i` (0-based, in start order).
    fn kill_executor(&mut self, i: usize) {
        let _ = self.processes[i + 1].kill();
        let _ = self.processes[i + 1].wait();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for process in &mut self.processes {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

/// How many tables `df` scans from where this process keeps them (in memory, or its own disk).
fn tables_in_memory(df: &DataFrame) -> usize {
    let mut kept = 0;
    let _ = df.logical_plan().apply(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && let Ok(provider) = source_as_provider(&scan.source)
        {
            kept += usize::from(provider.is::<MemTable>() || provider.is::<CachedTable>());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    kept
}

/// The main job's preprocessing fitted on 80 % of german_credit, and those rows transformed.
async fn prepared(session: &Session) -> (PipelineModel, DataFrame) {
    let credit = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let parts = credit.random_split(&[0.8, 0.2], 42).unwrap();
    let preprocessing = german_credit::preprocessing().fit(&parts[0]).await.unwrap();
    let train = preprocessing.transform(&parts[0]).unwrap();
    (preprocessing, train)
}

/// The main job's pipeline and a small MLP with dropout on two workers, on `session`.
async fn fit(session: &Session) -> (PipelineModel, ClassificationModel) {
    let (preprocessing, train) = prepared(session).await;
    let model = MlpClassifier::new()
        .hidden_layers([16])
        .dropout(0.2)
        .workers(2)
        .epochs(3)
        .batch_size(32)
        .seed(11)
        .device(DeviceChoice::Cpu)
        .timeout(Duration::from_secs(60))
        .fit(&train)
        .await
        .unwrap();
    (preprocessing, model)
}

fn scaler(model: &PipelineModel) -> (Vec<f64>, Vec<f64>) {
    let scaler: &StandardScalerModel = stage(model, model.stages().len() - 1);
    (scaler.mean().to_vec(), scaler.std().to_vec())
}

fn assert_same(what: &str, a: &(PipelineModel, ClassificationModel), b: &(PipelineModel, ClassificationModel)) {
    let (mean_a, std_a) = scaler(&a.0);
    let (mean_b, std_b) = scaler(&b.0);
    for (x, y) in mean_a.iter().zip(&mean_b).chain(std_a.iter().zip(&std_b)) {
        assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "{what}: scaler {x} vs {y}");
    }
    let (ta, tb) = (&a.1.artifact().tensors, &b.1.artifact().tensors);
    assert_eq!(ta.len(), tb.len(), "{what}: tensors");
    for (x, y) in ta.iter().zip(tb) {
        assert_eq!((&x.name, &x.shape), (&y.name, &y.shape), "{what}");
        for (u, v) in x.values.iter().zip(&y.values) {
            assert!(
                (u - v).abs() <= 1e-4 * v.abs().max(1.0),
                "{what}: {} {u} vs {v}",
                x.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_master_fits_the_same_pipeline_and_model() {
    let local = fit(&Session::builder().with_default_features().local(2)).await;
    let standalone = fit(&Session::builder()
        .with_default_features()
        .connect("standalone[2]")
        .await
        .unwrap())
    .await;
    assert_same("standalone[2] vs local[2]", &standalone, &local);
    let fleet = Fleet::start(&[1, 1]).await;
    let cluster = fit(&fleet.session().await).await;
    assert_same("df:// vs local[2]", &cluster, &local);
    // Rows read more than once (the pipeline's estimators) are kept locally, and on the fleet read again on
    // the executors: nothing of the fleet's data is collected into the driver.
    for (session, kept) in [
        (Session::builder().with_default_features().local(2), 1),
        (fleet.session().await, 0),
    ] {
        let credit = session
            .read_csv(german_credit::csv_path(), &CsvOptions::new())
            .await
            .unwrap();
        let reread = for_rereading(credit, DEFAULT_MEMORY_BUDGET).await.unwrap();
        assert_eq!(
            tables_in_memory(&reread),
            kept,
            "{:?}",
            SessionInfo::of(&reread).master()
        );
    }
    let ranks: Vec<usize> = cluster.1.summary().ranks.iter().map(|r| r.rows).collect();
    let local_ranks: Vec<usize> = local.1.summary().ranks.iter().map(|r| r.rows).collect();
    assert_eq!(ranks, local_ranks);

    // A parameter server on the fleet: rank 0's executor serves the center to both ranks.
    let (_, train) = prepared(&fleet.session().await).await;
    let downpour = MlpClassifier::new()
        .hidden_layers([16])
        .workers(2)
        .epochs(3)
        .device(DeviceChoice::Cpu)
        .strategy(Strategy::Downpour {
            communication_window: 4,
        })
        .fit(&train)
        .await
        .unwrap();
    let ranks = &downpour.summary().ranks;
    assert_eq!(ranks.len(), 2);
    assert!(
        ranks.iter().all(|r| r.staleness.is_some_and(|s| s.updates > 0)),
        "{ranks:?}"
    );

    // Spark's LogisticRegression, solved on the fleet's two executors: the same bits as on local[2].
    let logistic = LogisticRegression::new()
        .reg_param(0.01)
        .elastic_net_param(0.5)
        .workers(2);
    let on_fleet = logistic.fit(&train).await.unwrap();
    let on_local = logistic
        .fit(&prepared(&Session::builder().with_default_features().local(2)).await.1)
        .await
        .unwrap();
    assert_eq!(on_fleet.coefficients(), on_local.coefficients(), "df:// vs local[2]");
    assert_eq!(on_fleet.training_rows(), on_local.training_rows());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_without_enough_slots_fails_before_training() {
    let fleet = Fleet::start(&[1]).await;
    let session = fleet.session().await;
    let df = session
        .sql("SELECT ml_vector_assemble('error', x) AS features, y AS label FROM (VALUES (1.0, 0.0), (2.0, 1.0)) AS t(x, y)")
        .await
        .unwrap();
    let started = Instant::now();
    let error = MlpClassifier::new().workers(2).fit(&df).await.unwrap_err().to_string();
    assert!(
        error.contains("needs 2 task slots") && error.contains("has 1"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Counts the epochs the driver hears of.
#[derive(Debug, Default)]
struct EpochsHeard(AtomicUsize);

impl TrainingProgress for EpochsHeard {
    fn epoch(&self, _model: &str, _stats: &EpochStats, _epochs: usize) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asynchronous_training_survives_an_executor_killed_mid_training() {
    let mut fleet = Fleet::start(&[1, 1]).await;
    let heard = Arc::new(EpochsHeard::default());
    let session = fleet.session().await.with_progress(Arc::clone(&heard) as _);
    let (_, train) = prepared(&session).await;
    let epochs = 800;
    let classifier = MlpClassifier::new()
        .hidden_layers([32])
        .workers(2)
        .epochs(epochs)
        .batch_size(8)
        .seed(3)
        .device(DeviceChoice::Cpu)
        // The parameter server's rank or a worker dies: either way the stage retries from the center.
        .strategy(Strategy::AsyncEamsgd {
            rho: 5.0,
            communication_window: 8,
            momentum: 0.85,
            learning_rate: Some(0.04),
        })
        .max_attempts(3)
        .timeout(Duration::from_secs(20))
        .rendezvous_timeout(Duration::from_secs(40));
    let started = Instant::now();
    let training = tokio::spawn(async move { classifier.fit(&train).await });
    // Let a few epochs (and their checkpoints) reach the driver, so both ranks are running, then kill one of
    // the two executors running a rank, and give the fleet a replacement.
    while heard.0.load(Ordering::Relaxed) < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no three epochs within 120 s"
        );
        assert!(!training.is_finished(), "training ended before the executor was killed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    fleet.kill_executor(0);
    fleet.spawn_executor(1, None);
    let model = tokio::time::timeout(Duration::from_secs(240), training)
        .await
        .expect("training ends")
        .unwrap()
        .unwrap();
    let attempts = &model.summary().attempts;
    assert!(attempts.len() >= 2, "{attempts:?}");
    assert!(attempts[0].error.is_some(), "{attempts:?}");
    let last = attempts.last().unwrap();
    assert!(last.error.is_none() && last.resumed_from_epoch >= 1, "{attempts:?}");
    assert_eq!(model.history().len(), epochs);
    assert!(started.elapsed() < Duration::from_secs(240));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_barrier_jobs_that_each_need_the_whole_fleet_both_finish() {
    // Bound slot by slot, each job could hold one of the two slots and wait for the other forever; the
    // scheduler's gang policy binds a barrier stage whole, so one job trains while the other waits.
    let fleet = Fleet::start(&[1, 1]).await;
    let session = fleet.session().await;
    let (_, train) = prepared(&session).await;
    let fit = |seed: u64| {
        let train = train.clone();
        let classifier = MlpClassifier::new()
            .hidden_layers([16])
            .workers(2)
            .epochs(20)
            .batch_size(8)
            .seed(seed)
            .device(DeviceChoice::Cpu)
            .max_attempts(1)
            .rendezvous_timeout(Duration::from_secs(90));
        tokio::spawn(async move { classifier.fit(&train).await })
    };
    let (first, second) = (fit(1), fit(2));
    for job in [first, second] {
        let model = tokio::time::timeout(Duration::from_secs(180), job)
            .await
            .expect("the job ends")
            .unwrap()
            .unwrap();
        assert_eq!(model.summary().attempts.len(), 1);
        assert_eq!(model.history().len(), 20);
    }
}

/// The main job's SQL up to its `ML.EVALUATE`, run on `session`; the evaluation's f1, accuracy and
/// areaUnderROC.
async fn sql_main_job(session: &Session) -> [f64; 3] {
    let script = std::fs::read_to_string(german_credit::sql_path()).unwrap();
    let statements = hearth::sql::parse_statements(&script).unwrap();
    let mut last = Vec::new();
    for statement in &statements[..4] {
        last = session.execute(statement).await.unwrap().collect().await.unwrap();
    }
    ["f1", "accuracy", "areaUnderROC"].map(|name| {
        let column = last[0].column_by_name(name).unwrap();
        datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Float64Type>(column).value(0)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_job_in_sql_gives_the_same_metrics_on_the_fleet() {
    let models = tempfile::tempdir().unwrap();
    let local_session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(models.path().join("local"));
    let local = sql_main_job(&local_session).await;
    let fleet = Fleet::start(&[1, 1]).await;
    let session = fleet.session().await.with_models(models.path().join("fleet"));
    let remote = sql_main_job(&session).await;
    for (name, (l, r)) in ["f1", "accuracy", "areaUnderROC"].iter().zip(local.iter().zip(&remote)) {
        assert!((l - r).abs() < 1e-6, "{name}: local[2] {l}, fleet {r}");
    }
    // BigQuery's evaluation tables and explanations, over the held-out rows and given rows, are the same on the
    // fleet (the explanation's function travels to the executors with its model).
    for statement in [
        "SELECT * FROM ML.CONFUSION_MATRIX(MODEL credit_risk) ORDER BY expected_label",
        "SELECT * FROM ML.CONFUSION_MATRIX(MODEL credit_risk, TABLE credit, STRUCT(0.4 AS threshold)) ORDER BY expected_label",
        "SELECT * FROM ML.ROC_CURVE(MODEL credit_risk, TABLE credit, GENERATE_ARRAY(0.2, 0.8, 0.3)) ORDER BY threshold",
        "SELECT COUNT(*) > 50 AS thresholds FROM ML.ROC_CURVE(MODEL credit_risk)",
        "SELECT feature, attribution > 0 AS counts FROM ML.GLOBAL_EXPLAIN(MODEL credit_risk) ORDER BY feature",
        "SELECT top_feature_attributions[1]['feature'] AS top, COUNT(*) AS n, SUM(approximation_error) < 200 AS near
         FROM ML.EXPLAIN_PREDICT(MODEL credit_risk, TABLE credit, STRUCT(2 AS top_k_features)) GROUP BY 1 ORDER BY 1",
    ] {
        let table = |session: Session| async move {
            let batches = session.sql(statement).await.unwrap().collect().await.unwrap();
            datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                .unwrap()
                .to_string()
        };
        let (here, there) = (table(local_session.clone()).await, table(session.clone()).await);
        assert!(
            here.lines().count() > 4 && !here.contains("| false "),
            "{statement}:\n{here}"
        );
        assert_eq!(here, there, "{statement}");
    }
    // Early stopping on the fleet: the driver's ranks stop together and keep the best epoch.
    session
        .sql(
            "CREATE MODEL credit_stopped
             OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['class'], hidden_units = [64],
                      learn_rate = 0.02, batch_size = 32, max_iterations = 40, workers = 2, seed = 4,
                      data_split_method = 'random', data_split_eval_fraction = 0.3, early_stop = TRUE)
             AS SELECT duration, credit_amount, age, purpose, housing, checking_status, class FROM credit",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let info = session
        .sql("SELECT validation_loss FROM ML.TRAINING_INFO(MODEL credit_stopped) ORDER BY epoch")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let losses: Vec<f64> = info
        .iter()
        .flat_map(|b| {
            datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Float64Type>(b.column(0))
                .values()
                .to_vec()
        })
        .collect();
    assert!(losses.len() < 40, "stopped early on the fleet: {losses:?}");
    let evaluation = session
        .sql("SELECT \"logLoss\" FROM ML.EVALUATE(MODEL credit_stopped)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let log_loss = datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Float64Type>(
        evaluation[0].column(0),
    )
    .value(0);
    assert!(
        (log_loss - losses[losses.len() - 2]).abs() < 1e-4,
        "{log_loss} vs {losses:?}"
    );
    session.sql("DROP MODEL credit_stopped").await.unwrap();
    let predicted = session
        .sql("SELECT COUNT(*) AS n FROM ML.PREDICT(MODEL credit_risk, TABLE credit) WHERE predicted_class IN ('good', 'bad')")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let n = datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Int64Type>(
        predicted[0].column(0),
    )
    .value(0);
    assert_eq!(n, 1000, "every row is predicted on the fleet");
    for statement in [
        "SELECT * FROM ML.FEATURE_INFO(MODEL credit_risk)",
        "SELECT * FROM ML.TRANSFORM(MODEL credit_risk, TABLE credit) LIMIT 3",
        "SHOW MODELS",
    ] {
        let rows = session.sql(statement).await.unwrap().count().await.unwrap();
        assert!(rows > 0, "{statement}");
    }
    session.sql("DROP MODEL credit_risk").await.unwrap();
    assert_eq!(session.sql("SHOW MODELS").await.unwrap().count().await.unwrap(), 0);
}
