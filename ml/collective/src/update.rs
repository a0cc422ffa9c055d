//! The center's update rules: what the parameter server applies to its center, and what the synchronous
//! strategies apply to the center each rank keeps, so that both follow one formula.
//!
//! ```
//! use hearth_collective::{add_into, elastic_exchange};
//!
//! // EASGD with α = 0.5: a rank at 3.0 meets the center at 2.0.
//! let (mut x, mut center) = (vec![3.0f32], vec![2.0f32]);
//! let moved = elastic_exchange(&mut x, &center, 0.5);
//! add_into(&mut center, &moved);
//! assert_eq!((x, center), (vec![2.5], vec![2.5]));
//! ```

/// The elastic exchange of a rank holding `x` with center `center`: `E = α(x − c)`, `x −= E`; returns `E`,
/// which the center adds (alone, or summed over the ranks).
pub fn elastic_exchange(x: &mut [f32], center: &[f32], alpha: f32) -> Vec<f32> {
    x.iter_mut()
        .zip(center)
        .map(|(x, c)| {
            let e = alpha * (*x - c);
            *x -= e;
            e
        })
        .collect()
}

/// The server's side of every exchange: `center += change`.
pub fn add_into(center: &mut [f32], change: &[f32]) {
    center.iter_mut().zip(change).for_each(|(c, d)| *c += d);
}
