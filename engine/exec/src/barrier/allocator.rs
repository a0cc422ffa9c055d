//! The C allocator after a barrier task: emptied when the task ends.
//!
//! libtorch allocates every CPU tensor with `malloc`, and glibc keeps what a finished task freed in the heaps of
//! the threads that used it — for the next task, or for nothing in a long-lived driver, notebook or executor. A
//! task that ends has the allocator give back every free page, so a finished stage leaves the process's memory
//! near where it was.

/// Gives the allocator's free pages back to the system (glibc; elsewhere nothing).
pub(crate) fn give_back_free_pages() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
