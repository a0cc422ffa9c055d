//! The `hearth` program, run as a user runs it (a test binary of its own: it links none of hearth).

use std::path::PathBuf;
use std::process::Command;

fn hearth() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hearth"))
}

fn dataset(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets")
        .join(relative)
}

#[test]
fn fit_a_pipeline_file_then_transform_with_the_saved_model() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("pipeline.json");
    std::fs::write(
        &spec,
        r#"{"format": "Pipeline", "version": 1, "uid": "cli", "stages": [
            {"class": "StringIndexer", "inputCols": ["purpose"], "outputCols": ["purpose_idx"]}]}"#,
    )
    .unwrap();
    let data = dataset("german_credit/credit-g.csv");
    let model = dir.path().join("model");
    let fit = hearth()
        .args(["--master", "local[2]", "fit"])
        .args([&spec, &data, &model])
        .output()
        .unwrap();
    assert!(fit.status.success(), "{}", String::from_utf8_lossy(&fit.stderr));
    assert!(String::from_utf8_lossy(&fit.stdout).contains("fitted 1 stages"));

    let shown = hearth()
        .arg("transform")
        .args([&model, &data])
        .arg("3")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success() && text.contains("purpose_idx") && text.contains("radio/tv"),
        "{text}"
    );

    let missing = hearth()
        .args(["fit", "nope.json"])
        .arg(&data)
        .arg(&model)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nope.json"));
    let usage = hearth().arg("frobnicate").output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
}
