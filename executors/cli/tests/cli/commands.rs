//! `hearth sql`, `fit` and `transform` run as a user runs them, on the local master.

use crate::common::{dataset, hearth, pyarrow_reads, shown};

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
    // A model is there now: refused before fitting, replaced with --overwrite (Spark's write().overwrite()).
    let again = |extra: &[&str]| {
        hearth()
            .args(["--master", "local[2]", "fit"])
            .args([&spec, &data, &model])
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = again(&[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let replaced = again(&["--overwrite"]);
    assert!(
        replaced.status.success(),
        "{}",
        String::from_utf8_lossy(&replaced.stderr)
    );

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

/// Runs `hearth sql` in `dir` with `args`, the models in `dir/models`.
fn sql(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    hearth()
        .current_dir(dir)
        .args(["--master", "local[2]", "sql", "--models"])
        .arg(dir.join("models"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_model_created_by_one_hearth_sql_is_used_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let table = format!(
        "CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true');",
        dataset("german_credit/credit-g.csv").display()
    );
    let create = format!(
        "{table} CREATE MODEL risk OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'],
         max_iterations = 2, workers = 2) AS SELECT age, duration, purpose, class FROM credit;"
    );
    let plots = dir.path().join("plots");
    let created = sql(dir.path(), &["--plots", plots.to_str().unwrap(), "-e", &create]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let table_text = String::from_utf8_lossy(&created.stdout);
    assert!(
        table_text.contains("| risk ") && table_text.contains("trained"),
        "{table_text}"
    );
    // The training curves, and the confusion matrix, ROC and PR curves on the rows it held out.
    for plot in ["training_curves", "confusion_matrix", "roc_curve", "pr_curve"] {
        let file = plots.join(format!("risk_{plot}.svg"));
        let svg = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            svg.starts_with("<svg") && svg.ends_with("</svg>\n"),
            "{}",
            file.display()
        );
        assert!(String::from_utf8_lossy(&created.stderr).contains(&format!("saved {}", file.display())));
    }

    let predict = format!(
        "{table} SELECT predicted_class, COUNT(*) AS n FROM ML.PREDICT(MODEL risk, TABLE credit) \
         GROUP BY predicted_class ORDER BY predicted_class;"
    );
    let csv = sql(dir.path(), &["--format", "csv", "-e", &predict]);
    assert!(csv.status.success(), "{}", String::from_utf8_lossy(&csv.stderr));
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("predicted_class,n\n"), "{text}");
    let total: u64 = text
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 1000);

    let json = sql(dir.path(), &["--format", "json", "-e", "SHOW MODELS"]);
    let text = String::from_utf8_lossy(&json.stdout);
    assert!(
        text.contains("\"model\":\"risk\"") && text.contains("\"model_type\":\"logistic_reg\""),
        "{text}"
    );

    let file = dir.path().join("drop.sql");
    std::fs::write(&file, "DROP MODEL risk;\nSHOW MODELS;").unwrap();
    let dropped = sql(dir.path(), &[file.to_str().unwrap()]);
    assert!(dropped.status.success(), "{}", String::from_utf8_lossy(&dropped.stderr));
}

#[test]
fn a_bad_script_runs_nothing_and_exits_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = sql(dir.path(), &["-e", "CREATE TABLE t AS SELECT 1 AS x;\nSELEC x FROM t;"]);
    assert_eq!(out.status.code(), Some(1));
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(error.contains("Line: 2, Column: 1"), "{error}");
    assert!(out.stdout.is_empty(), "nothing ran");
    let help = hearth().args(["sql", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.status.success() && text.contains("--format") && text.contains("--models"),
        "{text}"
    );
}

/// A pipeline of the four stages (indexer, one-hot, assembler, scaler) over the German credit data's columns.
const CREDIT_PIPELINE: &str = r#"{"format": "Pipeline", "version": 1, "uid": "credit", "stages": [
    {"class": "StringIndexer", "inputCols": ["purpose"], "outputCols": ["p"]},
    {"class": "OneHotEncoder", "inputCols": ["p"], "outputCols": ["p_vec"]},
    {"class": "VectorAssembler", "inputCols": ["p_vec", "age", "duration"], "outputCol": "raw"},
    {"class": "StandardScaler", "inputCol": "raw", "outputCol": "features", "withMean": true}]}"#;

/// A temporary directory with [`CREDIT_PIPELINE`] in it, the German credit data, and where a model and a
/// Parquet output go.
pub struct CreditFiles {
    pub dir: tempfile::TempDir,
    pub spec: std::path::PathBuf,
    pub data: std::path::PathBuf,
    pub model: std::path::PathBuf,
    pub out: std::path::PathBuf,
}

impl CreditFiles {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("pipeline.json");
        std::fs::write(&spec, CREDIT_PIPELINE).unwrap();
        Self {
            spec,
            data: dataset("german_credit/credit-g.csv"),
            model: dir.path().join("model"),
            out: dir.path().join("features.parquet"),
            dir,
        }
    }
}

#[test]
fn fit_transform_writes_features_that_pyarrow_reads_under_spark_save_modes() {
    let CreditFiles {
        dir,
        spec,
        data,
        model,
        out,
    } = CreditFiles::new();
    let run = hearth()
        .args(["--master", "local[2]", "fit-transform"])
        .args([&spec, &data, &model])
        .args(["--select", "features,class", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", shown(&run));
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("wrote 1000 rows"),
        "{}",
        shown(&run)
    );
    assert!(out.join("_SUCCESS").exists() && model.join("pipeline.json").exists());
    // 10 purposes one-hot (dropLast: 9 slots) + age + duration, each scaled to mean 0.
    assert_eq!(pyarrow_reads(out.to_str().unwrap(), None), "1000 2 float 11 True");

    let transform = |mode: &str, format: &str, to: &std::path::Path| {
        hearth()
            .args(["--master", "local[2]", "transform"])
            .args([&model, &data])
            .args([
                "--select",
                "features,class",
                "--mode",
                mode,
                "--format",
                format,
                "--output",
            ])
            .arg(to)
            .output()
            .unwrap()
    };
    let refused = transform("error", "parquet", &out);
    assert_eq!(refused.status.code(), Some(1), "{}", shown(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("already exists"),
        "{}",
        shown(&refused)
    );
    let appended = transform("append", "parquet", &out);
    assert!(appended.status.success(), "{}", shown(&appended));
    assert_eq!(pyarrow_reads(out.to_str().unwrap(), None), "2000 2 float 11 True");
    let replaced = transform("overwrite", "parquet", &out);
    assert!(replaced.status.success(), "{}", shown(&replaced));
    assert_eq!(pyarrow_reads(out.to_str().unwrap(), None), "1000 2 float 11 True");

    // CSV has no list type: a vector's slots are columns of their own.
    let csv = dir.path().join("features.csv");
    let written = transform("error", "csv", &csv);
    assert!(written.status.success(), "{}", shown(&written));
    let part = std::fs::read_dir(&csv)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "csv"))
        .unwrap();
    let header = std::fs::read_to_string(part)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(
        header.contains("features_0") && header.contains("features_10"),
        "{header}"
    );

    // A job failing as it writes (a purpose the indexer never saw) leaves nothing: neither the destination
    // nor a hidden sibling.
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "purpose,age,duration\nradio/tv,30,12\nspaceship,40,6\n").unwrap();
    let failed = hearth()
        .args(["transform"])
        .args([&model, &bad])
        .arg("--output")
        .arg(dir.path().join("never"))
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1), "{}", shown(&failed));
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("spaceship"),
        "{}",
        shown(&failed)
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("never"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
