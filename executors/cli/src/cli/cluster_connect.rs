//! `hearth cluster start --connect`: a Spark Connect server beside the fleet's scheduler, as Spark's
//! `start-connect-server.sh` starts one beside a standalone master. It is `hearth connect` on the fleet's
//! master, started with the fleet's secret and TLS, its clients admitted with a token kept in the state
//! directory (readable by its owner alone), and stopped with the fleet.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use hearth_exec::ballista::ClusterSecret;

use super::failed::Failed;
use super::processes::{Started, spawn_local};

/// The token PySpark clients of the fleet's Spark Connect server give (`sc://HOST:PORT/;token=…`), in the
/// state directory.
pub const CONNECT_TOKEN_FILE: &str = "connect-token";

/// What `hearth connect` prints once it listens, before its URL.
const LISTENING: &str = "hearth Spark Connect server on ";

/// How the fleet's Spark Connect server is started.
pub struct ConnectLaunch<'a> {
    /// The `hearth` program.
    pub program: &'a Path,
    /// The fleet's state directory.
    pub dir: &'a Path,
    /// The fleet's master URL.
    pub master: &'a str,
    /// Where the server listens.
    pub bind: SocketAddr,
    /// The fleet's secret and TLS, as its processes find them.
    pub env: &'a [(&'a str, String)],
    /// The fleet's TLS directory, whose scheduler certificate the server speaks TLS with.
    pub tls: Option<&'a Path>,
    /// Whether the fleet was started `--insecure` (a non-loopback server then speaks plain gRPC).
    pub insecure: bool,
}

impl ConnectLaunch<'_> {
    /// Writes a new token and starts the server; [`connect_url`] then says when it listens.
    pub fn spawn(&self) -> Result<Started, Failed> {
        let token = self.dir.join(CONNECT_TOKEN_FILE);
        // A fresh random key in a file its owner alone reads, written whole: what the cluster secret is.
        ClusterSecret::create(&token).map_err(|e| Failed::because("writing the Spark Connect token", e))?;
        let mut args = vec![
            "--master".to_string(),
            self.master.to_string(),
            "--bind".to_string(),
            self.bind.to_string(),
            "--token-file".to_string(),
            token.display().to_string(),
        ];
        if let Some(tls) = self.tls {
            args.extend(["--tls-dir".to_string(), tls.display().to_string()]);
        }
        if self.insecure {
            args.push("--insecure".to_string());
        }
        let log = self.dir.join("logs").join("connect.log");
        spawn_local(self.program, "connect", &args, self.env, &log)
    }
}

/// The URL clients connect to, once `server` prints it (within `timeout`).
pub async fn await_connect_url(server: &Started, timeout: Duration) -> Result<String, Failed> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(url) = connect_url(&server.log) {
            return Ok(url);
        }
        if !server.alive() {
            return Err(Failed::new(format!(
                "the Spark Connect server stopped before it listened; its log ({}) ends:\n{}",
                server.log.display(),
                server.log_tail(20)
            )));
        }
        if Instant::now() >= deadline {
            return Err(Failed::new(format!(
                "the Spark Connect server did not listen within {timeout:?}; its log is {}",
                server.log.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `sc://…` URL a Spark Connect server printed in its log `log`, if it has.
pub fn connect_url(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().find_map(|line| line.strip_prefix(LISTENING))?;
    line.split_whitespace().next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_read_from_the_line_the_server_prints() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("connect.log");
        std::fs::write(&log, "[INFO] starting\n").unwrap();
        assert_eq!(connect_url(&log), None);
        std::fs::write(
            &log,
            "[INFO] starting\nhearth Spark Connect server on sc://localhost:41234/;token=… (master df://127.0.0.1:5)\n",
        )
        .unwrap();
        assert_eq!(connect_url(&log).as_deref(), Some("sc://localhost:41234/;token=…"));
    }
}
