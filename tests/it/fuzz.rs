//! Property tests of every parser that takes outside bytes: each gets real inputs mutated at random (bytes
//! flipped, inserted, deleted, cut short; JSON values replaced or removed) and must answer with a value or
//! an error — never a panic, never an error that hides one. `HEARTH_FUZZ_CASES` sets the inputs per parser
//! (default 128; RELIABILITY.md records a long run).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
use hearth::collective::{Coordinator, JobSecret, Registration, register};
use hearth::datasets::german_credit;
use hearth::exec::codec::HearthPhysicalCodec;
use hearth::exec::extension::Extensions;
use hearth::prelude::{CsvOptions, DefaultFeatures, HearthError, Pipeline, PipelineModel, Session};
use hearth::sql::parse_statements;
use hearth::torch::artifact::ModelArtifact;
use hearth::torch::model::{ModelSpec, Network};
use hearth::torch::train::{Checkpoint, TrainOptions, TrainSettings};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

/// Inputs tried per parser.
fn cases() -> u32 {
    std::env::var("HEARTH_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(128)
}

/// Runs `check` on `cases()` inputs drawn from `inputs`, and says how many were tried.
fn fuzz<S: Strategy>(parser: &str, inputs: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let tried = std::sync::atomic::AtomicUsize::new(0);
    let outcome = runner.run(&inputs, |input| {
        tried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        check(input)
    });
    println!(
        "fuzz {parser}: {} inputs tried, {} panics",
        tried.into_inner(),
        usize::from(outcome.is_err())
    );
    if let Err(failure) = outcome {
        panic!("{parser}: {failure}");
    }
}

/// An error message must not be a panic caught on the way (a task's, a thread's).
fn no_hidden_panic(message: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        !message.to_lowercase().contains("panick"),
        "a panic became an error: {message}"
    );
    Ok(())
}

/// `seed` with one to eight byte edits: a byte replaced, removed or inserted, or the rest cut off.
fn mutated_bytes(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((any::<Index>(), 0u8..4, any::<u8>()), 1..8).prop_map(move |edits| {
        let mut bytes = seed.clone();
        for (at, kind, byte) in edits {
            if bytes.is_empty() {
                bytes.push(byte);
                continue;
            }
            let i = at.index(bytes.len());
            match kind {
                0 => bytes[i] = byte,
                1 => {
                    bytes.remove(i);
                }
                2 => bytes.insert(i, byte),
                _ => bytes.truncate(i),
            }
        }
        bytes
    })
}

/// Values that break assumptions: wrong types, empty, negative, huge, fractional.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(serde_json::json!(-1)),
        Just(serde_json::json!(0)),
        Just(serde_json::json!(1e300)),
        Just(serde_json::json!(u64::MAX)),
        Just(serde_json::json!(0.5)),
        Just(serde_json::json!("")),
        Just(serde_json::json!("x")),
        Just(serde_json::json!([])),
        Just(serde_json::json!([1, "a", null])),
        Just(serde_json::json!({})),
        Just(serde_json::json!(true)),
    ]
}

/// Every JSON pointer in `value`.
fn pointers(value: &Value, at: String, all: &mut Vec<String>) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            let key = k.replace('~', "~0").replace('/', "~1");
            pointers(v, format!("{at}/{key}"), all);
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| pointers(v, format!("{at}/{i}"), all)),
        _ => {}
    }
    all.push(at);
}

/// `seed` (a JSON document) with one to four values replaced by odd ones or removed.
fn mutated_json(seed: &str) -> impl Strategy<Value = String> + use<> {
    let document: Value = serde_json::from_str(seed).expect("the seed is JSON");
    prop::collection::vec((any::<Index>(), odd_value(), any::<bool>()), 1..4).prop_map(move |edits| {
        let mut document = document.clone();
        for (at, odd, remove) in edits {
            let mut all = Vec::new();
            pointers(&document, String::new(), &mut all);
            let pointer = &all[at.index(all.len())];
            let Some((parent, key)) = pointer.rsplit_once('/') else {
                document = odd;
                continue;
            };
            match document.pointer_mut(parent) {
                Some(Value::Object(map)) if remove => {
                    map.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(items)) if remove => {
                    let i: usize = key.parse().unwrap_or(0);
                    if i < items.len() {
                        items.remove(i);
                    }
                }
                _ => {
                    if let Some(slot) = document.pointer_mut(pointer) {
                        *slot = odd;
                    }
                }
            }
        }
        document.to_string()
    })
}

/// Either a mutated `seed` or a document of edits: both kinds of damage a file meets.
fn damaged_json(seed: &str) -> impl Strategy<Value = Vec<u8>> + use<> {
    prop_oneof![
        mutated_json(seed).prop_map(String::into_bytes),
        mutated_bytes(seed.as_bytes().to_vec())
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A copy of the directory `from` at `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn pipeline_json_loads_or_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("pipeline");
    german_credit::preprocessing().save(&saved).unwrap();
    let seed = std::fs::read_to_string(saved.join("pipeline.json")).unwrap();
    let file = dir.path().join("damaged.json");
    fuzz("pipeline.json (Pipeline)", damaged_json(&seed), |bytes| {
        std::fs::write(&file, bytes).unwrap();
        if let Err(e) = Pipeline::load(&file) {
            no_hidden_panic(&e.to_string())?;
        }
        Ok(())
    });
}

#[test]
fn a_fitted_pipeline_loads_or_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("model");
    runtime().block_on(async {
        let session = Session::builder().with_default_features().local(2);
        let raw = session
            .read_csv(german_credit::csv_path(), &CsvOptions::new())
            .await
            .unwrap();
        let (model, _) = german_credit::preprocessing().fit_transform(&raw).await.unwrap();
        model.save(&saved).unwrap();
    });
    // Every JSON file of the saved model, damaged one at a time in a fresh copy.
    let mut files: Vec<PathBuf> = Vec::new();
    let mut pending = vec![saved.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => pending.push(path),
                false if path.extension().is_some_and(|e| e == "json") => files.push(path),
                false => {}
            }
        }
    }
    files.sort();
    let copy = dir.path().join("copy");
    let seeds: Vec<(PathBuf, String)> = files
        .iter()
        .map(|f| {
            (
                f.strip_prefix(&saved).unwrap().to_path_buf(),
                std::fs::read_to_string(f).unwrap(),
            )
        })
        .collect();
    let inputs = (0..seeds.len()).prop_flat_map(|i| (Just(i), damaged_json(&seeds[i].1)));
    fuzz("PipelineModel files", inputs, |(i, bytes)| {
        let _ = std::fs::remove_dir_all(&copy);
        copy_dir(&saved, &copy);
        std::fs::write(copy.join(&seeds[i].0), bytes).unwrap();
        if let Err(e) = PipelineModel::load(&copy) {
            no_hidden_panic(&e.to_string())?;
        }
        Ok(())
    });
}

fn small_artifact() -> ModelArtifact {
    let spec = ModelSpec::Linear { inputs: 3, outputs: 2 };
    let network = Network::new(&spec, tch::Device::Cpu, 1).unwrap();
    ModelArtifact::from_network(TrainOptions::new(spec, TrainSettings::default()), &network, vec![]).unwrap()
}

#[test]
fn a_model_artifact_loads_or_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("model");
    small_artifact().save(&saved).unwrap();
    let json = std::fs::read_to_string(saved.join("model.json")).unwrap();
    let weights = std::fs::read(saved.join("model.safetensors")).unwrap();
    let copy = dir.path().join("copy");
    let inputs = prop_oneof![
        damaged_json(&json).prop_map(|b| ("model.json", b)),
        mutated_bytes(weights.clone()).prop_map(|b| ("model.safetensors", b)),
    ];
    fuzz("model.json and model.safetensors", inputs, |(file, bytes)| {
        let _ = std::fs::remove_dir_all(&copy);
        copy_dir(&saved, &copy);
        std::fs::write(copy.join(file), bytes).unwrap();
        match ModelArtifact::load(&copy) {
            // Whatever loads must be usable or refuse cleanly.
            Ok(artifact) => {
                if let Err(e) = artifact.predict(&[0.5, -1.0, 2.0], 1) {
                    no_hidden_panic(&e.to_string())?;
                }
            }
            Err(e) => {
                let message = e.to_string();
                no_hidden_panic(&message)?;
                prop_assert!(message.contains(file), "the error does not name {file}: {message}");
            }
        }
        Ok(())
    });
}

#[test]
fn model_and_checkpoint_bytes_decode_or_fail_cleanly() {
    let bytes = small_artifact().to_bytes().unwrap();
    fuzz("model bytes (safetensors)", mutated_bytes(bytes), |bytes| {
        if let Err(e) = ModelArtifact::from_bytes(&bytes) {
            no_hidden_panic(&e.to_string())?;
        }
        let _ = ModelArtifact::options_from_bytes(&bytes);
        if let Err(e) = Checkpoint::from_bytes(&bytes) {
            no_hidden_panic(&e.to_string())?;
        }
        Ok(())
    });
}

/// CSV-ish text: fields, quotes, separators, line ends and multi-byte characters in any order.
fn csv_text() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("a"),
        Just("17"),
        Just("-3.5e2"),
        Just(","),
        Just(","),
        Just("\n"),
        Just("\r\n"),
        Just("\""),
        Just(" "),
        Just("é"),
        Just(""),
        Just("NaN"),
        Just("#"),
        Just("\t"),
    ];
    prop::collection::vec(pieces, 0..60).prop_map(|p| p.concat())
}

#[test]
fn csv_reads_or_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fuzz.csv");
    let rt = runtime();
    let session = Session::builder().with_default_features().local(2);
    let credit = std::fs::read(german_credit::csv_path()).unwrap();
    let head: Vec<u8> = credit.split(|&b| b == b'\n').take(6).collect::<Vec<_>>().join(&b'\n');
    let inputs = prop_oneof![csv_text().prop_map(String::into_bytes), mutated_bytes(head)];
    fuzz("CSV files", inputs, |bytes| {
        std::fs::write(&file, &bytes).unwrap();
        let outcome = rt.block_on(async {
            let df = session.read_csv(&file, &CsvOptions::new()).await?;
            df.collect().await.map_err(HearthError::from)
        });
        if let Err(e) = outcome {
            no_hidden_panic(&e.to_string())?;
        }
        Ok(())
    });
}

#[test]
fn sql_scripts_parse_or_fail_cleanly() {
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let scripts: Vec<Vec<u8>> = ["german_credit.sql", "credit_tuning.sql", "credit_segments.sql"]
        .iter()
        .map(|name| std::fs::read(examples.join(name)).unwrap())
        .collect();
    let inputs = (0..scripts.len()).prop_flat_map(move |i| mutated_bytes(scripts[i].clone()));
    fuzz("SQL statements", inputs, |bytes| {
        if let Err(e) = parse_statements(&String::from_utf8_lossy(&bytes)) {
            no_hidden_panic(&e.to_string())?;
        }
        Ok(())
    });
}

#[test]
fn plan_envelopes_decode_or_fail_cleanly() {
    let spec = serde_json::json!({
        "function": "hearth.train",
        "args": "{}",
        "world_size": 2,
        "coordinator": "127.0.0.1:9",
        "secret": JobSecret::generate().to_hex(),
        "timeout_secs": 30.0,
        "job": "job-fuzz",
        "gpus_per_task": 0,
        "frame_protection": "integrity"
    })
    .to_string();
    let mut envelope = vec![1u8];
    envelope.extend_from_slice(spec.as_bytes());
    let inputs = prop_oneof![
        mutated_json(&spec).prop_map(|json| [&[1u8][..], json.as_bytes()].concat()),
        mutated_bytes(envelope),
        prop::collection::vec(any::<u8>(), 0..64),
    ];
    let codec = HearthPhysicalCodec::new(&Extensions::default());
    let input: Arc<dyn ExecutionPlan> =
        Arc::new(EmptyExec::new(Arc::new(datafusion::arrow::datatypes::Schema::empty())));
    let context = TaskContext::default();
    fuzz("plan envelopes (codec)", inputs, |bytes| {
        let decoded = codec.try_decode(
            &bytes,
            &[Arc::clone(&input)],
            &context,
            &DefaultPhysicalProtoConverter {},
        );
        if let Err(e) = decoded {
            no_hidden_panic(&e.to_string())?;
        }
        Ok(())
    });
}

#[test]
fn the_coordinator_survives_garbage_and_still_admits_a_rank() {
    let secret = JobSecret::generate();
    let coordinator = Coordinator::start(
        "127.0.0.1:0".parse().unwrap(),
        1,
        secret.clone(),
        Duration::from_secs(60),
    )
    .unwrap();
    let address = coordinator.address();
    fuzz(
        "collective handshakes (garbage to the coordinator)",
        prop::collection::vec(any::<u8>(), 0..200),
        |bytes| {
            use std::io::{Read, Write};
            let mut stream = std::net::TcpStream::connect(address).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let _ = stream.write_all(&bytes);
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
            // The coordinator sends its nonce and protection, then closes on garbage: nothing more.
            prop_assert!(answer.len() <= 33, "answered garbage with {} bytes", answer.len());
            Ok(())
        },
    );
    let registration = Registration {
        listen: "127.0.0.1:1".parse().unwrap(),
        host: "fuzz".to_string(),
        devices: vec!["cpu".to_string()],
        position: 0,
        process: None,
    };
    let (rank, peers) = register(address, &secret, &registration, Duration::from_secs(20)).unwrap();
    assert_eq!((rank, peers.len()), (0, 1));
}
