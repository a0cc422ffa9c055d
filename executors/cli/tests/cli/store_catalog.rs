//! A model catalog in an S3-compatible store (moto's server on loopback): `hearth sql --models s3://…` trains
//! the SQL main job into it; a second `hearth sql` process finds the model there and evaluates it the same;
//! replacing it keeps the version it replaced and removes older ones, and dropping it leaves nothing.

use crate::cluster::evaluation;
use crate::common::{hearth, repository, shown};
use crate::s3::S3Server;

/// The bucket the catalog is in.
const BUCKET: &str = "hearth-models";

/// `hearth sql --models s3://hearth-models/catalog ARGS…` against `store`, as a process of a machine of its
/// own: with a cache of its own, where it keeps its copies of models.
fn sql(store: &S3Server, args: &[&str]) -> std::process::Output {
    let cache = tempfile::tempdir().unwrap();
    let output = hearth()
        .current_dir(repository())
        .envs(store.driver_env())
        .env("HEARTH_CACHE", cache.path())
        .args(["--master", "local[2]", "sql", "--models", "s3://hearth-models/catalog"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "hearth sql {args:?}: {}", shown(&output));
    output
}

/// The catalog's keys under the model `credit_risk`, as `manifest.json` and its versions' folders.
fn model_keys(store: &S3Server) -> (Vec<String>, Vec<String>) {
    let keys = store.keys(BUCKET, "catalog/credit_risk/");
    let mut versions: Vec<String> = keys
        .iter()
        .filter_map(|key| {
            key.strip_prefix("catalog/credit_risk/")?
                .split_once('/')
                .map(|(v, _)| v.to_string())
        })
        .collect();
    versions.dedup();
    (keys, versions)
}

#[test]
fn a_catalog_in_an_s3_store_serves_a_second_process_and_replaces_models_whole() {
    let store = S3Server::start(&[], "127.0.0.1", &[BUCKET], &[]);
    let trained = sql(&store, &["examples/german_credit.sql"]);
    let first = evaluation(&String::from_utf8_lossy(&trained.stdout));
    let (keys, versions) = model_keys(&store);
    assert!(
        keys.contains(&"catalog/credit_risk/manifest.json".to_string()),
        "{keys:?}"
    );
    assert_eq!(versions.len(), 1, "one version: {keys:?}");
    let version = &versions[0];
    for file in ["pipeline.json", "catalog.json", "evaluation.parquet"] {
        assert!(
            keys.contains(&format!("catalog/credit_risk/{version}/{file}")),
            "{file}: {keys:?}"
        );
    }

    // Another process, with nothing on its disk: the model from the store, the same evaluation.
    let listed = sql(
        &store,
        &["-e", "SHOW MODELS; SELECT * FROM ML.EVALUATE(MODEL credit_risk)"],
    );
    let shown_models = String::from_utf8_lossy(&listed.stdout);
    assert!(shown_models.contains("credit_risk"), "{shown_models}");
    assert_eq!(evaluation(&shown_models), first);

    // Replaced: a new version whole, the one it replaced kept for readers that just read the old manifest;
    // replaced again: the oldest gone. Dropped: nothing left.
    sql(&store, &["examples/german_credit.sql"]);
    let (keys, replaced) = model_keys(&store);
    assert_eq!(replaced.len(), 2, "the new version and the one it replaced: {keys:?}");
    assert!(replaced.contains(version), "{keys:?}");
    sql(&store, &["examples/german_credit.sql"]);
    let (keys, again) = model_keys(&store);
    assert_eq!(again.len(), 2, "{keys:?}");
    assert!(!again.contains(version), "the oldest version is removed: {keys:?}");
    sql(&store, &["-e", "DROP MODEL credit_risk"]);
    assert_eq!(model_keys(&store).0, Vec::<String>::new());
    let none = sql(&store, &["-e", "SHOW MODELS"]);
    assert!(
        !String::from_utf8_lossy(&none.stdout).contains("credit_risk"),
        "{}",
        shown(&none)
    );
}
