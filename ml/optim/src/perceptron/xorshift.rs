//! Spark's `XORShiftRandom`, the generator `MultilayerPerceptronClassifier` draws its initial weights from: the
//! seed hashed by MurmurHash3 (Scala's `bytesHash`), then a 64-bit xorshift, doubles as `java.util.Random` makes
//! them.

/// Scala's `MurmurHash3.arraySeed`.
const ARRAY_SEED: u32 = 0x3c07_4a61;

/// Spark's `XORShiftRandom` from a seed.
///
/// ```
/// use hearth_optim::perceptron::XorShiftRandom;
/// let mut random = XorShiftRandom::new(123);
/// let first = random.next_double();
/// assert!((0.0..1.0).contains(&first));
/// ```
#[derive(Clone, Debug)]
pub struct XorShiftRandom {
    state: u64,
}

impl XorShiftRandom {
    /// The generator Spark seeds with `seed`.
    pub fn new(seed: i64) -> Self {
        let bytes = seed.to_be_bytes();
        let low = bytes_hash(&bytes, ARRAY_SEED);
        let high = bytes_hash(&bytes, low);
        // Scala widens the high half's Int with its sign, and masks the low half.
        let state = ((i64::from(high as i32) << 32) as u64) | u64::from(low);
        Self { state }
    }

    /// The low `bits` bits of the next state.
    fn next(&mut self, bits: u32) -> u64 {
        let mut s = self.state ^ (self.state << 21);
        s ^= s >> 35;
        s ^= s << 4;
        self.state = s;
        s & ((1u64 << bits) - 1)
    }

    /// A double in `[0, 1)`, as `java.util.Random.nextDouble` builds it from 26 and 27 bits.
    pub fn next_double(&mut self) -> f64 {
        let high = self.next(26);
        let low = self.next(27);
        ((high << 27) + low) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// MurmurHash3 x86 32-bit of `data` from `seed`, as Scala's `MurmurHash3.bytesHash` computes it.
fn bytes_hash(data: &[u8], seed: u32) -> u32 {
    let mut h = seed;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        h = mix(h, u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let k = tail
            .iter()
            .enumerate()
            .fold(0u32, |k, (i, b)| k ^ (u32::from(*b) << (8 * i)));
        h = mix_last(h, k);
    }
    finalize(h ^ data.len() as u32)
}

fn mix_last(h: u32, k: u32) -> u32 {
    h ^ k.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593)
}

fn mix(h: u32, k: u32) -> u32 {
    mix_last(h, k).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

fn finalize(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}
