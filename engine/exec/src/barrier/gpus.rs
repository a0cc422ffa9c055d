//! The GPUs barrier tasks of this process may use, and which task holds which: an executor offers the GPUs
//! it was started with (`hearth executor --gpus`), a task that needs one leases the lowest free one for its
//! life, and a rank trains on the GPU its lease names.

use std::collections::BTreeSet;
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The GPUs on offer (none configured: [`local_gpus`]) and those leased.
#[derive(Debug, Default)]
struct Pool {
    offered: Option<Vec<usize>>,
    leased: BTreeSet<usize>,
}

static POOL: LazyLock<Mutex<Pool>> = LazyLock::new(Mutex::default);

/// Signalled when a lease ends.
static RETURNED: Condvar = Condvar::new();

fn pool() -> MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Offers exactly these CUDA device indices to this process's barrier tasks (an executor's `--gpus`).
///
/// ```
/// hearth_exec::barrier::offer_gpus(vec![]);
/// assert!(hearth_exec::barrier::offered_gpus().is_empty());
/// ```
pub fn offer_gpus(indices: Vec<usize>) {
    pool().offered = Some(indices);
}

/// The CUDA device indices this process's barrier tasks may use: those offered, or else the first
/// [`local_gpus`].
pub fn offered_gpus() -> Vec<usize> {
    let offered = pool().offered.clone();
    offered.unwrap_or_else(|| (0..local_gpus().unwrap_or(0)).collect())
}

/// How many GPUs the trainer of this process can use, or why none.
pub type TrainerGpus = fn() -> Result<usize, String>;

static TRAINER_GPUS: OnceLock<TrainerGpus> = OnceLock::new();

/// Makes `count` the judge of how many GPUs this process's barrier tasks get when none were offered: the crate
/// whose barrier functions train sets its library's count (`hearth-training`: the CUDA devices libtorch sees),
/// so a CPU-only libtorch on a GPU host offers none, and says why. The first call wins.
pub fn count_trainer_gpus_with(count: TrainerGpus) {
    let _ = TRAINER_GPUS.set(count);
}

/// How many GPUs this process's barrier tasks get when none were offered (a `local[N]` or `standalone[N]`
/// session's): the trainer's count where one was set ([`count_trainer_gpus_with`]), else the CUDA driver's
/// ([`driver_gpus`](super::driver_gpus)); or why none.
///
/// ```
/// let gpus = hearth_exec::barrier::local_gpus();
/// assert!(gpus.as_ref().is_ok_and(|n| *n > 0) || gpus.is_err_and(|why| !why.is_empty()));
/// ```
pub fn local_gpus() -> Result<usize, String> {
    TRAINER_GPUS.get().map_or_else(super::driver_gpus, |count| count())
}

/// A GPU a task holds; returned to the pool when dropped.
#[derive(Debug)]
pub struct GpuLease {
    index: usize,
}

impl GpuLease {
    /// The CUDA device index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The GPU an executor leased for a task that runs in another process (a copy of a driver program).
    pub(crate) fn held_by_executor(index: usize) -> Self {
        Self { index }
    }
}

impl Drop for GpuLease {
    fn drop(&mut self) {
        pool().leased.remove(&self.index);
        RETURNED.notify_all();
    }
}

/// The lowest offered GPU no task holds, leased. When all are held — by the ranks of a cancelled stage
/// that have yet to notice — waits up to `patience` for one; `None` after that, or at once when none is
/// offered.
pub(crate) fn lease(patience: Duration) -> Option<GpuLease> {
    let offered = offered_gpus();
    if offered.is_empty() {
        return None;
    }
    let deadline = Instant::now() + patience;
    let mut pool = pool();
    loop {
        if let Some(index) = offered.iter().copied().find(|i| !pool.leased.contains(i)) {
            pool.leased.insert(index);
            return Some(GpuLease { index });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        pool = RETURNED
            .wait_timeout(pool, left)
            .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_gpu_is_leased_again_once_returned() {
        offer_gpus(vec![3]);
        let first = lease(Duration::ZERO).expect("GPU 3 is free");
        assert_eq!(first.index(), 3);
        assert!(lease(Duration::from_millis(20)).is_none(), "GPU 3 is held");
        let waiting = std::thread::spawn(|| lease(Duration::from_secs(10)).map(|gpu| gpu.index()));
        std::thread::sleep(Duration::from_millis(50));
        drop(first);
        assert_eq!(
            waiting.join().unwrap(),
            Some(3),
            "the waiting task gets the returned GPU"
        );
        offer_gpus(vec![]);
        let started = Instant::now();
        assert!(lease(Duration::from_secs(10)).is_none(), "no GPU offered");
        assert!(started.elapsed() < Duration::from_secs(1), "and no wait for one");
        pool().offered = None;
    }
}
