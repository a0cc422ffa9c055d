//! Inverted dropout as PyTorch's, with masks that a seed fixes on any device.
//!
//! In training each value is zeroed with probability `rate` and the rest scaled by `1 / (1 − rate)`. The masks
//! come from the network's own stream of draws, not libtorch's process-wide generator, so ranks sharing a
//! process never take each other's numbers. On the CPU every mask value is one 32-bit half of a draw. On a GPU
//! one draw per layer keys a counter-based hash computed on the device for a chunk of steps at once (about four
//! million values: a hundred steps of a 64-row batch of 600 units) — a mask is never drawn on the host and copied
//! over, which would stall the device every step, and the hash's two dozen kernels run once a chunk, not once a
//! step, where at small batches they would be most of a step's launches. A seed gives the same masks on any
//! GPU (other masks than on the CPU, as PyTorch's CPU and CUDA generators differ).

use std::sync::Mutex;

use tch::{Device, Kind, Tensor};

use hearth_stats::random::Draws;

/// The dropout layers' stream of draws, and each layer's masks computed ahead on a device.
#[derive(Debug)]
pub(super) struct DropoutStream {
    draws: Draws,
    ahead: Vec<DeviceMasks>,
}

impl DropoutStream {
    /// A stream from `draws`, nothing computed ahead.
    pub(super) fn new(draws: Draws) -> Self {
        Self {
            draws,
            ahead: Vec::new(),
        }
    }
}

/// `xs` with dropout at `rate` applied while training (`xs` itself otherwise), its mask from `stream` (as the
/// network's dropout layer `layer`, the stream's first layer being 0).
pub(super) fn apply_dropout(
    xs: &Tensor,
    rate: f64,
    train: bool,
    stream: &Mutex<DropoutStream>,
    layer: usize,
) -> Tensor {
    if !train || rate <= 0.0 {
        return xs.shallow_clone();
    }
    let keep = 1.0 - rate;
    let scale = if keep > 0.0 { 1.0 / keep } else { 0.0 };
    // A 32-bit draw below `threshold` keeps its value: probability keep, to 2⁻³².
    let threshold = (keep * 4_294_967_296.0) as u64;
    // In fp32 the mask holds the scale (one multiply). In a narrower format (bfloat16) it holds 0 or 1 and the
    // product is scaled after, computed in fp32 and rounded once, as PyTorch scales: a scale rounded into the
    // mask would shrink every kept value (1/0.9 is 1.109 in bfloat16).
    let (in_mask, after) = match xs.kind() {
        Kind::Float => (scale, None),
        _ => (1.0, Some(scale)),
    };
    let mut stream = stream.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let DropoutStream { draws, ahead } = &mut *stream;
    let mask = match xs.device() {
        Device::Cpu => host_mask(xs, threshold, in_mask as f32, draws),
        _ => {
            if ahead.len() <= layer {
                ahead.resize_with(layer + 1, DeviceMasks::default);
            }
            ahead[layer].next(xs, threshold, in_mask, draws)
        }
    };
    let dropped = xs * mask;
    match after {
        Some(scale) => dropped.g_mul_scalar(scale),
        None => dropped,
    }
}

/// The mask drawn on the host, two 32-bit lanes from each 64-bit draw.
fn host_mask(xs: &Tensor, threshold: u64, scale: f32, draws: &mut Draws) -> Tensor {
    let lane = |bits: u64| if bits < threshold { scale } else { 0.0 };
    let n = xs.numel();
    let mut mask = Vec::with_capacity(n + 1);
    for _ in 0..n.div_ceil(2) {
        let bits = draws.next_u64();
        mask.push(lane(bits >> 32));
        mask.push(lane(bits & 0xffff_ffff));
    }
    mask.truncate(n);
    Tensor::from_slice(&mask).view(xs.size().as_slice()).to_kind(xs.kind())
}

/// Values per chunk of masks computed ahead (4 Mi: 16 MiB in fp32, 32 MiB of int64 counters while hashed).
const CHUNK_VALUES: i64 = 1 << 22;

/// The most steps one chunk covers.
const CHUNK_STEPS: i64 = 1024;

/// One dropout layer's masks computed ahead where its activations live: a chunk of steps, each step's mask a
/// row of `capacity` values (a smaller batch takes the first ones), hashed from one draw.
#[derive(Debug, Default)]
struct DeviceMasks {
    /// `[steps, capacity]` masks, already holding the scale and in the activations' kind.
    chunk: Option<Tensor>,
    capacity: i64,
    /// The next step's row.
    next: i64,
}

impl DeviceMasks {
    /// The mask for `xs` (value `i` of a chunk's row keeps when `hash(step · capacity + i, key)`, a 32-bit
    /// number, is below `threshold`): the chunk's next row, a new chunk from the next draw when this one is
    /// used up or too small, or computed for another kind.
    fn next(&mut self, xs: &Tensor, threshold: u64, scale: f64, draws: &mut Draws) -> Tensor {
        let n = xs.numel() as i64;
        let fits = |chunk: &Tensor| {
            self.next < chunk.size()[0]
                && n <= self.capacity
                && chunk.kind() == xs.kind()
                && chunk.device() == xs.device()
        };
        if !self.chunk.as_ref().is_some_and(fits) {
            let steps = (CHUNK_VALUES / n.max(1)).clamp(1, CHUNK_STEPS);
            let index = Tensor::arange(steps * n, (Kind::Int64, xs.device()));
            let chunk = counter_hash(&index, draws.next_u64())
                .lt(threshold as i64)
                .to_kind(xs.kind())
                .g_mul_scalar(scale)
                .view([steps, n]);
            *self = Self {
                chunk: Some(chunk),
                capacity: n,
                next: 0,
            };
        }
        let row = self.next;
        self.next += 1;
        let chunk = self
            .chunk
            .as_ref()
            .unwrap_or_else(|| unreachable!("a chunk was just computed"));
        chunk.select(0, row).narrow(0, 0, n).view(xs.size().as_slice())
    }
}

const LOW_32: i64 = 0xffff_ffff;

/// A 32-bit hash of each counter in `index` (int64 values below 2³²) under a 64-bit `key`: the counter is
/// mixed with the key's low half, finalised, offset by its high half and finalised again. Values are kept below
/// 2³² and multipliers below 2³¹, so every product fits a signed 64-bit integer on every device.
fn counter_hash(index: &Tensor, key: u64) -> Tensor {
    let (low, high) = ((key & 0xffff_ffff) as i64, (key >> 32) as i64);
    let mixed = finalise(index.bitwise_xor(low).bitwise_and(LOW_32));
    finalise((mixed + high).bitwise_and(LOW_32))
}

/// Three xor-shift and two multiply rounds (a 32-bit finaliser in the style of MurmurHash3's, with odd
/// multipliers below 2³¹).
fn finalise(h: Tensor) -> Tensor {
    let h = h.bitwise_xor_tensor(&h.bitwise_right_shift_tensor_scalar(16));
    let h = (h * 0x7feb_352d_i64).bitwise_and(LOW_32);
    let h = h.bitwise_xor_tensor(&h.bitwise_right_shift_tensor_scalar(15));
    let h = (h * 0x2c1b_3c6d_i64).bitwise_and(LOW_32);
    h.bitwise_xor_tensor(&h.bitwise_right_shift_tensor_scalar(16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_hash_keeps_the_asked_share_independently_of_position_and_key() {
        let n = 1 << 20;
        let index = Tensor::arange(n, (Kind::Int64, Device::Cpu));
        let keep = 0.8;
        let threshold = (keep * 4_294_967_296.0) as i64;
        let first = counter_hash(&index, 0x0123_4567_89ab_cdef).lt(threshold);
        let second = counter_hash(&index, 0x0123_4567_89ab_cdf0).lt(threshold);
        let share = |m: &Tensor| m.to_kind(Kind::Double).mean(Kind::Double).double_value(&[]);
        // Binomial standard error at n = 2²⁰ is 0.0004: 5 of them.
        assert!((share(&first) - keep).abs() < 0.002, "kept {}", share(&first));
        // Two keys one apart give unrelated masks: both kept with probability keep².
        let both = share(&first.logical_and(&second));
        assert!((both - keep * keep).abs() < 0.002, "both kept {both}");
        // Neighbouring values are unrelated too.
        let neighbours = share(&first.narrow(0, 0, n - 1).logical_and(&first.narrow(0, 1, n - 1)));
        assert!(
            (neighbours - keep * keep).abs() < 0.002,
            "neighbours both kept {neighbours}"
        );
        // Every value is a 32-bit number, and the same key gives the same mask.
        let bits = counter_hash(&index, 7);
        assert!(bits.min().int64_value(&[]) >= 0 && bits.max().int64_value(&[]) <= LOW_32);
        assert!(bits.equal(&counter_hash(&index, 7)));
    }

    #[test]
    fn bfloat16_values_are_scaled_once_as_pytorch_scales_them() {
        let xs = Tensor::randn([64, 32], (Kind::Float, Device::Cpu)).to_kind(Kind::BFloat16);
        let stream = Mutex::new(DropoutStream::new(Draws::new(5)));
        let dropped = apply_dropout(&xs, 0.1, true, &stream, 0).to_kind(Kind::Float);
        let exact = (xs.to_kind(Kind::Float) * (1.0 / 0.9))
            .to_kind(Kind::BFloat16)
            .to_kind(Kind::Float);
        let kept = dropped.ne(0.0);
        assert!(dropped.masked_select(&kept).equal(&exact.masked_select(&kept)));
    }

    #[test]
    fn a_device_mask_zeroes_or_scales_as_pytorch_dropout() {
        let xs = Tensor::ones([256, 64], (Kind::Float, Device::Cpu));
        let mask = DeviceMasks::default().next(&xs, (0.75 * 4_294_967_296.0) as u64, 1.0 / 0.75, &mut Draws::new(42));
        assert_eq!(mask.size(), vec![256, 64]);
        let values: Vec<f32> = Vec::try_from(mask.flatten(0, -1)).unwrap();
        assert!(values.iter().all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6));
        let kept = values.iter().filter(|&&v| v > 0.0).count() as f64 / values.len() as f64;
        assert!((kept - 0.75).abs() < 0.02, "kept {kept}");
    }

    #[test]
    fn masks_computed_ahead_differ_step_to_step_and_a_chunk_is_used_whole() {
        let xs = Tensor::ones([64, 600], (Kind::Float, Device::Cpu));
        let (keep, mut draws) = (0.8, Draws::new(11));
        let threshold = (keep * 4_294_967_296.0) as u64;
        let mut ahead = DeviceMasks::default();
        let first = ahead.next(&xs, threshold, 1.0 / keep, &mut draws);
        let second = ahead.next(&xs, threshold, 1.0 / keep, &mut draws);
        let kept = |m: &Tensor| m.ne(0.0).to_kind(Kind::Double).mean(Kind::Double).double_value(&[]);
        assert!((kept(&first) - keep).abs() < 0.01, "kept {}", kept(&first));
        assert!(!first.equal(&second));
        // One draw keyed the whole chunk: 4 Mi values, 109 steps of 38,400.
        assert_eq!(ahead.chunk.as_ref().unwrap().size(), [109, 38_400]);
        let mut again = Draws::new(11);
        again.next_u64();
        assert_eq!(draws.next_u64(), again.next_u64());
        // A smaller last batch takes the first values of its step's row.
        let last = ahead.next(&xs.narrow(0, 0, 10), threshold, 1.0 / keep, &mut draws);
        assert_eq!(last.size(), [10, 600]);
        // The same draws give the same masks.
        let mut replay = DeviceMasks::default();
        let replayed = replay.next(&xs, threshold, 1.0 / keep, &mut Draws::new(11));
        assert!(replayed.equal(&first));
    }
}
