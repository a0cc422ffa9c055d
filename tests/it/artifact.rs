//! The model artifact: saved weights load back into hearth and into PyTorch (through the Python `torch` and
//! `safetensors` that the libtorch install provides), and both compute the same outputs.

use std::path::PathBuf;
use std::process::Command;

use hearth::torch::artifact::ModelArtifact;
use hearth::torch::model::{Activation, Layer, ModelSpec, Network};
use hearth::torch::train::{TrainOptions, TrainSettings};

fn artifact_of(spec: ModelSpec) -> ModelArtifact {
    let network = Network::new(&spec, tch::Device::Cpu, 3).unwrap();
    let options = TrainOptions::new(spec, TrainSettings::default());
    ModelArtifact::from_network(options, &network, Vec::new()).unwrap()
}

/// PyTorch's outputs for `rows` through the artifact in `dir`.
fn pytorch_outputs(dir: &std::path::Path, rows: &[Vec<f32>]) -> Vec<f32> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/artifact.py");
    let output = Command::new("python3")
        .arg(script)
        .arg(dir)
        .arg(serde_json::to_string(rows).unwrap())
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "python3 with torch and safetensors is needed (./dev test provides it): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let missing: Vec<String> = serde_json::from_value(answer["missing"].clone()).unwrap();
    assert!(
        missing.iter().all(|k| k.ends_with("num_batches_tracked")),
        "PyTorch lacks {missing:?}"
    );
    assert_eq!(
        answer["unexpected"],
        serde_json::json!([]),
        "hearth saved tensors PyTorch does not know"
    );
    serde_json::from_value(answer["outputs"].clone()).unwrap()
}

#[test]
fn pytorch_computes_what_hearth_computes_from_the_saved_weights() {
    let specs = [
        ModelSpec::Mlp {
            inputs: 16,
            hidden: vec![12, 6],
            outputs: 3,
            activation: Activation::Tanh,
            dropout: 0.2,
        },
        ModelSpec::Sequential {
            input_shape: vec![1, 4, 4],
            layers: vec![
                Layer::Conv2d {
                    filters: 2,
                    kernel: 3,
                    stride: 1,
                    padding: 1,
                },
                Layer::BatchNorm,
                Layer::Relu,
                Layer::MaxPool2d {
                    kernel: 2,
                    stride: None,
                },
                Layer::Flatten,
                Layer::Dense { units: 3 },
            ],
        },
    ];
    let rows: Vec<Vec<f32>> = (0..3)
        .map(|r| (0..16).map(|i| ((r * 16 + i) % 7) as f32 / 3.0 - 1.0).collect())
        .collect();
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    for spec in specs {
        let artifact = artifact_of(spec);
        let dir = tempfile::tempdir().unwrap();
        artifact.save(dir.path()).unwrap();
        let loaded = ModelArtifact::load(dir.path()).unwrap();
        assert_eq!(loaded.tensors, artifact.tensors);
        let ours = loaded.predict(&flat, rows.len()).unwrap();
        let theirs = pytorch_outputs(dir.path(), &rows);
        assert_eq!(ours.len(), theirs.len());
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1.0),
                "output {i}: hearth {a}, PyTorch {b}"
            );
        }
    }
}

#[test]
fn a_damaged_artifact_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let error = ModelArtifact::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("model.json"), "{error}");
    artifact_of(ModelSpec::Linear { inputs: 2, outputs: 1 })
        .save(dir.path())
        .unwrap();
    std::fs::write(dir.path().join("model.safetensors"), b"garbage").unwrap();
    let error = ModelArtifact::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("model.safetensors"), "{error}");
}

#[test]
fn a_damaged_artifact_names_the_file_and_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("model");
    let artifact = artifact_of(ModelSpec::Linear { inputs: 3, outputs: 2 });
    artifact.save(&saved).unwrap();
    let again = artifact.save(&saved).unwrap_err().to_string();
    assert!(
        again.contains("already exists") && again.contains("overwrite(dir)"),
        "{again}"
    );
    artifact.overwrite(&saved).unwrap();
    let load_error = || ModelArtifact::load(&saved).unwrap_err().to_string();

    let weights = saved.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() - 5]).unwrap();
    let truncated = load_error();
    println!("{truncated}");
    assert!(
        truncated.contains("model.safetensors") && truncated.contains("truncated"),
        "{truncated}"
    );

    let wider = dir.path().join("wider");
    artifact_of(ModelSpec::Linear { inputs: 4, outputs: 2 })
        .save(&wider)
        .unwrap();
    std::fs::copy(wider.join("model.safetensors"), &weights).unwrap();
    let shape = load_error();
    println!("{shape}");
    assert!(
        shape.contains("model.safetensors") && shape.contains("has shape [2, 4]; the spec's network needs [2, 3]"),
        "{shape}"
    );

    std::fs::write(&weights, &bytes).unwrap();
    let description = saved.join("model.json");
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&description).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("options");
    std::fs::write(&description, json.to_string()).unwrap();
    let missing = load_error();
    println!("{missing}");
    assert!(
        missing.contains("model.json") && missing.contains("missing field `options`"),
        "{missing}"
    );
}
