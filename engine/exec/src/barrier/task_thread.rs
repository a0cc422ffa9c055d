//! A barrier task's own thread: started for the task, ended with it, and joined before the task's result is
//! handed on.
//!
//! A task's function trains with libtorch, whose parallel operators run on an OpenMP team that belongs to the
//! thread that started them and lives as long as that thread. Run on a pooled thread (tokio's blocking pool
//! keeps its threads for seconds after their last job), a task leaves its team behind, and the next task —
//! landing on another pooled thread — starts a team of its own beside it: with more OpenMP threads than cores,
//! the runtime stops spinning between parallel regions and every operator waits on a futex, so the second model
//! of a process trained at two thirds of the first one's speed. A thread of its own, joined before the stage
//! returns, takes its team with it: after a stage the process has the threads it had before.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread;

/// Runs `work` on a new thread called `name` and returns what it returned once the thread has exited (its
/// thread-local state — libtorch's OpenMP team among it — released); an error says why the thread could not
/// start, or the panic that ended it (`panicked: MESSAGE`). Dropping the future leaves the thread to finish on
/// its own.
pub(crate) async fn run_on_own_thread<T, F>(name: String, work: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (done, outcome) = tokio::sync::oneshot::channel();
    let worker = thread::Builder::new()
        .name(name)
        .spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(work))
                .map_err(|panic| format!("panicked: {}", panic_message(panic.as_ref())));
            let _ = done.send(result);
        })
        .map_err(|e| format!("no thread to run on: {e}"))?;
    let result = outcome
        .await
        .unwrap_or_else(|_| Err("its thread ended without a result".to_string()));
    // The result is sent before the thread's own exit runs; the stage is over once the thread is gone. The join
    // waits on the blocking pool (no timer needed: a runtime built without `enable_time` runs stages too).
    let _ = tokio::task::spawn_blocking(move || worker.join()).await;
    result
}

/// What a panic said, when it said it as text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_string(),
        (_, Some(text)) => text.clone(),
        (None, None) => "a panic without a message".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// This thread's id as the kernel knows it (its entry in `/proc/self/task`).
    fn own_thread_id() -> String {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        link.file_name().unwrap().to_string_lossy().into_owned()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_thread_is_gone_when_the_result_arrives() {
        let id = run_on_own_thread("hearth-test-task".to_string(), own_thread_id)
            .await
            .unwrap();
        assert_ne!(id, own_thread_id());
        // The kernel removes an exited thread's entry a moment after a join returns.
        let entry = std::path::Path::new("/proc/self/task").join(&id);
        let waited = std::time::Instant::now();
        while entry.exists() && waited.elapsed() < Duration::from_secs(1) {
            thread::sleep(Duration::from_millis(1));
        }
        assert!(!entry.exists(), "thread {id} is still there");
    }

    /// A thread-local whose destructor, run as its thread exits, takes a while.
    struct SlowExit;

    impl Drop for SlowExit {
        fn drop(&mut self) {
            thread::sleep(Duration::from_millis(50));
        }
    }

    thread_local! {
        static SLOW_EXIT: SlowExit = const { SlowExit };
    }

    #[test]
    fn a_runtime_without_timers_waits_for_a_slow_exit() {
        let runtime = tokio::runtime::Builder::new_multi_thread().build().unwrap();
        let work = || {
            SLOW_EXIT.with(|_| ());
            7
        };
        assert_eq!(
            runtime.block_on(run_on_own_thread("hearth-test-slow-exit".to_string(), work)),
            Ok(7)
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_is_an_error_with_its_message() {
        let error = run_on_own_thread("hearth-test-panic".to_string(), || -> usize {
            panic!("rank 1 gave up")
        })
        .await
        .unwrap_err();
        assert_eq!(error, "panicked: rank 1 gave up");
    }
}
