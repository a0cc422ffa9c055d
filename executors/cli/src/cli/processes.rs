//! The processes `hearth cluster` starts and stops: on this machine, detached from the terminal, or on
//! another host through `ssh` (as Spark's standalone scripts start workers). Each is recorded with its pid,
//! so `stop` ends exactly what `start` started — and nothing else that later took the same pid.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hearth_exec::ballista::{ClusterSecret, SECRET_ENV};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use super::failed::Failed;

/// A process `hearth cluster start` started.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Started {
    /// `scheduler` or `executor`.
    pub role: String,
    /// The ssh host it runs on; none on this machine.
    pub ssh_host: Option<String>,
    /// Its process id (on its host).
    pub pid: u32,
    /// When it started, in clock ticks since boot (`/proc/PID/stat`), for a process on this machine: a
    /// later process given the same pid started later.
    #[serde(default)]
    pub start_ticks: Option<u64>,
    /// The program it runs.
    pub program: PathBuf,
    /// Its output (on its host).
    pub log: PathBuf,
}

/// `text` quoted for a POSIX shell.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Starts `program role args…` on this machine in its own process group (a Ctrl-C in the terminal does
/// not reach it), its output to `log`.
pub fn spawn_local(
    program: &Path,
    role: &str,
    args: &[String],
    env: &[(&str, String)],
    log: &Path,
) -> Result<Started, Failed> {
    use std::os::unix::process::CommandExt;

    let output = File::create(log).map_err(|e| Failed::file(log, e))?;
    let errors = output.try_clone().map_err(|e| Failed::file(log, e))?;
    let child = Command::new(program)
        .arg(role)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(errors)
        .process_group(0)
        .spawn()
        .map_err(|e| Failed::because(format!("cannot start {} {role}", program.display()), e))?;
    Ok(Started {
        role: role.to_string(),
        ssh_host: None,
        pid: child.id(),
        start_ticks: start_ticks(child.id()),
        program: program.to_path_buf(),
        log: log.to_path_buf(),
    })
}

/// The exit code with which ssh says it could not run the command (as opposed to the command's own).
const SSH_FAILED: i32 = 255;

/// Runs `command` on `host` through ssh (no password prompt, 10 s to connect), `input` on its standard input.
fn ssh_output(host: &str, command: &str, input: Option<&str>) -> Result<std::process::Output, Failed> {
    let mut child = Command::new("ssh")
        .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", host, command])
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failed::because("cannot run ssh", e))?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        use std::io::Write;
        // ssh may end before reading (a host it cannot reach): its exit status says why.
        let _ = stdin.write_all(input.as_bytes());
    }
    child
        .wait_with_output()
        .map_err(|e| Failed::because("cannot run ssh", e))
}

/// Runs `command` on `host` through ssh and returns its output; fails when it or ssh failed.
fn ssh(host: &str, command: &str, input: Option<&str>) -> Result<String, Failed> {
    let output = ssh_output(host, command, input)?;
    if !output.status.success() {
        return Err(Failed::new(format!(
            "ssh {host}: {} ({})",
            String::from_utf8_lossy(&output.stderr).trim(),
            output.status
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Starts `program role args…` on `host` through ssh, detached (`nohup`), its output to `log` there, with the
/// fleet's `secret` in its environment (sent through ssh's input, so no command line shows it), under umask 077
/// (its log, state and work folders and shuffle files are the fleet user's alone: its folder is refused when
/// another user owns it and made mode 700 when it was not, its log made anew). The program
/// must be at the same path on that host, as Spark's scripts expect the same installation on every worker.
pub fn spawn_remote(
    host: &str,
    program: &Path,
    role: &str,
    args: &[String],
    log: &Path,
    secret: &ClusterSecret,
) -> Result<Started, Failed> {
    let directory = log.parent().unwrap_or(Path::new("."));
    let command = format!(
        "umask 077 && IFS= read -r {SECRET_ENV} && export {SECRET_ENV} && mkdir -p {dir} && \
         {{ [ -O {dir} ] || {{ echo hearth: the folder {dir} belongs to another user >&2; exit 1; }}; }} && \
         chmod 700 {dir} && rm -f {log} && {{ nohup {program} {role} {args} > {log} 2>&1 < /dev/null & echo $!; }}",
        dir = quoted(&directory.display().to_string()),
        program = quoted(&program.display().to_string()),
        args = args.iter().map(|a| quoted(a)).collect::<Vec<_>>().join(" "),
        log = quoted(&log.display().to_string()),
    );
    let answer = ssh(host, &command, Some(&format!("{}\n", secret.expose())))?;
    let pid = answer.trim().parse().map_err(|_| {
        Failed::new(format!(
            "ssh {host}: expected the new process's id, got {:?}",
            answer.trim()
        ))
    })?;
    Ok(Started {
        role: role.to_string(),
        ssh_host: Some(host.to_string()),
        pid,
        start_ticks: None,
        program: program.to_path_buf(),
        log: log.to_path_buf(),
    })
}

impl Started {
    /// Whether it still runs — checked by its pid, and on Linux by its command line and start time, so a
    /// pid reused by another process does not count. A host ssh cannot reach counts as running: nothing
    /// says it stopped.
    pub fn alive(&self) -> bool {
        match &self.ssh_host {
            None => local_alive(self.pid, &self.program, self.start_ticks),
            Some(host) => ssh_output(host, &format!("kill -0 {}", self.pid), None)
                .is_ok_and(|output| output.status.success() || output.status.code() == Some(SSH_FAILED)),
        }
    }

    /// Sends it SIGTERM, or SIGKILL to its whole process group when `force` (on this machine, where it
    /// leads its group: the drivers a scheduler started go with it).
    fn signal(&self, force: bool) -> Result<(), Failed> {
        let signal = if force { Signal::SIGKILL } else { Signal::SIGTERM };
        let pid = match force {
            true => -(self.pid as i32),
            false => self.pid as i32,
        };
        match &self.ssh_host {
            None => match kill(Pid::from_raw(pid), signal) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
                Err(e) => Err(Failed::because(format!("{} (pid {})", self.role, self.pid), e)),
            },
            Some(host) => ssh(
                host,
                &format!("kill -{} {}", signal.as_str().trim_start_matches("SIG"), self.pid),
                None,
            )
            .map(|_| ()),
        }
    }

    /// Asks it to stop and waits up to `grace`; then kills it. Returns whether it had to be killed.
    pub fn stop(&self, grace: Duration) -> Result<bool, Failed> {
        if !self.alive() {
            return Ok(false);
        }
        self.signal(false)?;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if !self.alive() {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.signal(true)?;
        Ok(true)
    }

    /// The last `lines` lines of its output: read here, or through ssh on its host.
    pub fn log_tail(&self, lines: usize) -> String {
        if let Some(host) = &self.ssh_host {
            let command = format!("tail -n {lines} {}", quoted(&self.log.display().to_string()));
            return ssh(host, &command, None).map_or_else(
                |e| format!("(its log is {} on {host}; {e})", self.log.display()),
                |text| text.trim_end().to_string(),
            );
        }
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// When process `pid` of this machine started, in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces: state is field 3.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether process `pid` runs `program` on this machine and, when known, started at `started` (a zombie
/// does not count).
fn local_alive(pid: u32, program: &Path, started: Option<u64>) -> bool {
    if kill(Pid::from_raw(pid as i32), None).is_err() {
        return false;
    }
    let proc = PathBuf::from(format!("/proc/{pid}"));
    if !proc.exists() {
        return true;
    }
    let zombie = std::fs::read_to_string(proc.join("stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(false);
    // A process that has only just started may not show its command line yet.
    let runs_program = std::fs::read(proc.join("cmdline")).is_ok_and(|cmdline| {
        cmdline.is_empty() || cmdline.split(|&b| b == 0).next() == Some(program.as_os_str().as_encoded_bytes())
    });
    let same_start = started.is_none() || start_ticks(pid).is_none_or(|ticks| Some(ticks) == started);
    !zombie && runs_program && same_start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_for_the_shell() {
        assert_eq!(quoted("plain"), "'plain'");
        assert_eq!(quoted("it's here"), r"'it'\''s here'");
    }

    #[test]
    fn a_local_process_is_started_seen_and_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let sleep = PathBuf::from("/bin/sleep");
        let started = spawn_local(&sleep, "30", &[], &[], &dir.path().join("sleep.log")).unwrap();
        assert!(started.alive());
        // Once it runs sleep (not the moment between fork and exec), another program's pid is not ours.
        let deadline = Instant::now() + Duration::from_secs(5);
        let cmdline = format!("/proc/{}/cmdline", started.pid);
        while !std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"/bin/sleep")) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!local_alive(started.pid, Path::new("/bin/true"), started.start_ticks));
        // Nor is a process that started at another time with the same pid.
        let earlier = started.start_ticks.map(|ticks| ticks - 1);
        assert!(started.start_ticks.is_some());
        assert!(!local_alive(started.pid, &sleep, earlier));
        assert!(!started.stop(Duration::from_secs(5)).unwrap(), "SIGTERM stops sleep");
        let deadline = Instant::now() + Duration::from_secs(5);
        while started.alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!started.alive());
    }
}
