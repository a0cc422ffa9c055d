//! What the tests share: the `hearth` program, the repository's data, and fleets started with `hearth
//! cluster start` in a state directory of their own, stopped when dropped.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `hearth` program cargo built for these tests.
pub fn hearth() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hearth"))
}

/// `program` run as another user of the machine: `nobody` (uid 65534, through `setpriv`), the system's copy of
/// the program (this user's own may sit in a folder `nobody` cannot open), where the tests run as root, as CI
/// runs them; as this user elsewhere (whom the fleet refuses without the secret all the same).
pub fn as_another_user(program: &str) -> Command {
    if !runs_as_root() {
        return Command::new(program);
    }
    let system = ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{program} is not installed in a system folder, where another user can run it"));
    let mut setpriv = Command::new("setpriv");
    setpriv
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(system);
    setpriv
}

/// Tells training from the stages before it by the slots a job holds: its preprocessing holds two slots for a
/// few milliseconds at a time, its training the same two for as long as it trains.
#[derive(Debug, Default)]
pub struct TrainingSlots {
    held: Option<(Vec<String>, Instant)>,
}

impl TrainingSlots {
    /// How long the same two slots must be held to count as training.
    const HELD: Duration = Duration::from_secs(3);

    /// The two executors training holds, once `busy` (the executors busy now, polled) has named the same two
    /// for 3 s.
    pub fn seen(&mut self, busy: Vec<String>) -> Option<Vec<String>> {
        match &self.held {
            _ if busy.len() != 2 => {
                self.held = None;
                None
            }
            Some((held, since)) if *held == busy => (since.elapsed() >= Self::HELD).then_some(busy),
            _ => {
                self.held = Some((busy, Instant::now()));
                None
            }
        }
    }
}

/// Whether the tests run as root (as CI runs them), so that [`as_another_user`] is another user.
pub fn runs_as_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .is_some_and(|ids| ids.split_whitespace().nth(1) == Some("0"))
}

/// The repository's root: the examples' relative paths start there.
pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file of the repository's datasets.
pub fn dataset(relative: &str) -> PathBuf {
    repository().join("datasets").join(relative)
}

/// Standard output and error of a finished command, for assertion messages.
pub fn shown(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// What pyarrow (from the libtorch environment ./dev puts first on PATH) reads of a Parquet directory — on
/// this disk, or `bucket/prefix` through the S3 API at `s3_endpoint` — as `rows columns type width
/// max|mean|<1e-6` of the `features` column.
pub fn pyarrow_reads(location: &str, s3_endpoint: Option<&str>) -> String {
    pyarrow_reads_with(
        |args| Command::new("python3").args(args).output(),
        location,
        s3_endpoint,
    )
}

/// [`pyarrow_reads`], with Python run by `python` on the arguments it is given (on a lab host, say).
pub fn pyarrow_reads_with(
    python: impl FnOnce(&[&str]) -> std::io::Result<Output>,
    location: &str,
    s3_endpoint: Option<&str>,
) -> String {
    let script = "import sys, pyarrow.parquet as pq, pyarrow.fs as fs\n\
                  s3 = None\n\
                  if len(sys.argv) > 2:\n\
                  \x20   scheme, host = sys.argv[2].split('://')\n\
                  \x20   s3 = fs.S3FileSystem(access_key='hearth-test', secret_key='hearth-test-secret', \
                  endpoint_override=host, scheme=scheme, region='us-east-1')\n\
                  t = pq.read_table(sys.argv[1], filesystem=s3)\n\
                  f = t.column('features').combine_chunks()\n\
                  vs = f.to_pylist()\n\
                  width = len(vs[0])\n\
                  means = [sum(v[i] for v in vs) / len(vs) for i in range(width)]\n\
                  print(t.num_rows, t.num_columns, f.type.value_type, width, max(abs(m) for m in means) < 1e-6)\n";
    let mut args = vec!["-c", script, location];
    args.extend(s3_endpoint);
    let out = python(&args).unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Polls `probe` every 200 ms until it answers, for at most `timeout`; panics naming `what`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether process `pid` runs (a zombie does not).
pub fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// Runs the Python `script` with PySpark's Connect client (the one `./dev` installs, named by
/// `HEARTH_PYSPARK_CLIENT`), its arguments `args` and variables `env`, for at most two minutes; returns
/// its standard output, or panics with everything it printed.
pub fn pyspark(script: &str, args: &[&str], env: &[(&str, &OsStr)]) -> String {
    let client = std::env::var_os("HEARTH_PYSPARK_CLIENT")
        .expect("HEARTH_PYSPARK_CLIENT names PySpark's Connect client (./dev test sets it)");
    // A file, not `-c`: PySpark looks for a Spark installation when its program has no file.
    let file = tempfile::Builder::new().suffix(".py").tempfile().unwrap();
    std::fs::write(file.path(), script).unwrap();
    let output = Command::new("timeout")
        .arg("120")
        .arg(Path::new(&client).join("bin/python"))
        .arg(file.path())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the PySpark client of {args:?}: {}",
        shown(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A fleet started by `hearth cluster start` in a state directory of its own; stopped when dropped.
pub struct Fleet {
    pub state: tempfile::TempDir,
    pub master: String,
}

impl Fleet {
    /// `hearth cluster start` with `args`; panics with its output when it fails.
    pub fn start(args: &[&str]) -> Fleet {
        Self::start_with_env(args, &[])
    }

    /// `hearth cluster start` with `args` and the variables `env` (which its processes inherit). Unless
    /// `args` say otherwise, cluster-mode jobs may use the repository and the temporary directory, where
    /// the tests keep their models.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Fleet {
        let state = tempfile::tempdir().unwrap();
        let mut command = in_state(state.path(), env!("CARGO_BIN_EXE_hearth"));
        command.args(["cluster", "start"]).args(args);
        if !args.contains(&"--data-roots") {
            let temporary = std::env::temp_dir();
            command.arg("--data-roots").arg(repository()).arg(temporary);
        }
        let output = command.envs(env.iter().copied()).output().unwrap();
        assert!(output.status.success(), "cluster start: {}", shown(&output));
        let text = String::from_utf8_lossy(&output.stdout);
        let master = text
            .lines()
            .find_map(|line| line.strip_prefix("master: "))
            .unwrap_or_else(|| panic!("no master line: {text}"))
            .to_string();
        Fleet { state, master }
    }

    /// `hearth` with this fleet's state directory, in the repository.
    pub fn hearth(&self) -> Command {
        in_state(self.state.path(), env!("CARGO_BIN_EXE_hearth"))
    }

    /// `program` run as this fleet's commands are: with its state directory, in the repository.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        in_state(self.state.path(), program)
    }

    /// Runs `hearth args…`; panics with its output unless it succeeds; returns its standard output.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.hearth().args(args).output().unwrap();
        assert!(output.status.success(), "hearth {args:?}: {}", shown(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// What `hearth cluster start` recorded.
    pub fn record(&self) -> Value {
        let json = std::fs::read_to_string(self.state.path().join("cluster.json")).unwrap();
        serde_json::from_str(&json).unwrap()
    }

    /// The pids of the scheduler, every executor and the Spark Connect server (when it has one).
    pub fn pids(&self) -> Vec<u64> {
        let record = self.record();
        std::iter::once(&record["scheduler"])
            .chain(record["executors"].as_array().unwrap())
            .chain(record.get("connect"))
            .map(|p| p["pid"].as_u64().unwrap())
            .collect()
    }

    /// The executors whose slots training holds now.
    pub fn busy_executors(&self) -> Vec<String> {
        let status = self.status();
        status["executors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["free_slots"].as_u64() < e["slots"].as_u64())
            .map(|e| e["executor_id"].as_str().unwrap().to_string())
            .collect()
    }

    /// The pid of the executor whose id is `id` (it prints its id in its log).
    pub fn executor_pid(&self, id: &str) -> u64 {
        let record = self.record();
        record["executors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| std::fs::read_to_string(e["log"].as_str().unwrap()).is_ok_and(|log| log.contains(id)))
            .and_then(|e| e["pid"].as_u64())
            .unwrap_or_else(|| panic!("no executor {id} in {record}"))
    }

    /// Every executor's output so far.
    pub fn executor_logs(&self) -> String {
        let record = self.record();
        record["executors"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| std::fs::read_to_string(e["log"].as_str()?).ok())
            .collect()
    }

    /// `hearth status --json`.
    pub fn status(&self) -> Value {
        serde_json::from_str(&self.ok(&["status", "--json"])).unwrap()
    }

    /// The state of cluster-mode job `id`.
    pub fn job_state(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["job", "status", id, "--json"])).unwrap()
    }

    /// Waits until cluster-mode job `id` has ended; returns its record.
    pub fn job_ended(&self, id: &str, timeout: Duration) -> Value {
        wait_for(&format!("job {id} ends"), timeout, || {
            let job = self.job_state(id);
            (job["state"] != "running").then_some(job)
        })
    }

    /// Submits `file` in cluster mode with `args`; returns the job's id.
    pub fn submit_cluster(&self, file: &str, args: &[&str]) -> String {
        let text = self.ok(&[&["submit", "--deploy-mode", "cluster"], args, &[file]].concat());
        text.split_whitespace()
            .find(|word| word.starts_with("driver-"))
            .unwrap_or_else(|| panic!("no job id: {text}"))
            .to_string()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if self.state.path().join("cluster.json").exists() {
            let _ = self.hearth().args(["cluster", "stop"]).output();
        }
    }
}

/// `program` with `HEARTH_CLUSTER_DIR` at `state`, in the repository.
fn in_state(state: &Path, program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(repository())
        .env("HEARTH_CLUSTER_DIR", state)
        .env_remove("HEARTH_MASTER");
    command
}
