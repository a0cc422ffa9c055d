//! Hand-written training loops: HorovodRunner on barrier tasks and on the driver alone, a rank's failure
//! named; and images: sparklyr's MNIST CNN through `SequentialClassifier`, with random crops.

use std::time::Duration;

use hearth::datasets::mnist;
use hearth::prelude::*;
use hearth::torch::horovod::{DistributedOptimizer, Horovod};
use hearth::torch::train::{Augmentation, DeviceChoice};
use hearth::training::horovod_runner::HorovodRunner;
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Tensor};

/// A least-squares fit of y = 3x − 1 on each rank's own points, with averaged gradients: returns the weights.
fn fit_line(hvd: &mut Horovod<'_>) -> Result<Vec<f32>, Box<dyn std::error::Error + Send + Sync>> {
    let store = nn::VarStore::new(Device::Cpu);
    // Each rank starts elsewhere; the broadcast gives every rank rank 0's start.
    let w = store
        .root()
        .var_copy("w", &Tensor::from_slice(&[hvd.rank() as f32, 1.0]));
    hvd.broadcast_parameters(&store.trainable_variables(), 0)?;
    let mut optimizer = DistributedOptimizer::new(nn::Sgd::default().build(&store, 0.05)?, &store);
    let x = Tensor::from_slice(&[hvd.rank() as f32, hvd.rank() as f32 + 0.5]);
    let y = &x * 3.0 - 1.0;
    for _ in 0..300 {
        let predicted = &x * w.get(0) + w.get(1);
        let loss = (predicted - &y).square().mean(Kind::Float);
        optimizer.backward_step(hvd, &loss)?;
    }
    Ok(Vec::<f32>::try_from(&w)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn horovod_runner_trains_on_barrier_tasks_and_on_the_driver_alone() {
    let session = Session::builder().with_default_features().local(2);
    let tasks: Vec<f32> = HorovodRunner::new(2).run(&session, "fit_line", fit_line).await.unwrap();
    let driver: Vec<f32> = HorovodRunner::new(-2)
        .run(&session, "fit_line", fit_line)
        .await
        .unwrap();
    // Only the ranks' shared gradients can fit both ranks' points: 3x − 1.
    assert!(
        (tasks[0] - 3.0).abs() < 0.05 && (tasks[1] + 1.0).abs() < 0.05,
        "{tasks:?}"
    );
    for (a, b) in tasks.iter().zip(&driver) {
        assert!((a - b).abs() < 1e-5, "barrier tasks {tasks:?}, driver {driver:?}");
    }

    let failing = |hvd: &mut Horovod<'_>| -> Result<u8, Box<dyn std::error::Error + Send + Sync>> {
        match hvd.rank() {
            1 => Err("no data for rank 1".into()),
            _ => {
                hvd.barrier()?;
                Ok(0)
            }
        }
    };
    // On the driver alone every rank's outcome is known: the failing rank's own error comes first.
    let error = HorovodRunner::new(-2)
        .timeout(Duration::from_secs(20))
        .run(&session, "failing", failing)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("failing: rank 1: no data for rank 1"), "{error}");
    // As barrier tasks the stage fails with the first task error to arrive: rank 1's own, or rank 0's
    // naming rank 1 as the peer that left.
    let error = HorovodRunner::new(2)
        .timeout(Duration::from_secs(20))
        .run(&session, "failing", failing)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("no data for rank 1") || error.contains("peer rank 1"),
        "{error}"
    );
    let error = HorovodRunner::new(0)
        .run(&session, "none", fit_line)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("np") && error.contains("must not be 0"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sparklyr_mnist_cnn_learns_digits_on_two_workers_with_random_crops() {
    let session = Session::builder().with_default_features().local(2);
    let parts = mnist::train(&session).unwrap().random_split(&[0.8, 0.2], 5).unwrap();
    let cnn = SequentialClassifier::new(mnist::IMAGE_SHAPE, mnist::keras_cnn())
        .features_col("image")
        .label_col("label")
        .workers(2)
        .epochs(1)
        .seed(2)
        .device(DeviceChoice::Cpu)
        .augmentation(Augmentation {
            horizontal_flip: false,
            crop_padding: 2,
        });
    let model = cnn.fit(&parts[0]).await.unwrap();
    let accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&model.transform(&parts[1]).unwrap())
        .await
        .unwrap();
    println!("sparklyr MNIST CNN, 1 epoch on 2 workers with random crops: held-out accuracy {accuracy:.4}");
    assert!(accuracy > 0.9, "{accuracy}");

    // Crops need an image-shaped input.
    let mlp = MlpClassifier::new()
        .features_col("image")
        .label_col("label")
        .epochs(1)
        .device(DeviceChoice::Cpu)
        .augmentation(Augmentation {
            horizontal_flip: true,
            crop_padding: 0,
        });
    let error = mlp.fit(&parts[1]).await.unwrap_err().to_string();
    assert!(
        error.contains("augmentation") && error.contains("[channels, height, width]"),
        "{error}"
    );
}
