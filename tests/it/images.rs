//! Image files as tables: MNIST IDX (gzip) and CIFAR-10 binary batches, pixels scaled to [0, 1], labels kept;
//! a bad file is named with what is wrong in it.

use std::path::PathBuf;
use std::time::Duration;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::prelude::{col, lit};
use hearth::prelude::*;

use crate::common::dataset;
use crate::fleet::Fleet;

/// Every row's label and image, in the order the batches hold them.
fn rows(batches: &[RecordBatch]) -> Vec<(f64, Vec<f32>)> {
    let mut rows = Vec::new();
    for batch in batches {
        let images = batch.column_by_name("image").unwrap().as_fixed_size_list();
        let labels = batch.column_by_name("label").unwrap().as_primitive::<Float64Type>();
        for row in 0..batch.num_rows() {
            let image = images.value(row);
            rows.push((labels.value(row), image.as_primitive::<Float32Type>().values().to_vec()));
        }
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mnist_and_cifar10_files_read_as_image_tables() {
    let session = Session::builder().with_default_features().local(2);
    let mnist = session
        .read_idx(
            dataset("mnist/train10k-images-idx3-ubyte.gz"),
            dataset("mnist/train10k-labels-idx1-ubyte.gz"),
        )
        .unwrap();
    let image = mnist.schema().field_with_unqualified_name("image").unwrap().clone();
    assert!(matches!(image.data_type(), DataType::FixedSizeList(item, 784) if item.data_type() == &DataType::Float32));
    let digits = rows(&mnist.collect().await.unwrap());
    assert_eq!(digits.len(), 10_000);
    for digit in 0..10 {
        let count = digits.iter().filter(|(label, _)| *label == f64::from(digit)).count();
        assert!((800..1200).contains(&count), "digit {digit}: {count} images");
    }
    let pixels = digits.iter().flat_map(|(_, image)| image.iter().copied());
    let (low, high) = pixels.fold((f32::MAX, f32::MIN), |(lo, hi), p| (lo.min(p), hi.max(p)));
    assert_eq!((low, high), (0.0, 1.0));

    let path = dataset("cifar10/cifar10_test_first20_exact.bin");
    let cifar = rows(&session.read_cifar10([&path]).unwrap().collect().await.unwrap());
    let raw = std::fs::read(&path).unwrap();
    let mut expected: Vec<(f64, Vec<f32>)> = raw
        .chunks(3073)
        .map(|record| {
            (
                f64::from(record[0]),
                record[1..].iter().map(|&b| f32::from(b) / 255.0).collect(),
            )
        })
        .collect();
    let mut got = cifar.clone();
    let order = |a: &(f64, Vec<f32>), b: &(f64, Vec<f32>)| a.partial_cmp(b).unwrap();
    expected.sort_by(order);
    got.sort_by(order);
    assert_eq!(got, expected, "each record's label and its R, G, B planes, scaled");
    let mut labels: Vec<f64> = cifar.iter().map(|(label, _)| *label).collect();
    labels.sort_by(f64::total_cmp);
    let mut known = [3, 8, 8, 0, 6, 6, 1, 6, 3, 1, 0, 9, 5, 7, 9, 8, 5, 7, 8, 6].map(f64::from);
    known.sort_by(f64::total_cmp);
    assert_eq!(labels, known);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_image_files_are_named() {
    let session = Session::builder().with_default_features().local(1);
    let dir = tempfile::tempdir().unwrap();
    let truncated = dir.path().join("truncated.bin");
    std::fs::write(&truncated, vec![1u8; 3000]).unwrap();
    let error = session.read_cifar10([&truncated]).unwrap_err().to_string();
    assert!(
        error.contains("truncated.bin") && error.contains("3000 bytes are not whole CIFAR-10 records"),
        "{error}"
    );

    let labels = dir.path().join("three-labels");
    std::fs::write(&labels, [0, 0, 8, 1, 0, 0, 0, 3, 4, 5, 6]).unwrap();
    let images = dataset("mnist/train10k-images-idx3-ubyte.gz");
    let error = session.read_idx(&images, &labels).unwrap_err().to_string();
    assert!(
        error.contains("three-labels") && error.contains("3 labels for the 10000 images"),
        "{error}"
    );
    let error = session.read_idx(&labels, &labels).unwrap_err().to_string();
    assert!(error.contains("IDX magic 0x0801, expected 0x0803"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_mnist_test_set_reads_from_shared() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets/mnist");
    let (images, labels) = (
        shared.join("t10k-images-idx3-ubyte.gz"),
        shared.join("t10k-labels-idx1-ubyte.gz"),
    );
    if !images.is_file() {
        eprintln!(
            "skipped: {} is absent (the MNIST test set is read from ../shared only)",
            images.display()
        );
        return;
    }
    let test = Session::builder()
        .with_default_features()
        .local(2)
        .read_idx(images, labels)
        .unwrap();
    assert_eq!(test.count().await.unwrap(), 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_tables_read_by_the_driver_run_on_a_fleet() {
    let fleet = Fleet::start(&[1, 1]).await;
    let on_fleet = fleet.session().await;
    let local = Session::builder().with_default_features().local(2);
    let (images, labels) = (
        dataset("mnist/train10k-images-idx3-ubyte.gz"),
        dataset("mnist/train10k-labels-idx1-ubyte.gz"),
    );
    // The 10,000 images (31 MB of pixels) travel in the plan to the scheduler and the executors.
    let summary = |session: Session| {
        let (images, labels) = (images.clone(), labels.clone());
        async move {
            let df = session.read_idx(&images, &labels).unwrap();
            let sums = df
                .aggregate(
                    vec![],
                    vec![count(lit(1)).alias("n"), sum(col("label")).alias("labels")],
                )
                .unwrap();
            sums.collect().await.unwrap()
        }
    };
    let (there, here) = (summary(on_fleet.clone()).await, summary(local).await);
    assert_eq!(there, here);
    let standalone = Session::builder()
        .with_default_features()
        .connect("standalone[2]")
        .await
        .unwrap();
    assert_eq!(summary(standalone).await, here);
    assert_eq!(
        there[0]
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .value(0),
        10_000
    );

    // A network trains on in-memory images through the barrier stage on the fleet's two executors.
    let cifar = on_fleet
        .read_cifar10([dataset("cifar10/cifar10_test_first20_exact.bin")])
        .unwrap();
    let layers = vec![
        Layer::Conv2d {
            filters: 4,
            kernel: 3,
            stride: 1,
            padding: 1,
        },
        Layer::Relu,
        Layer::MaxPool2d {
            kernel: 4,
            stride: None,
        },
        Layer::Flatten,
        Layer::Dense { units: 10 },
    ];
    let model = SequentialClassifier::new([3, 32, 32], layers)
        .features_col("image")
        .label_col("label")
        .epochs(1)
        .workers(2)
        .timeout(Duration::from_secs(60))
        .rendezvous_timeout(Duration::from_secs(60))
        .fit(&cifar)
        .await
        .unwrap();
    assert_eq!(model.summary().ranks.iter().map(|r| r.rows).sum::<usize>(), 20);
}
