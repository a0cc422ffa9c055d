//! Training and evaluating again in the same process, as a SQL script with several models, a tuning run or a
//! notebook does: after each model the process is back to the threads it had before, none of them busy, and
//! its memory back near where it was.
//!
//! Thread counts and CPU time are the whole process's, so each master's check runs in a child process of its
//! own (this test binary again, running the one ignored test below), away from the tests running beside it.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::sql::{credit_session_on, run_script};

/// The environment variable that tells the child which master to train on.
const MASTER: &str = "HEARTH_REPEATED_TRAINING_MASTER";

/// How long tokio's blocking pool, which DataFusion reads files on, keeps an idle thread here (10 s by
/// default): what is left after it has passed is the stage's.
const KEEP_ALIVE: Duration = Duration::from_millis(200);

/// How long a finished stage's threads may take to be gone.
const SETTLE: Duration = Duration::from_secs(10);

/// How much more CPU a trained process may use in an idle second than before its first model (a session's
/// own timers and Ballista's polls use some): a fifth of a core, where one thread left spinning uses all of one.
const IDLE_TICKS_MORE: u64 = 20;

/// How far a trained and trimmed process's resident memory may grow from the first model to the sixth: the
/// allocator's heaps and the session's caches settle over the first models (standalone[2] measured +61 MiB,
/// local[2] +30 MiB); a stage that kept its rows or its network would add that much each time.
const RSS_GROWTH: u64 = 128 << 20;

fn model(name: &str, workers: usize) -> String {
    format!(
        "CREATE OR REPLACE MODEL {name}
         OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['class'], hidden_units = [600, 600],
                  optimizer = 'adagrad', learn_rate = 0.01, max_iterations = 3, batch_size = 32, seed = 7,
                  workers = {workers}, data_split_method = 'random', data_split_eval_fraction = 0.2)
         AS SELECT duration, credit_amount, age, installment_commitment, existing_credits, class FROM credit"
    )
}

/// The process's threads: id → (name, CPU ticks so far).
fn threads() -> BTreeMap<u32, (String, u64)> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue; // the thread ended meanwhile
        };
        let (open, close) = (stat.find('(').unwrap(), stat.rfind(')').unwrap());
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        let id = entry.file_name().to_string_lossy().parse().unwrap();
        found.insert(id, (stat[open + 1..close].to_string(), ticks));
    }
    found
}

/// The process's resident memory in bytes, after glibc's allocator gave back the pages it could.
fn trimmed_rss() -> u64 {
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe { libc::malloc_trim(0) };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() << 10
}

/// Waits until the process has at most `count` threads, up to [`SETTLE`]; the threads it has then.
fn settled_to(count: usize) -> BTreeMap<u32, (String, u64)> {
    let started = Instant::now();
    loop {
        let now = threads();
        if now.len() <= count || started.elapsed() > SETTLE {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The threads that used CPU over one idle second, with the ticks each used.
fn busy_over_a_second() -> Vec<(String, u64)> {
    let before = threads();
    std::thread::sleep(Duration::from_secs(1));
    threads()
        .into_iter()
        .filter_map(|(id, (name, ticks))| {
            let used = ticks - before.get(&id).map_or(ticks, |(_, t)| *t);
            (used > 0).then(|| (format!("{name} ({id})"), used))
        })
        .collect()
}

/// The child: three identical models on the master `HEARTH_REPEATED_TRAINING_MASTER` names, on one worker
/// (libtorch's threads on an OpenMP team) and on two.
#[test]
#[ignore = "run by the tests below, each in a process of its own"]
fn three_models_in_one_process() {
    let Ok(master) = std::env::var(MASTER) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(KEEP_ALIVE)
        .enable_all()
        .build()
        .unwrap();
    let models = tempfile::tempdir().unwrap();
    let session = runtime.block_on(credit_session_on(&master, models.path()));
    // The table's first scan starts what a session keeps; the baseline is taken after it.
    runtime
        .block_on(run_script(&session, "SELECT count(*) FROM credit"))
        .unwrap();
    std::thread::sleep(KEEP_ALIVE * 5);
    let baseline = threads().len();
    let idle_ticks: u64 = busy_over_a_second().iter().map(|(_, t)| t).sum();
    let mut first_rss = None;
    for workers in [1, 2] {
        for name in ["first", "second", "third"] {
            // The same model each time, replacing the one before, as a script run again does.
            let created = runtime
                .block_on(run_script(&session, &model("repeated", workers)))
                .unwrap();
            assert_eq!(created[0].num_rows(), 1, "{name}");
            // A stage's tasks, and the OpenMP threads they started (named after them), end before it returns.
            let left: Vec<String> = threads().into_values().map(|(n, _)| n).collect();
            assert!(
                !left.iter().any(|n| n.starts_with("hearth-task")),
                "{name} returned with {left:?}"
            );
            // Predicting runs the model on the session's own threads, which live on.
            let evaluate = "SELECT * FROM ML.EVALUATE(MODEL repeated, (SELECT * FROM credit))";
            let evaluated = runtime.block_on(run_script(&session, evaluate)).unwrap();
            assert_eq!(evaluated[0].num_rows(), 1, "{name}");
            let after = settled_to(baseline);
            let names: Vec<&str> = after.values().map(|(n, _)| n.as_str()).collect();
            let what = format!("after the {name} model on {workers} worker(s)");
            assert!(
                after.len() <= baseline,
                "{what}: {} threads, {baseline} before: {names:?}",
                after.len()
            );
            assert!(!names.iter().any(|n| n.starts_with("hearth-")), "{what}: {names:?}");
            let busy = busy_over_a_second();
            let ticks: u64 = busy.iter().map(|(_, t)| t).sum();
            assert!(
                ticks <= idle_ticks + IDLE_TICKS_MORE,
                "{what}, idle: {busy:?} ({idle_ticks} ticks before)"
            );
            let rss = trimmed_rss();
            let first = *first_rss.get_or_insert(rss);
            let (mib, first_mib) = (rss >> 20, first >> 20);
            assert!(
                rss <= first + RSS_GROWTH,
                "{what}: {mib} MiB resident, {first_mib} MiB after the first"
            );
            println!(
                "{master}: {what}: {} threads ({baseline} before), {ticks} ticks idle, {mib} MiB",
                after.len()
            );
        }
    }
}

/// Runs [`three_models_in_one_process`] on `master` in a child process and fails with its output if it failed.
fn in_a_child(master: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "repeated_training::three_models_in_one_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MASTER, master)
        .output()
        .unwrap();
    let shown = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{master}:\n{shown}");
    assert!(
        shown.contains("after the third model on 2 worker(s)"),
        "{master} ran no model:\n{shown}"
    );
}

#[test]
fn training_leaves_nothing_running_on_local() {
    in_a_child("local[2]");
}

#[test]
fn training_leaves_nothing_running_on_standalone() {
    in_a_child("standalone[2]");
}
