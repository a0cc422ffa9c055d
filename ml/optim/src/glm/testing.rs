//! Rows the fits' tests share.

use super::Shard;

/// The 15 three-class rows Spark's reference fits were made on: `x = [(7i mod 11)/3, ((5i+3) mod 13)/4 − 1, 2]`
/// (a constant third feature), `y = (2i + ⌊i/5⌋) mod 3`, and when `weighted`, `w = 1 + (i mod 3)/2`.
pub(crate) fn three_classes(weighted: bool) -> Shard {
    let (mut features, mut labels, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..15u32 {
        features.extend([
            f64::from((7 * i) % 11) / 3.0,
            f64::from((5 * i + 3) % 13) / 4.0 - 1.0,
            2.0,
        ]);
        labels.push(f64::from((2 * i + i / 5) % 3));
        weights.push(1.0 + 0.5 * f64::from(i % 3));
    }
    Shard::new(3, features, labels, weighted.then_some(weights)).unwrap()
}
