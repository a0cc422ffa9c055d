//! Inputs in object stores: `hearth fit-transform` reading CSV and Parquet over HTTP and from an S3-compatible
//! store (its endpoint and keys from the `AWS_*` variables, as MinIO is used), both served by a small HTTP
//! server on loopback that answers what the stores ask of a single object: `HEAD`, and `GET` of a byte range.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::common::{dataset, hearth, shown};

/// Files under a directory served over HTTP/1.1 at `127.0.0.1:<port>`, until dropped.
struct ObjectServer {
    port: u16,
    stop: Arc<AtomicBool>,
    accepting: Option<JoinHandle<()>>,
}

impl ObjectServer {
    fn serve(root: &Path) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let (root, stopped) = (root.to_path_buf(), Arc::clone(&stop));
        let accepting = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let root = root.clone();
                std::thread::spawn(move || answer(stream, &root));
            }
        });
        Self {
            port,
            stop,
            accepting: Some(accepting),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for ObjectServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
    }
}

/// Answers one connection's requests until the client closes it or goes quiet for 10 s.
fn answer(stream: TcpStream, root: &Path) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request).unwrap_or(0) == 0 {
            return;
        }
        let mut range: Option<(u64, Option<u64>)> = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("range")
                && let Some((from, to)) = value.trim().trim_start_matches("bytes=").split_once('-')
            {
                range = Some((from.parse().unwrap(), to.parse().ok()));
            }
        }
        let mut words = request.split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or("/"));
        let path = target.split('?').next().unwrap_or("/").trim_start_matches('/');
        let response = match std::fs::read(root.join(path)) {
            Ok(bytes) => {
                let size = bytes.len() as u64;
                let (status, body, extra) = match range {
                    Some((from, to)) => {
                        let to = to.unwrap_or(size - 1).min(size - 1);
                        let body = bytes[from as usize..=to as usize].to_vec();
                        (
                            "206 Partial Content",
                            body,
                            format!("Content-Range: bytes {from}-{to}/{size}\r\n"),
                        )
                    }
                    None => ("200 OK", bytes, String::new()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nLast-Modified: Thu, 26 Nov 2026 12:00:00 GMT\r\n\
                     ETag: \"{size}\"\r\nAccept-Ranges: bytes\r\n{extra}\r\n",
                    if method == "HEAD" { size } else { body.len() as u64 }
                );
                let mut response = head.into_bytes();
                if method != "HEAD" {
                    response.extend_from_slice(&body);
                }
                response
            }
            Err(_) => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        };
        if writer.write_all(&response).is_err() {
            return;
        }
    }
}

const PIPELINE: &str = r#"{"format": "Pipeline", "version": 1, "uid": "objects", "stages": [
    {"class": "StringIndexer", "inputCols": ["purpose"], "outputCols": ["p"]},
    {"class": "OneHotEncoder", "inputCols": ["p"], "outputCols": ["p_vec"]},
    {"class": "VectorAssembler", "inputCols": ["p_vec", "age", "duration"], "outputCol": "raw"},
    {"class": "StandardScaler", "inputCol": "raw", "outputCol": "features", "withMean": true}]}"#;

/// Runs `hearth fit-transform` of the pipeline on `input` with `env`, writing `features,class` to `out`.
fn fit_transform(dir: &Path, input: &str, out: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let spec = dir.join("pipeline.json");
    std::fs::write(&spec, PIPELINE).unwrap();
    let model = dir.join(format!("model-{}", out.file_name().unwrap().to_string_lossy()));
    hearth()
        .envs(env.iter().copied())
        .args(["--master", "local[2]", "fit-transform"])
        .arg(&spec)
        .arg(input)
        .arg(&model)
        .args(["--select", "features,class", "--output"])
        .arg(out)
        .output()
        .unwrap()
}

/// The `wrote N rows to …` line a run printed.
fn rows_written(output: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    text.lines()
        .find(|line| line.starts_with("wrote"))
        .unwrap_or_default()
        .to_string()
}

/// The Parquet part files in `dir`, by name.
fn part_files(dir: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "parquet"))
        .collect();
    parts.sort();
    parts
}

/// The bytes of each part file in `dir`, in order.
fn part_sizes(dir: &Path) -> Vec<u64> {
    part_files(dir)
        .iter()
        .map(|part| std::fs::metadata(part).unwrap().len())
        .collect()
}

#[test]
fn inputs_are_read_over_http_and_from_an_s3_compatible_store() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir_all(served.join("bucket")).unwrap();
    std::fs::copy(dataset("german_credit/credit-g.csv"), served.join("credit-g.csv")).unwrap();
    std::fs::copy(
        dataset("german_credit/credit-g.csv"),
        served.join("bucket/credit-g.csv"),
    )
    .unwrap();
    let server = ObjectServer::serve(&served);

    // The same job on the local file and on the file over HTTP writes the same features.
    let local = dir.path().join("local");
    let run = fit_transform(
        dir.path(),
        dataset("german_credit/credit-g.csv").to_str().unwrap(),
        &local,
        &[],
    );
    assert!(run.status.success(), "{}", shown(&run));
    let over_http = dir.path().join("http");
    let url = format!("{}/credit-g.csv", server.url());
    let run = fit_transform(dir.path(), &url, &over_http, &[]);
    assert!(run.status.success(), "{}", shown(&run));
    assert!(rows_written(&run).starts_with("wrote 1000 rows"), "{}", shown(&run));
    assert_eq!(part_sizes(&over_http), part_sizes(&local));

    // S3's protocol, path-style, at the endpoint and with the keys the AWS variables give.
    let endpoint = server.url();
    let aws = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "hearth-test"),
        ("AWS_SECRET_ACCESS_KEY", "hearth-test-secret"),
        ("AWS_REGION", "us-east-1"),
    ];
    let from_s3 = dir.path().join("s3");
    let run = fit_transform(dir.path(), "s3://bucket/credit-g.csv", &from_s3, &aws);
    assert!(run.status.success(), "{}", shown(&run));
    assert!(rows_written(&run).starts_with("wrote 1000 rows"), "{}", shown(&run));

    // Parquet over HTTP: the raw columns written by a transform, served, and fitted on again.
    let raw = dir.path().join("raw");
    let model = dir.path().join("model-local");
    let written = hearth()
        .args(["--master", "local[1]", "transform"])
        .arg(&model)
        .arg(dataset("german_credit/credit-g.csv"))
        .args(["--select", "purpose,age,duration,class", "--output"])
        .arg(&raw)
        .output()
        .unwrap();
    assert!(written.status.success(), "{}", shown(&written));
    let raw_parts = part_files(&raw);
    assert_eq!(raw_parts.len(), 1, "one partition, one part file");
    std::fs::copy(&raw_parts[0], served.join("credit.parquet")).unwrap();
    let from_parquet = dir.path().join("parquet");
    let run = fit_transform(
        dir.path(),
        &format!("{}/credit.parquet", server.url()),
        &from_parquet,
        &[],
    );
    assert!(run.status.success(), "{}", shown(&run));
    assert!(rows_written(&run).starts_with("wrote 1000 rows"), "{}", shown(&run));

    // What cannot be read is named: a scheme without a store, an object that is not there.
    let run = fit_transform(dir.path(), "ftp://127.0.0.1/credit-g.csv", &dir.path().join("ftp"), &[]);
    assert_eq!(run.status.code(), Some(1), "{}", shown(&run));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("no object store for ftp://"),
        "{}",
        shown(&run)
    );
    let missing = format!("{}/missing.csv", server.url());
    let run = fit_transform(dir.path(), &missing, &dir.path().join("missing"), &[]);
    assert_eq!(run.status.code(), Some(1), "{}", shown(&run));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains(&format!("{missing}: reading it from its object store")),
        "{}",
        shown(&run)
    );
    assert!(!dir.path().join("missing").exists());
}
