//! How the ranks of a fit add up what each computed on its shard.

use std::convert::Infallible;

/// Sums values across the ranks of a fit, every rank ending with the same sum: an allreduce. A fit calls it with
/// the same lengths in the same order on every rank.
///
/// ```
/// use hearth_optim::glm::{Alone, Reduce};
/// let mut values = [1.0, 2.0];
/// Alone.sum(&mut values).unwrap();
/// assert_eq!(values, [1.0, 2.0]);
/// ```
pub trait Reduce {
    /// What summing may fail with (a lost peer).
    type Error;

    /// Replaces `values` by their element-wise sum over all ranks.
    fn sum(&mut self, values: &mut [f64]) -> Result<(), Self::Error>;

    /// Replaces `values` by their element-wise maximum over all ranks.
    fn max(&mut self, values: &mut [f64]) -> Result<(), Self::Error>;
}

/// A fit on one rank holding every row.
#[derive(Clone, Copy, Debug, Default)]
pub struct Alone;

impl Reduce for Alone {
    type Error = Infallible;

    fn sum(&mut self, _values: &mut [f64]) -> Result<(), Infallible> {
        Ok(())
    }

    fn max(&mut self, _values: &mut [f64]) -> Result<(), Infallible> {
        Ok(())
    }
}

/// Ranks that are threads of one process, each holding a shard: what the fitters' tests use to check that a
/// result does not depend on how the rows are split.
#[cfg(test)]
pub(crate) mod threads {
    use std::sync::{Arc, Barrier, Mutex};

    use super::Reduce;
    use crate::glm::Shard;

    /// One thread's side of the sums.
    pub(crate) struct Threads {
        rank: usize,
        barrier: Arc<Barrier>,
        pot: Arc<Mutex<Vec<Vec<f64>>>>,
    }

    impl Threads {
        fn gathered(&mut self, values: &[f64]) -> Vec<Vec<f64>> {
            self.pot.lock().unwrap()[self.rank] = values.to_vec();
            self.barrier.wait();
            let all = self.pot.lock().unwrap().clone();
            self.barrier.wait();
            all
        }
    }

    impl Reduce for Threads {
        type Error = std::convert::Infallible;

        fn sum(&mut self, values: &mut [f64]) -> Result<(), Self::Error> {
            let all = self.gathered(values);
            for (i, v) in values.iter_mut().enumerate() {
                *v = all.iter().map(|rank| rank[i]).sum();
            }
            Ok(())
        }

        fn max(&mut self, values: &mut [f64]) -> Result<(), Self::Error> {
            let all = self.gathered(values);
            for (i, v) in values.iter_mut().enumerate() {
                *v = all.iter().map(|rank| rank[i]).fold(f64::NEG_INFINITY, f64::max);
            }
            Ok(())
        }
    }

    /// `fit` run on every shard at once, each on a thread of its own; the results in shard order.
    pub(crate) fn on_threads<T: Send>(shards: &[Shard], fit: impl Fn(&Shard, &mut Threads) -> T + Sync) -> Vec<T> {
        let barrier = Arc::new(Barrier::new(shards.len()));
        let pot = Arc::new(Mutex::new(vec![Vec::new(); shards.len()]));
        std::thread::scope(|scope| {
            let handles: Vec<_> = shards
                .iter()
                .enumerate()
                .map(|(rank, shard)| {
                    let mut ranks = Threads {
                        rank,
                        barrier: Arc::clone(&barrier),
                        pot: Arc::clone(&pot),
                    };
                    let fit = &fit;
                    scope.spawn(move || fit(shard, &mut ranks))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }
}
