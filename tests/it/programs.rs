//! A driver program's own barrier functions on a real fleet, whose `hearth executor` processes know only
//! hearth's functions: each task runs in a copy of the program its executor starts. The program is
//! `examples/horovod_runner` (HorovodRunner's MNIST MLP, then sparklyr's cluster spec), which `cargo test`
//! builds beside this test binary. An executor runs only programs from the directories its operator allowed:
//! on a fleet that allowed none, the same program's stage fails naming the rule, and nothing of it runs.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::common::wait_within;
use crate::fleet::Fleet;

/// The example `name`, built beside this test binary.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target directory");
    let program = dir.join("examples").join(name);
    assert!(
        program.exists(),
        "{} is missing: `cargo test` builds the examples (./dev test does)",
        program.display()
    );
    program
}

/// Runs `program args…` to its end (killed after `limit`), returning its exit status and output (standard
/// output, then standard error).
fn run(program: &PathBuf, args: &[String], limit: Duration) -> (bool, String) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let errors = tempfile::NamedTempFile::new().unwrap();
    let child = Command::new(program)
        .args(args)
        .stdout(log.reopen().unwrap())
        .stderr(errors.reopen().unwrap())
        .spawn()
        .expect("start the example");
    let status = wait_within(child, limit, &format!("{} {args:?}", program.display()));
    let errors = std::fs::read_to_string(errors.path()).unwrap();
    (status.success(), std::fs::read_to_string(log.path()).unwrap() + &errors)
}

/// The horovod_runner example, `program`, on `fleet` with two ranks and one epoch (killed after 5 minutes).
async fn horovod_runner_on(fleet: &Fleet, program: PathBuf) -> (bool, String) {
    let master = fleet.master();
    let args = ["--master", &master, "--np", "2", "--epochs", "1"].map(str::to_string);
    tokio::task::spawn_blocking(move || run(&program, &args, Duration::from_secs(300)))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_programs_own_functions_run_in_copies_of_it_on_a_fleet() {
    let program = example("horovod_runner");
    let fleet = Fleet::start_allowing(&[1, 1], program.parent()).await;
    let (ok, output) = horovod_runner_on(&fleet, program).await;
    assert!(ok, "the program failed:\n{output}");
    // HorovodRunner's main function trained on both executors; rank 0's result came back.
    let accuracy: f64 = output
        .lines()
        .find_map(|line| line.split("training accuracy ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no training accuracy in:\n{output}"));
    assert!(accuracy > 0.85, "training accuracy {accuracy}:\n{output}");
    // sparklyr's barrier tasks: one per executor, the 1,000 rows split between them, each naming both peers.
    let specs: Vec<&str> = output.lines().filter(|line| line.contains("TF_CONFIG=")).collect();
    assert_eq!(specs.len(), 2, "{output}");
    let rows: u64 = specs
        .iter()
        .map(|line| {
            line.split(": ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(rows, 1000, "{output}");
    assert!(
        specs.iter().all(|line| line.matches("127.0.0.1:").count() == 2),
        "{output}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_runs_no_driver_program_its_operator_did_not_allow() {
    let fleet = Fleet::start(&[1, 1]).await;
    let (ok, output) = horovod_runner_on(&fleet, example("horovod_runner")).await;
    assert!(!ok, "the program ran on executors that allowed no program:\n{output}");
    assert!(!output.contains("training accuracy"), "{output}");
    assert!(
        output.contains("does not run") && output.contains("--allow-programs DIR") && output.contains("allowed none"),
        "the error names the rule:\n{output}"
    );
}
