//! Fashion-MNIST's 10,000 test images (shipped in `datasets/fashion_mnist/`, MIT) and the CNN of keras.io's
//! MixUp example, which trains on Fashion-MNIST.
//!
//! ```
//! use hearth::datasets::fashion_mnist;
//! assert_eq!(fashion_mnist::CLASSES[9], "ankle boot");
//! assert_eq!(fashion_mnist::mixup_cnn().len(), 11);
//! ```

use std::path::PathBuf;

use datafusion::prelude::DataFrame;
use hearth_exec::error::Result;
use hearth_exec::session::Session;
use hearth_torch::model::Layer;

/// One image: 1 channel of 28 × 28 pixels.
pub const IMAGE_SHAPE: [usize; 3] = [1, 28, 28];

/// The class names, by label.
pub const CLASSES: [&str; 10] = [
    "t-shirt/top",
    "trouser",
    "pullover",
    "dress",
    "coat",
    "sandal",
    "shirt",
    "sneaker",
    "bag",
    "ankle boot",
];

/// The 10,000 shipped images (1,000 per class) as `image` (784 pixels in [0, 1]) and `label`.
pub fn images(session: &Session) -> Result<DataFrame> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/fashion_mnist");
    session.read_idx(
        dir.join("t10k-images-idx3-ubyte.gz"),
        dir.join("t10k-labels-idx1-ubyte.gz"),
    )
}

/// keras.io's MixUp example model: Conv2D(16, 5×5, ReLU) → MaxPool(2) → Conv2D(32, 5×5, ReLU) → MaxPool(2) →
/// Dropout(0.2) → Flatten (Keras: global average pooling) → Dense(128, ReLU) → Dense(10) logits.
pub fn mixup_cnn() -> Vec<Layer> {
    let conv = |filters| Layer::Conv2d {
        filters,
        kernel: 5,
        stride: 1,
        padding: 0,
    };
    let pool = || Layer::MaxPool2d {
        kernel: 2,
        stride: None,
    };
    vec![
        conv(16),
        Layer::Relu,
        pool(),
        conv(32),
        Layer::Relu,
        pool(),
        Layer::Dropout { rate: 0.2 },
        Layer::Flatten,
        Layer::Dense { units: 128 },
        Layer::Relu,
        Layer::Dense { units: 10 },
    ]
}
