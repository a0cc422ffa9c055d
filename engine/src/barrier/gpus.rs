//! The GPUs barrier tasks of this process may use, and which task holds which: an executor offers the GPUs
//! it was started with (`hearth executor --gpus`), a task that needs one leases the lowest free one for its
//! life, and a rank trains on the GPU its lease names.

use std::collections::BTreeSet;
use std::sync::{LazyLock, Mutex, MutexGuard};

/// The GPUs on offer (none configured: every device libtorch sees) and those leased.
#[derive(Debug, Default)]
struct Pool {
    offered: Option<Vec<usize>>,
    leased: BTreeSet<usize>,
}

static POOL: LazyLock<Mutex<Pool>> = LazyLock::new(Mutex::default);

fn pool() -> MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Offers exactly these CUDA device indices to this process's barrier tasks (an executor's `--gpus`).
///
/// ```
/// hearth_engine::barrier::offer_gpus(vec![]);
/// assert!(hearth_engine::barrier::offered_gpus().is_empty());
/// ```
pub fn offer_gpus(indices: Vec<usize>) {
    pool().offered = Some(indices);
}

/// The CUDA device indices this process's barrier tasks may use.
pub fn offered_gpus() -> Vec<usize> {
    let offered = pool().offered.clone();
    offered.unwrap_or_else(|| (0..hearth_ml::train::cuda_device_count()).collect())
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
}

impl Drop for GpuLease {
    fn drop(&mut self) {
        pool().leased.remove(&self.index);
    }
}

/// The lowest offered GPU no task holds, leased; `None` when all are held.
pub(crate) fn lease() -> Option<GpuLease> {
    let offered = offered_gpus();
    let mut pool = pool();
    let index = offered.into_iter().find(|i| !pool.leased.contains(i))?;
    pool.leased.insert(index);
    Some(GpuLease { index })
}
