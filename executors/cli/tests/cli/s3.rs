//! The S3-compatible server of the fleet tests: moto's server mode, which `scripts/s3.sh` installs into
//! hearth's cache, started by `scripts/s3_server.py` on an address the test names (inside a lab's namespace
//! where the test runs a lab) and a port the system picks. The server lives as long as its standard input:
//! it stops when the test drops it, or dies.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{repository, shown};

/// The keys the tests give hearth's processes: moto takes any.
pub const ACCESS_KEY: (&str, &str) = ("AWS_ACCESS_KEY_ID", "hearth-test");
/// The secret key that goes with [`ACCESS_KEY`].
pub const SECRET_KEY: (&str, &str) = ("AWS_SECRET_ACCESS_KEY", "hearth-test-secret");

/// A running S3-compatible server, stopped when dropped.
pub struct S3Server {
    child: Child,
    /// Its standard input: closing it stops the server.
    stdin: Option<ChildStdin>,
    /// Its URL, `http://HOST:PORT`.
    pub endpoint: String,
}

/// The Python that runs the server, installed once per machine (by `scripts/s3.sh`), once per test run.
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let installed = Command::new(repository().join("scripts/s3.sh")).output().unwrap();
        assert!(installed.status.success(), "scripts/s3.sh: {}", shown(&installed));
        String::from_utf8_lossy(&installed.stdout).trim().to_string()
    })
}

impl S3Server {
    /// A server on `host`, run through `wrap` (a command prefix such as `ip netns exec NAME`; empty: here),
    /// with `buckets` made and each `(url, file)` of `puts` uploaded (`s3://BUCKET/KEY`).
    pub fn start(wrap: &[String], host: &str, buckets: &[&str], puts: &[(&str, &Path)]) -> S3Server {
        let mut command = wrapped(wrap, python());
        command.arg(repository().join("scripts/s3_server.py")).arg(host);
        for bucket in buckets {
            command.args(["--bucket", bucket]);
        }
        for (url, file) in puts {
            command.arg("--put").arg(format!("{url}={}", file.display()));
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (found, listening) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(endpoint) = line.strip_prefix("s3 server listening on ") {
                    let _ = found.send(endpoint.to_string());
                }
            }
        });
        let mut server = S3Server {
            child,
            stdin,
            endpoint: String::new(),
        };
        // A minute to start, and a second more for every 50 MiB it uploads first.
        let bytes: u64 = puts
            .iter()
            .map(|(_, file)| file.metadata().map_or(0, |m| m.len()))
            .sum();
        let start = Duration::from_secs(60 + bytes / (50 << 20));
        server.endpoint = listening
            .recv_timeout(start)
            .unwrap_or_else(|_| panic!("the S3 server did not start within {start:?}"));
        server
    }

    /// The variables that point a driver at this server: its endpoint, plain HTTP, a region and the keys.
    pub fn driver_env(&self) -> Vec<(String, String)> {
        let mut env = credentials();
        env.push(("AWS_ENDPOINT_URL".into(), self.endpoint.clone()));
        env.push(("AWS_ALLOW_HTTP".into(), "true".into()));
        env.push(("AWS_REGION".into(), "us-east-1".into()));
        env
    }

    /// The keys of the objects in `bucket` under `prefix`, asked of the server over its REST API (a listing
    /// needs no signature from moto) from this process, which must reach its address.
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let address = self.endpoint.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let request = format!(
            "GET /{bucket}?list-type=2&prefix={prefix} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(
            response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200"),
            "{response}"
        );
        response
            .split("<Key>")
            .skip(1)
            .filter_map(|rest| rest.split_once("</Key>").map(|(key, _)| key.to_string()))
            .collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The keys alone, as an executor's or a scheduler's own environment holds them (not where the store is).
pub fn credentials() -> Vec<(String, String)> {
    [ACCESS_KEY, SECRET_KEY]
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// `program` run through the command prefix `wrap`.
fn wrapped(wrap: &[String], program: &str) -> Command {
    match wrap.split_first() {
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(program);
            command
        }
        None => Command::new(program),
    }
}
