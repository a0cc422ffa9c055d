//! libtorch's intra-op threads, set for the calling thread alone.
//!
//! libtorch's CPU operators run in parallel on OpenMP teams, and OpenMP keeps a team for each thread that
//! started one, for as long as that thread lives. `tch::set_num_threads` sets the count for the calling thread
//! and, besides, for every thread that first runs an operator later, and it rebuilds a process-wide pool; two
//! things here want less than that:
//!
//! - a rank sets its own count (the host's cores shared by its ranks) without changing its neighbours';
//! - a thread that lives on after its work (an async worker running a model's SQL function) runs libtorch on
//!   one thread, so it never keeps a team: with more OpenMP threads alive than cores, OpenMP stops spinning
//!   between parallel regions, and every later training in the process ran a third slower.
//!
//! ```
//! use hearth_torch::threads::set_intra_op_threads;
//!
//! std::thread::spawn(|| {
//!     set_intra_op_threads(1);
//!     assert_eq!(tch::get_num_threads(), 1);
//! })
//! .join()
//! .unwrap();
//! ```

use std::ffi::{CStr, c_int};
use std::sync::OnceLock;

/// OpenMP's `omp_set_num_threads`, as libtorch's OpenMP runtime exports it.
type SetNumThreads = unsafe extern "C" fn(c_int);

/// The calling thread's libtorch operators run on `threads` threads from now on (at least 1); other threads
/// keep theirs. Where libtorch was built without OpenMP this falls back to `tch::set_num_threads`.
pub fn set_intra_op_threads(threads: usize) {
    let threads = c_int::try_from(threads.max(1)).unwrap_or(c_int::MAX);
    // libtorch sets a thread's count when the thread first asks for it: asking first keeps that from
    // overriding the count set below.
    let _ = tch::get_num_threads();
    match omp_set_num_threads() {
        // SAFETY: the symbol is OpenMP's `void omp_set_num_threads(int)`, which takes any positive count.
        Some(set) => unsafe { set(threads) },
        None => tch::set_num_threads(threads),
    }
}

/// OpenMP's `omp_set_num_threads`, found once among the libraries the process loaded (libtorch's).
fn omp_set_num_threads() -> Option<SetNumThreads> {
    static FOUND: OnceLock<Option<SetNumThreads>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        const NAME: &CStr = c"omp_set_num_threads";
        // SAFETY: `dlsym` with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up.
        let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, NAME.as_ptr()) };
        // SAFETY: a non-null `omp_set_num_threads` is OpenMP's function of that signature.
        (!symbol.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, SetNumThreads>(symbol) })
    })
}

/// Makes the calling thread run libtorch on one thread, once per thread: for threads that live on after
/// their work and must not keep an OpenMP team (see the module's documentation).
pub fn one_intra_op_thread_here() {
    thread_local! {
        static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    DONE.with(|done| {
        if !done.replace(true) {
            set_intra_op_threads(1);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_count_leaves_other_threads_alone() {
        assert!(
            omp_set_num_threads().is_some(),
            "libtorch's OpenMP runtime was not found"
        );
        let on_a_new_thread = || std::thread::spawn(tch::get_num_threads).join().unwrap();
        let default = on_a_new_thread();
        let set = std::thread::spawn(|| {
            set_intra_op_threads(3);
            tch::get_num_threads()
        });
        assert_eq!(set.join().unwrap(), 3);
        assert_eq!(on_a_new_thread(), default);
        let single = std::thread::spawn(|| {
            one_intra_op_thread_here();
            tch::get_num_threads()
        });
        assert_eq!(single.join().unwrap(), 1);
    }
}
