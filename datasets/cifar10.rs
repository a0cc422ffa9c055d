//! CIFAR-10: the 20-image sample shipped in `datasets/cifar10/`, the real binary batches wherever a user keeps
//! them, and the Keras CNN of the MixUp notebook.
//!
//! ```
//! use hearth::datasets::cifar10;
//! assert_eq!(cifar10::IMAGE_SHAPE, [3, 32, 32]);
//! assert_eq!(cifar10::mixup_cnn().len(), 21);
//! ```

use std::path::{Path, PathBuf};

use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;
use hearth_torch::model::Layer;

/// One image: 3 channels (R, G, B) of 32 × 32 pixels.
pub const IMAGE_SHAPE: [usize; 3] = [3, 32, 32];

/// The class names, by label.
pub const CLASSES: [&str; 10] = [
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
];

/// The shipped sample: the first 20 images of the CIFAR-10 test batch.
pub fn sample(session: &Session) -> Result<DataFrame> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/cifar10/cifar10_test_first20_exact.bin");
    session.read_cifar10([path])
}

/// The real data set's training batches (`data_batch_1.bin` … `data_batch_5.bin`) and test batch
/// (`test_batch.bin`) from `dir`, the layout of `cifar-10-binary.tar.gz`.
pub fn batches(session: &Session, dir: &Path) -> Result<(DataFrame, DataFrame)> {
    let train: Vec<PathBuf> = (1..=5).map(|i| dir.join(format!("data_batch_{i}.bin"))).collect();
    if let Some(missing) = train.iter().find(|p| !p.is_file()) {
        return Err(HearthError::persistence(
            missing.clone(),
            "no such file: the directory must hold cifar-10-binary.tar.gz's batches",
        ));
    }
    Ok((
        session.read_cifar10(&train)?,
        session.read_cifar10([dir.join("test_batch.bin")])?,
    ))
}

fn conv(filters: usize, padding: usize) -> Layer {
    Layer::Conv2d {
        filters,
        kernel: 3,
        stride: 1,
        padding,
    }
}

/// The MixUp notebook's Keras CNN: two blocks of Conv2D(3×3) → BatchNorm → ReLU twice (32, then 64 filters,
/// the first of each block `same`-padded), MaxPool(2) and Dropout(0.25); then Flatten → Dense(512) → ReLU →
/// Dropout(0.5) → Dense(10) logits.
pub fn mixup_cnn() -> Vec<Layer> {
    let mut layers = Vec::new();
    for filters in [32, 64] {
        layers.extend([
            conv(filters, 1),
            Layer::BatchNorm,
            Layer::Relu,
            conv(filters, 0),
            Layer::BatchNorm,
            Layer::Relu,
            Layer::MaxPool2d {
                kernel: 2,
                stride: None,
            },
            Layer::Dropout { rate: 0.25 },
        ]);
    }
    layers.extend([
        Layer::Flatten,
        Layer::Dense { units: 512 },
        Layer::Relu,
        Layer::Dropout { rate: 0.5 },
        Layer::Dense { units: 10 },
    ]);
    layers
}
