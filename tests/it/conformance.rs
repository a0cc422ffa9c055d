//! The conformance battery over every stage class hearth submits (`conformance`).

use std::collections::BTreeSet;

use hearth::prelude::*;
use hearth::preprocessing::conformance::{check_stage, example_frame, stage_examples, submitted_classes};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_class_passes_the_conformance_battery() {
    let session = Session::local(2);
    let frame = example_frame(&session).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut covered = BTreeSet::new();
    for (index, (class, stage)) in stage_examples().into_iter().enumerate() {
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
    let missing: Vec<&str> = submitted_classes()
        .into_iter()
        .filter(|class| !covered.contains(class))
        .collect();
    assert!(
        missing.is_empty(),
        "stage classes the battery never ran (submit an example): {missing:?}"
    );
}
