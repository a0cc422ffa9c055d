//! A small, fast, seeded random generator (SplitMix64) and the draws training and data generation need.
//! The same seed gives the same numbers on every machine.

/// A SplitMix64 stream.
///
/// ```
/// use hearth_stats::random::Draws;
/// let (mut a, mut b) = (Draws::new(7), Draws::new(7));
/// assert_eq!(a.uniform(), b.uniform());
/// let mut items = [1, 2, 3, 4];
/// a.shuffle(&mut items);
/// items.sort();
/// assert_eq!(items, [1, 2, 3, 4]);
/// ```
#[derive(Clone, Debug)]
pub struct Draws(u64);

impl Draws {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The stream of one rank in one epoch of a run seeded with `seed`.
    pub fn for_rank(seed: u64, rank: usize, epoch: usize) -> Self {
        Self(
            seed ^ (rank as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ (epoch as u64).wrapping_mul(0xd1b5_4a32_d192_ed03),
        )
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[low, high)`.
    pub fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.uniform()
    }

    /// Normal with this mean and standard deviation (Box–Muller).
    pub fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let u = self.uniform().max(f64::MIN_POSITIVE);
        mean + sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * self.uniform()).cos()
    }

    /// Exponential with this mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Shuffles in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, (self.next_u64() % (i as u64 + 1)) as usize);
        }
    }

    /// Gamma(shape, 1), by Marsaglia and Tsang.
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            return self.gamma(shape + 1.0) * self.uniform().max(f64::MIN_POSITIVE).powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal(0.0, 1.0);
            let v = (1.0 + c * x).powi(3);
            if v > 0.0 && self.uniform().max(f64::MIN_POSITIVE).ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    /// Beta(α, α), MixUp's mixing weight.
    pub fn beta(&mut self, alpha: f64) -> f64 {
        let (a, b) = (self.gamma(alpha), self.gamma(alpha));
        a / (a + b)
    }
}
