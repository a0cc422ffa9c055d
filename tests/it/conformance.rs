//! The conformance battery over every stage class hearth lists (`conformance`).

use std::collections::BTreeSet;

use hearth::prelude::*;
use hearth::preprocessing::conformance::{PREPROCESSING_EXAMPLES, check_stage, example_frame, stage_examples};
use hearth::preprocessing::pipeline::{PREPROCESSING_CLASSES, StageClass};
use hearth::training::classes::{TRAINING_CLASSES, TRAINING_EXAMPLES};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_class_passes_the_conformance_battery() {
    let session = Session::builder().with_default_features().local(2);
    let frame = example_frame(&session).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut covered = BTreeSet::new();
    let examples = [PREPROCESSING_EXAMPLES, TRAINING_EXAMPLES].concat();
    for (index, (class, stage)) in stage_examples(&examples).into_iter().enumerate() {
        let exercised = check_stage(&stage, &frame, &dir.path().join(format!("{index}_{class}")))
            .await
            .unwrap_or_else(|e| panic!("{class}: {e}"));
        assert_eq!(
            exercised[0], class,
            "the example submitted for {class} is a {}",
            exercised[0]
        );
        covered.extend(exercised);
    }
    let missing: Vec<&str> = [PREPROCESSING_CLASSES, TRAINING_CLASSES]
        .concat()
        .iter()
        .map(|class: &StageClass| class.class)
        .filter(|class| !covered.contains(class))
        .collect();
    assert!(
        missing.is_empty(),
        "stage classes the battery never ran (submit an example): {missing:?}"
    );
}
