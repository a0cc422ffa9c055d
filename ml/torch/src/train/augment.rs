//! Random image augmentation while training, as Keras's `RandomFlip("horizontal")` and the pad-and-crop of
//! CIFAR-10 recipes: each image of a batch is mirrored left–right with probability ½ and/or shifted by
//! cropping a window of its own size from it padded with zeros. Draws come from the rank's seeded stream, so a
//! seed gives the same images.

use serde::{Deserialize, Serialize};
use tch::Tensor;

use hearth_stats::random::Draws;

/// Which augmentations to apply to `[C, H, W]` images.
///
/// ```
/// use hearth_torch::train::Augmentation;
/// let cifar = Augmentation { horizontal_flip: true, crop_padding: 4 };
/// assert!(!cifar.is_identity());
/// assert!(Augmentation::default().is_identity());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Augmentation {
    /// Mirror each image left–right with probability ½.
    pub horizontal_flip: bool,
    /// Pad each side with this many zero pixels, then crop a random window of the image's size (0: off).
    pub crop_padding: usize,
}

impl Augmentation {
    /// Whether nothing is changed.
    pub fn is_identity(&self) -> bool {
        !self.horizontal_flip && self.crop_padding == 0
    }

    /// The batch `x` (`[B, C·H·W]`, images of `shape` = `[C, H, W]`) augmented, in the same layout.
    ///
    /// ```
    /// use hearth_stats::random::Draws;
    /// use hearth_torch::train::Augmentation;
    /// let x = tch::Tensor::arange(2 * 4, (tch::Kind::Float, tch::Device::Cpu)).view([2, 4]);
    /// let flipped = Augmentation { horizontal_flip: true, crop_padding: 0 }.apply(&x, [1, 2, 2], &mut Draws::new(1));
    /// assert_eq!(flipped.size(), vec![2, 4]);
    /// ```
    pub fn apply(&self, x: &Tensor, shape: [i64; 3], draws: &mut Draws) -> Tensor {
        let [channels, height, width] = shape;
        let batch = x.size()[0];
        let images = x.view([batch, channels, height, width]);
        let pad = self.crop_padding as i64;
        let padded = match pad {
            0 => images.shallow_clone(),
            _ => images.constant_pad_nd([pad, pad, pad, pad]),
        };
        let augmented: Vec<Tensor> = (0..batch)
            .map(|i| {
                let mut image = padded.get(i);
                if pad > 0 {
                    let top = (draws.next_u64() % (2 * pad as u64 + 1)) as i64;
                    let left = (draws.next_u64() % (2 * pad as u64 + 1)) as i64;
                    image = image.narrow(1, top, height).narrow(2, left, width);
                }
                if self.horizontal_flip && draws.uniform() < 0.5 {
                    image = image.flip([2]);
                }
                image
            })
            .collect();
        Tensor::stack(&augmented, 0).view([batch, channels * height * width])
    }
}

#[cfg(test)]
mod tests {
    use tch::{Device, Kind};

    use super::*;

    fn values(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
    }

    #[test]
    fn flips_mirror_rows_and_crops_shift_within_the_padding() {
        // One 1×2×3 image: rows [0 1 2] and [3 4 5].
        let x = Tensor::arange(6, (Kind::Float, Device::Cpu)).view([1, 6]);
        let flip = Augmentation {
            horizontal_flip: true,
            crop_padding: 0,
        };
        let mut seen = Vec::new();
        let mut draws = Draws::new(3);
        for _ in 0..20 {
            seen.push(values(&flip.apply(&x, [1, 2, 3], &mut draws)));
        }
        assert!(seen.contains(&vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
        assert!(seen.contains(&vec![2.0, 1.0, 0.0, 5.0, 4.0, 3.0]));
        assert!(
            seen.iter()
                .all(|s| s[..3] == [0.0, 1.0, 2.0] || s[..3] == [2.0, 1.0, 0.0])
        );

        let crop = Augmentation {
            horizontal_flip: false,
            crop_padding: 1,
        };
        let mut draws = Draws::new(4);
        for _ in 0..20 {
            let cropped = values(&crop.apply(&x, [1, 2, 3], &mut draws));
            // Every pixel kept is an original one or a zero, and the pixel sum is at most the original's.
            assert!(cropped.iter().all(|v| (0.0..=5.0).contains(v)));
            assert!(cropped.iter().sum::<f32>() <= 15.0);
        }
        let mut same = (Draws::new(9), Draws::new(9));
        assert_eq!(
            values(&crop.apply(&x, [1, 2, 3], &mut same.0)),
            values(&crop.apply(&x, [1, 2, 3], &mut same.1))
        );
    }
}
