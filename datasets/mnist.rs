//! MNIST: the 10,000 training images shipped in `datasets/mnist/`, the official 10,000-image test set where
//! `../shared/datasets/mnist/` holds it (it is not redistributed with hearth), and Keras's MNIST CNN.
//!
//! ```
//! use hearth::datasets::mnist;
//! let layers = mnist::keras_cnn();
//! assert_eq!(layers.len(), 11);
//! ```

use std::path::PathBuf;

use datafusion::prelude::DataFrame;
use hearth_exec::error::Result;
use hearth_exec::session::Session;
use hearth_torch::model::Layer;

/// Where the repository keeps its data sets.
fn repository(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The shape of one image: 1 channel of 28 × 28 pixels.
pub const IMAGE_SHAPE: [usize; 3] = [1, 28, 28];

/// The 10,000 shipped training images as `image` (784 pixels in [0, 1]) and `label` (the digit). They are
/// grouped by digit in the file: hearth's trainers shuffle every epoch.
pub fn train(session: &Session) -> Result<DataFrame> {
    session.read_idx(
        repository("datasets/mnist/train10k-images-idx3-ubyte.gz"),
        repository("datasets/mnist/train10k-labels-idx1-ubyte.gz"),
    )
}

/// The official MNIST test set (10,000 images), read from `../shared/datasets/mnist/` beside the repository;
/// `None` where it is absent.
pub fn official_test(session: &Session) -> Result<Option<DataFrame>> {
    let shared = repository("../shared/datasets/mnist");
    let images = shared.join("t10k-images-idx3-ubyte.gz");
    if !images.is_file() {
        return Ok(None);
    }
    session
        .read_idx(images, shared.join("t10k-labels-idx1-ubyte.gz"))
        .map(Some)
}

/// The CNN of Keras's `mnist_cnn` example (R keras and Python Keras alike), the model sparklyr users train
/// inside `spark_apply(barrier = TRUE)`: Conv2D(32, 3×3, ReLU) → Conv2D(64, 3×3, ReLU) → MaxPool(2) →
/// Dropout(0.25) → Flatten → Dense(128, ReLU) → Dropout(0.5) → Dense(10) logits.
pub fn keras_cnn() -> Vec<Layer> {
    let conv = |filters| Layer::Conv2d {
        filters,
        kernel: 3,
        stride: 1,
        padding: 0,
    };
    vec![
        conv(32),
        Layer::Relu,
        conv(64),
        Layer::Relu,
        Layer::MaxPool2d {
            kernel: 2,
            stride: None,
        },
        Layer::Dropout { rate: 0.25 },
        Layer::Flatten,
        Layer::Dense { units: 128 },
        Layer::Relu,
        Layer::Dropout { rate: 0.5 },
        Layer::Dense { units: 10 },
    ]
}
