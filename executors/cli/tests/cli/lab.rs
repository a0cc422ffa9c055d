//! A fleet of several hosts on one machine: the scheduler and the driver in one network namespace, each
//! executor in a namespace of its own, reachable only over its link to the scheduler's (a veth pair on a
//! bridge), with a private `/tmp` (its own mount namespace) for its work directory. Nothing crosses between
//! them but TCP on the lab's subnet, so each process sees the others at their own addresses — as on a
//! network of machines, and unlike the loopback fleets of the other tests. Namespaces need root (as CI runs);
//! elsewhere a test says that it skips, on the standard error of every run — or fails, where
//! `HEARTH_REQUIRE_NAMESPACES` is set (as CI sets it).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::repository;

/// The lab's subnet: every lab has its own namespaces, so labs of concurrent tests never meet.
const SUBNET: &str = "10.88.0";

/// The longest any process of a lab runs, and what its commands are given to finish.
const LAB_LIFETIME: Duration = Duration::from_secs(300);

/// The variable that makes a test fail, rather than skip, where namespaces cannot be made (CI sets it).
const REQUIRE_NAMESPACES: &str = "HEARTH_REQUIRE_NAMESPACES";

/// Network namespaces wired as hosts of one subnet, and the processes started in them; all are stopped and
/// removed when the lab is dropped.
pub(crate) struct Lab {
    /// The namespaces' names: the first holds the bridge (the scheduler's and the driver's host).
    hosts: Vec<String>,
    processes: Vec<Child>,
    /// The name each of `processes` was started as.
    names: Vec<String>,
    pub(crate) logs: tempfile::TempDir,
    /// The fleet's secret, which every `hearth` of the lab is given.
    secret: String,
    /// The fleet's certificates (`hearth cluster certs`), which every `hearth` of the lab is given, if any.
    pub(crate) tls: Option<PathBuf>,
    /// Variables every `hearth` of the lab is given (an object store's keys), beside the secret.
    pub(crate) env: Vec<(String, String)>,
}

impl Lab {
    /// A lab of `hosts` hosts, or why there can be none here.
    fn new(hosts: usize) -> Result<Lab, String> {
        if !is_root() {
            return Err("network namespaces need root".into());
        }
        if Command::new("ip").arg("-V").output().is_err() {
            return Err("the `ip` program (iproute2) is missing".into());
        }
        sweep_stale_labs();
        static LABS: AtomicUsize = AtomicUsize::new(0);
        let prefix = format!("hearth-{}-{}", std::process::id(), LABS.fetch_add(1, Ordering::Relaxed));
        let probe = format!("{prefix}-probe");
        ip(&["netns", "add", &probe]).map_err(|e| format!("cannot make network namespaces here: {e}"))?;
        let _ = ip(&["netns", "del", &probe]);
        let mut lab = Lab {
            hosts: (0..hosts).map(|i| format!("{prefix}-{i}")).collect(),
            processes: Vec::new(),
            names: Vec::new(),
            logs: tempfile::tempdir().map_err(|e| e.to_string())?,
            secret: random_secret(),
            tls: None,
            env: Vec::new(),
        };
        // Where namespaces can be made, a lab that cannot be wired is a failure, not a reason to skip.
        if let Err(e) = lab.wire() {
            panic!("cannot wire the lab's namespaces: {e}");
        }
        Ok(lab)
    }

    /// Host `i`'s address on the lab's subnet.
    pub(crate) fn address(&self, i: usize) -> String {
        format!("{SUBNET}.{}", i + 1)
    }

    /// Creates the namespaces, a bridge in the first with its address, and a veth link from each other host
    /// to the bridge.
    fn wire(&mut self) -> Result<(), String> {
        let first = self.hosts[0].clone();
        for host in &self.hosts {
            ip(&["netns", "add", host])?;
            ip(&["-n", host, "link", "set", "lo", "up"])?;
        }
        ip(&["-n", &first, "link", "add", "br0", "type", "bridge"])?;
        ip(&[
            "-n",
            &first,
            "addr",
            "add",
            &format!("{}/24", self.address(0)),
            "dev",
            "br0",
        ])?;
        ip(&["-n", &first, "link", "set", "br0", "up"])?;
        for (i, host) in self.hosts.iter().enumerate().skip(1) {
            let port = format!("port{i}");
            ip(&[
                "link", "add", &port, "netns", &first, "type", "veth", "peer", "name", "eth0", "netns", host,
            ])?;
            ip(&["-n", &first, "link", "set", &port, "master", "br0", "up"])?;
            ip(&[
                "-n",
                host,
                "addr",
                "add",
                &format!("{}/24", self.address(i)),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", host, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// The command prefix that runs a program on host `i`'s network, under `timeout`.
    pub(crate) fn on_host(&self, i: usize) -> Vec<String> {
        let lifetime = LAB_LIFETIME.as_secs().to_string();
        [
            "timeout",
            "--kill-after=10",
            &lifetime,
            "ip",
            "netns",
            "exec",
            &self.hosts[i],
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// `hearth args…` on host `i`, from the repository, with the fleet's secret and the lab's variables (and
    /// no object store's address but what the command is given); with a private `/tmp` on every host but the
    /// first.
    pub(crate) fn hearth_on(&self, i: usize, args: &[&str]) -> Command {
        self.program_on(i, Path::new(env!("CARGO_BIN_EXE_hearth")), args)
    }

    /// `program args…` on host `i`, as [`hearth_on`](Self::hearth_on) runs `hearth`.
    pub(crate) fn program_on(&self, i: usize, program: &Path, args: &[&str]) -> Command {
        // Under `timeout`, so that nothing of a lab outlives a harness killed before it could clean up.
        let prefix = self.on_host(i);
        let mut command = Command::new(&prefix[0]);
        command.args(&prefix[1..]);
        if i > 0 {
            command.args(["unshare", "--mount", "--propagation", "private", "sh", "-c"]);
            command.arg(private_tmp_script()).arg("sh");
        }
        command.arg(program).args(args).current_dir(repository());
        command.env("HEARTH_SECRET", &self.secret).env_remove("HEARTH_MASTER");
        for variable in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ALLOW_HTTP"] {
            command.env_remove(variable);
        }
        command.envs(self.env.iter().map(|(name, value)| (name, value)));
        match &self.tls {
            Some(dir) => command.env("HEARTH_TLS_DIR", dir),
            None => command.env_remove("HEARTH_TLS_DIR"),
        };
        command
    }

    /// Starts `hearth args…` on host `i` as process `name` (its output in the lab's logs); when `ready` names
    /// the start of a line of its standard output, waits up to 60 s for that line and returns its rest.
    pub(crate) fn start(&mut self, i: usize, name: &str, args: &[&str], ready: Option<&str>) -> String {
        let log = std::fs::File::create(self.logs.path().join(format!("{name}.log"))).unwrap();
        let mut child = self
            .hearth_on(i, args)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        self.processes.push(child);
        self.names.push(name.to_string());
        let (found, waiting) = mpsc::channel();
        let wanted = ready.map(str::to_string);
        // The output is read to its end, so that the process never writes to a closed pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = wanted.as_deref().and_then(|wanted| line.strip_prefix(wanted)) {
                    let _ = found.send(rest.to_string());
                }
            }
        });
        if ready.is_none() {
            return String::new();
        }
        waiting
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{name} did not start:\n{}", self.log(name)))
    }

    /// The folders in the `/tmp` that process `name` sees (its host's own), with their modes: read through
    /// the `hearth` process's root in `/proc`, which shows its mount namespace.
    pub(crate) fn temporary_folders(&self, name: &str) -> Vec<(String, u32)> {
        let at = self
            .names
            .iter()
            .position(|started| started == name)
            .expect("a process of that name");
        let hearth = descendant_named(self.processes[at].id(), "hearth")
            .unwrap_or_else(|| panic!("no hearth process under {name}:\n{}", self.log(name)));
        let tmp = PathBuf::from(format!("/proc/{hearth}/root/tmp"));
        let entries = std::fs::read_dir(&tmp).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
        (entries.map_while(Result::ok))
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .map(|entry| {
                let mode = entry.metadata().map_or(0, |m| m.permissions().mode() & 0o777);
                (entry.file_name().to_string_lossy().into_owned(), mode)
            })
            .collect()
    }

    /// What process `name` wrote to its standard error.
    pub(crate) fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.logs.path().join(format!("{name}.log"))).unwrap_or_default()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Asked to stop first (`timeout` passes it on), so that each cleans up after itself; then killed.
        for child in &self.processes {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).output();
        }
        for child in &mut self.processes {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for host in &self.hosts {
            let _ = ip(&["netns", "del", host]);
        }
    }
}

/// The first process named `command` (its `comm`) among the descendants of process `root`.
fn descendant_named(root: u32, command: &str) -> Option<u32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // pid (comm) state ppid …: the command may hold spaces and parentheses, so read after the last ')'.
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let pids: Vec<u32> = (std::fs::read_dir("/proc").ok()?.map_while(Result::ok))
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect();
    let descends = |mut pid: u32| loop {
        match parent_of(pid) {
            Some(parent) if parent == root => return true,
            Some(parent) if parent > 1 => pid = parent,
            _ => return false,
        }
    };
    pids.into_iter().find(|&pid| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == command) && descends(pid)
    })
}

/// The script that gives a host a `/tmp` of its own (a new tmpfs) and then runs its program (`"$@"`). What
/// the hosts share — the repository with its data, hearth's program, the directory the tests keep shared files
/// in — is moved back onto the new `/tmp` where it lay under the old one (a clone in `/tmp`, as CI makes).
fn private_tmp_script() -> String {
    let program = PathBuf::from(env!("CARGO_BIN_EXE_hearth"));
    let candidates = [
        repository(),
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        program.parent().map(PathBuf::from).unwrap_or_default(),
    ];
    let mut shared: Vec<PathBuf> = candidates
        .iter()
        .filter_map(|path| path.canonicalize().ok())
        .filter(|path| path.starts_with("/tmp"))
        .collect();
    shared.sort();
    shared.dedup_by(|inner, outer| inner.starts_with(outer));
    let quoted = |path: &PathBuf| format!("'{}'", path.display().to_string().replace('\'', r"'\''"));
    let mut script = String::from("set -e\n");
    for (k, path) in shared.iter().enumerate() {
        script += &format!(
            "mkdir -p /run/hearth-lab-$$-{k}\nmount --bind {} /run/hearth-lab-$$-{k}\n",
            quoted(path)
        );
    }
    script += "mount -t tmpfs tmpfs /tmp\n";
    for (k, path) in shared.iter().enumerate() {
        let path = quoted(path);
        script +=
            &format!("mkdir -p {path}\nmount --move /run/hearth-lab-$$-{k} {path}\nrmdir /run/hearth-lab-$$-{k}\n");
    }
    script + "exec \"$@\"\n"
}

/// Runs `ip args…`; its error output when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    match output.status.success() {
        true => Ok(()),
        false => Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}

/// Deletes the namespaces of labs whose test process is gone (a harness killed before its labs were dropped).
fn sweep_stale_labs() {
    let Ok(listed) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let pid = name.strip_prefix("hearth-").and_then(|rest| rest.split('-').next());
        if let Some(pid) = pid.and_then(|pid| pid.parse::<u64>().ok())
            && !crate::common::alive(pid)
        {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// Whether this process runs as root.
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .map(str::to_string)
        })
        .is_some_and(|uids| uids.split_whitespace().next() == Some("0"))
}

/// A fleet secret for one lab, from the kernel's random generator.
fn random_secret() -> String {
    let random = std::fs::read("/proc/sys/kernel/random/uuid").unwrap_or_default();
    let secret: String = String::from_utf8_lossy(&random)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    assert!(secret.len() >= 32, "a random secret: {secret:?}");
    secret
}

/// A lab of three hosts, or `None` after saying why there is none — past the test harness's capture, so
/// that the skip shows in every run's output.
pub(crate) fn lab_or_skip(test: &str) -> Option<Lab> {
    match Lab::new(3) {
        Ok(lab) => Some(lab),
        Err(why) if std::env::var_os(REQUIRE_NAMESPACES).is_some() => {
            panic!("{test}: {why} ({REQUIRE_NAMESPACES} is set: namespaces are required here)")
        }
        Err(why) => {
            let skipped = format!("SKIPPED {test}: {why}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), skipped.as_bytes());
            None
        }
    }
}

/// Starts a scheduler on the lab's first host and an executor of one slot on each other, `executor_args`
/// added; returns the scheduler's address once both executors registered.
pub(crate) fn start_fleet(lab: &mut Lab, executor_args: &[&str]) -> String {
    start_fleet_reading(lab, &[], executor_args)
}

/// [`start_fleet`], with `data_roots` beside the repository as what the fleet's cluster-mode jobs may read.
pub(crate) fn start_fleet_reading(lab: &mut Lab, data_roots: &[&str], executor_args: &[&str]) -> String {
    let bind = format!("{}:0", lab.address(0));
    let work_dir = lab.logs.path().join("scheduler-work");
    let repository = repository();
    let mut args = vec!["scheduler", "--bind", &bind, "--work-dir", work_dir.to_str().unwrap()];
    args.extend(["--data-roots", repository.to_str().unwrap()]);
    args.extend(data_roots);
    let scheduler = lab.start(0, "scheduler", &args, Some("hearth scheduler listening on "));
    for i in 1..3 {
        let address = lab.address(i);
        let mut args = vec![
            "executor",
            "--scheduler",
            &scheduler,
            "--bind",
            &address,
            "--slots",
            "1",
            "--gpus",
            "none",
        ];
        args.extend(executor_args);
        lab.start(i, &format!("executor-{i}"), &args, None);
    }
    wait_for_executors(lab, &scheduler, 2);
    scheduler
}

/// Waits until `count` executors registered with the scheduler at `scheduler`, asked from the first host.
pub(crate) fn wait_for_executors(lab: &Lab, scheduler: &str, count: usize) {
    let master = format!("df://{scheduler}");
    let what = format!(
        "the executors register:\n{}\n{}",
        lab.log("executor-1"),
        lab.log("executor-2")
    );
    crate::common::wait_for(&what, Duration::from_secs(60), || {
        let out = lab
            .hearth_on(0, &["--master", &master, "status", "--json"])
            .output()
            .ok()?;
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (status["executors"].as_array()?.len() >= count).then_some(())
    });
}
