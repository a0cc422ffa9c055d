//! The GPUs barrier tasks of this process may use, and which task holds which: an executor offers the GPUs
//! it was started with (`hearth executor --gpus`), a task that needs one leases the lowest free one for its
//! life, and a rank trains on the GPU its lease names.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The GPUs on offer (none configured: every device libtorch sees) and those leased.
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

/// The CUDA device indices this process's barrier tasks may use.
pub fn offered_gpus() -> Vec<usize> {
    let offered = pool().offered.clone();
    offered.unwrap_or_else(|| (0..hearth_torch::train::cuda_device_count()).collect())
}

/// Why libtorch in this process cannot use every GPU the CUDA driver lists (see [`libtorch_sees_gpus`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnseenGpus {
    /// The GPUs the CUDA driver lists.
    pub listed: usize,
    /// The CUDA devices libtorch sees.
    pub sees: usize,
    /// Why: libtorch's reason for having no CUDA, or the CUDA library it loaded.
    pub why: String,
}

impl fmt::Display for UnseenGpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { listed, sees, why } = self;
        write!(
            f,
            "the CUDA driver lists {listed} GPU(s) but libtorch sees {sees}: {why}"
        )
    }
}

impl std::error::Error for UnseenGpus {}

/// Whether libtorch in this process can use CUDA devices `0..count` (what the driver lists); if not, why —
/// libtorch without CUDA, or seeing fewer devices than the driver.
///
/// ```
/// assert!(hearth_exec::barrier::libtorch_sees_gpus(0).is_ok());
/// ```
pub fn libtorch_sees_gpus(count: usize) -> Result<(), UnseenGpus> {
    if count == 0 {
        return Ok(());
    }
    let sees = hearth_torch::train::cuda_device_count();
    if sees >= count {
        return Ok(());
    }
    let why = match hearth_torch::train::cuda_library() {
        hearth_torch::train::CudaLibrary::Missing(why) => why.clone(),
        hearth_torch::train::CudaLibrary::Loaded(path) => format!("its CUDA library is {}", path.display()),
    };
    Err(UnseenGpus {
        listed: count,
        sees,
        why,
    })
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
