//! The search loop under every tuner — [`TrainValidationSplit`](super::TrainValidationSplit),
//! [`CrossValidator`](super::CrossValidator) and SQL's `num_trials`: candidates fitted `parallelism` at a time
//! (each trainer its own barrier stage, so on a fleet concurrent candidates never hold part of each other's
//! slots), each timed from the start of the search, and the best picked by its score.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use hearth_preprocessing::tuning::search::{best_of, run_candidates};
//!
//! let runs = run_candidates([(0, 3.0), (1, 5.0), (2, 5.0)], 2, |x: f64| async move { Ok(x * 2.0) }).await;
//! let scores = runs.iter().map(|run| (run.candidate, *run.outcome.as_ref().unwrap()));
//! assert_eq!(best_of(scores, true), Some(1)); // the first of equal scores wins
//! # });
//! ```

use std::future::Future;
use std::time::Instant;

use futures::stream::{self, Stream, StreamExt, TryStreamExt};
use hearth_exec::error::Result;

/// One run of a candidate: which candidate, when it started and ended (seconds since the search began), and
/// what it gave.
#[derive(Debug)]
pub struct CandidateRun<T> {
    /// The candidate's index (a candidate may run more than once, e.g. once per fold).
    pub candidate: usize,
    /// When the run started, in seconds since the search began.
    pub started: f64,
    /// When it ended, in seconds since the search began.
    pub finished: f64,
    /// What it gave, or why it failed.
    pub outcome: Result<T>,
}

impl<T> CandidateRun<T> {
    /// How long the run took, in seconds.
    pub fn seconds(&self) -> f64 {
        self.finished - self.started
    }
}

/// Runs every `(candidate, job)` with `run`, `parallelism` at once (at least one), to the end even where some
/// fail; the runs come back in the order the jobs were given.
pub async fn run_candidates<J, T, F, Fut>(
    jobs: impl IntoIterator<Item = (usize, J)>,
    parallelism: usize,
    run: F,
) -> Vec<CandidateRun<T>>
where
    F: Fn(J) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut runs: Vec<(usize, CandidateRun<T>)> = runs(jobs, parallelism, &run).collect().await;
    runs.sort_by_key(|(order, _)| *order);
    runs.into_iter().map(|(_, run)| run).collect()
}

/// As [`run_candidates`], but the first failure ends the search (the runs under way are dropped) and is
/// returned: Spark's tuners fail when any fit fails.
pub async fn try_run_candidates<J, T, F, Fut>(
    jobs: impl IntoIterator<Item = (usize, J)>,
    parallelism: usize,
    run: F,
) -> Result<Vec<CandidateRun<T>>>
where
    F: Fn(J) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut runs: Vec<(usize, CandidateRun<T>)> = runs(jobs, parallelism, &run)
        .map(|(order, run)| match run.outcome {
            Ok(value) => Ok((
                order,
                CandidateRun {
                    outcome: Ok(value),
                    ..run
                },
            )),
            Err(error) => Err(error),
        })
        .try_collect()
        .await?;
    runs.sort_by_key(|(order, _)| *order);
    Ok(runs.into_iter().map(|(_, run)| run).collect())
}

/// The runs as they end, each with its place among the jobs.
fn runs<'a, J, T, F, Fut>(
    jobs: impl IntoIterator<Item = (usize, J)>,
    parallelism: usize,
    run: &'a F,
) -> impl Stream<Item = (usize, CandidateRun<T>)> + 'a
where
    J: 'a,
    F: Fn(J) -> Fut,
    Fut: Future<Output = Result<T>> + 'a,
{
    let search = Instant::now();
    let jobs: Vec<(usize, J)> = jobs.into_iter().collect();
    stream::iter(jobs.into_iter().enumerate())
        .map(move |(order, (candidate, job))| async move {
            let started = search.elapsed().as_secs_f64();
            let outcome = run(job).await;
            let finished = search.elapsed().as_secs_f64();
            let run = CandidateRun {
                candidate,
                started,
                finished,
                outcome,
            };
            (order, run)
        })
        .buffer_unordered(parallelism.max(1))
}

/// The candidate with the best score — the largest, or the smallest when `larger_is_better` is false — the
/// first of equal scores winning, as Spark's argmax; none when there are no scores.
pub fn best_of(scores: impl IntoIterator<Item = (usize, f64)>, larger_is_better: bool) -> Option<usize> {
    scores
        .into_iter()
        .max_by(|(a, x), (b, y)| {
            let order = if larger_is_better {
                x.total_cmp(y)
            } else {
                y.total_cmp(x)
            };
            order.then(b.cmp(a))
        })
        .map(|(candidate, _)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_exec::error::HearthError;

    #[tokio::test]
    async fn every_candidate_runs_to_the_end_and_comes_back_in_order() {
        let runs = run_candidates((0..6).map(|i| (i / 2, i)), 3, |i: usize| async move {
            tokio::time::sleep(std::time::Duration::from_millis((6 - i as u64) * 5)).await;
            match i {
                3 => Err(HearthError::barrier("trial", "fold failed")),
                _ => Ok(i),
            }
        })
        .await;
        let candidates: Vec<usize> = runs.iter().map(|run| run.candidate).collect();
        assert_eq!(candidates, [0, 0, 1, 1, 2, 2]);
        assert!(runs[3].outcome.is_err());
        assert_eq!(runs[5].outcome.as_ref().unwrap(), &5);
        assert!(runs.iter().all(|run| run.seconds() >= 0.0));
    }

    #[tokio::test]
    async fn the_first_failure_ends_a_search_that_stops_at_one() {
        let started = std::sync::atomic::AtomicUsize::new(0);
        let failed = try_run_candidates((0..20).map(|i| (i, i)), 1, |i: usize| {
            started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            async move {
                match i {
                    2 => Err(HearthError::barrier("trial", "fit failed")),
                    _ => Ok(i),
                }
            }
        })
        .await;
        assert!(failed.unwrap_err().to_string().contains("fit failed"));
        assert!(started.load(std::sync::atomic::Ordering::Relaxed) < 20);
        let all = try_run_candidates((0..3).map(|i| (i, i)), 2, |i: usize| async move { Ok(i) }).await;
        let values: Vec<usize> = all.unwrap().into_iter().map(|run| run.outcome.unwrap()).collect();
        assert_eq!(values, [0, 1, 2]);
    }

    #[test]
    fn the_best_is_the_largest_or_smallest_and_the_first_of_equals() {
        let scores = [(0, 0.5), (1, 0.9), (2, 0.9), (3, 0.1)];
        assert_eq!(best_of(scores, true), Some(1));
        assert_eq!(best_of(scores, false), Some(3));
        assert_eq!(best_of([(4, 1.0), (2, 1.0)], false), Some(2));
        assert_eq!(best_of([], true), None);
    }
}
