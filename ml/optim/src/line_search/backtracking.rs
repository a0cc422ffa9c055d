//! The backtracking line search OWL-QN takes its steps with: shrink the step while it does not decrease
//! enough, grow it while the slope is still steep, shrink it while the slope turned steep uphill (Armijo and
//! strong Wolfe conditions), exactly as Breeze's `BacktrackingLineSearch` decides.

use super::{LineFunction, LineSearchFailed, Probe};

/// Sufficient decrease: `φ(t) ≤ φ(0) + C_ARMIJO·t·φ'(0)`.
const C_ARMIJO: f64 = 1e-4;
/// Curvature: `C_WOLFE·φ'(0) ≤ φ'(t) ≤ −C_WOLFE·φ'(0)`.
const C_WOLFE: f64 = 0.9;
/// The factor a step grows by while too short.
const GROW: f64 = 2.1;
/// The steps the search may try after the first.
const MAX_TRIES: usize = 20;
/// A step below this fails the search.
const MIN_STEP: f64 = 1e-10;
/// A step above this fails the search.
const MAX_STEP: f64 = 1e10;

/// A backtracking search shrinking by `shrink`, whose first trial is judged by `reference` — the objective
/// at the start without its L1 term, which Breeze's OWL-QN hands its search in place of the first trial's
/// value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backtracking {
    reference: f64,
    shrink: f64,
}

impl Backtracking {
    /// OWL-QN's search at `iteration` from a state whose objective (without L1) is `value`: shrinking by 0.1
    /// on the first iteration and 0.5 after.
    pub(crate) fn owlqn(value: f64, iteration: usize) -> Self {
        Self {
            reference: value,
            shrink: if iteration < 1 { 0.1 } else { 0.5 },
        }
    }

    /// The step found from `start`; the function's own errors pass through.
    pub(crate) fn search<E>(
        &self,
        phi: &mut impl LineFunction<E>,
        start: f64,
    ) -> Result<Result<f64, LineSearchFailed>, E> {
        let origin = phi.probe(0.0)?;
        let mut trial = Probe {
            value: self.reference,
            ..phi.probe(start)?
        };
        for tries in 0..MAX_TRIES {
            let factor = if trial.value > origin.value + trial.t * origin.slope * C_ARMIJO {
                self.shrink
            } else if trial.slope < C_WOLFE * origin.slope {
                GROW
            } else if trial.slope > -C_WOLFE * origin.slope {
                self.shrink
            } else {
                return Ok(Ok(trial.t));
            };
            let t = trial.t * factor;
            if !(MIN_STEP..=MAX_STEP).contains(&t) {
                return Ok(Err(LineSearchFailed::Exhausted));
            }
            let next = phi.probe(t)?;
            // Breeze stops at its try limit on the step before the last one probed.
            if tries + 1 == MAX_TRIES {
                break;
            }
            trial = next;
        }
        Ok(Ok(trial.t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// φ(t) = (t − 1)², from a start whose reference value is φ(0) = 1.
    struct Parabola(Vec<f64>);

    impl LineFunction<()> for Parabola {
        fn probe(&mut self, t: f64) -> Result<Probe, ()> {
            self.0.push(t);
            Ok(Probe {
                t,
                value: (t - 1.0).powi(2),
                slope: 2.0 * (t - 1.0),
            })
        }
    }

    #[test]
    fn shrinks_a_step_that_overshoots_until_both_conditions_hold() {
        let mut phi = Parabola(Vec::new());
        let t = Backtracking {
            reference: 1.0,
            shrink: 0.5,
        }
        .search(&mut phi, 4.0)
        .unwrap()
        .unwrap();
        // 4 overshoots (slope 6 > 0.9·2), 2 has slope 2 > 1.8, 1 is the minimum.
        assert_eq!(t, 1.0);
        assert_eq!(phi.0, vec![0.0, 4.0, 2.0, 1.0]);
    }

    #[test]
    fn grows_a_step_that_is_too_short() {
        let mut phi = Parabola(Vec::new());
        // A reference below φ(0), as an L1 term makes it: the first trial is judged on its slope alone.
        let t = Backtracking {
            reference: 0.5,
            shrink: 0.5,
        }
        .search(&mut phi, 0.05)
        .unwrap()
        .unwrap();
        // The slope at 0.05 is −1.9, steeper than 0.9·(−2): grow to 0.105, slope −1.79: accepted.
        assert!((t - 0.105).abs() < 1e-15);
    }

    #[test]
    fn without_an_l1_term_the_first_trial_always_shrinks() {
        let mut phi = Parabola(Vec::new());
        let t = Backtracking {
            reference: 1.0,
            shrink: 0.1,
        }
        .search(&mut phi, 1.0)
        .unwrap()
        .unwrap();
        // At t = 1 the objective is at its minimum, yet the first decision compares the reference with φ(0).
        assert_eq!(phi.0, vec![0.0, 1.0, 0.1]);
        assert_eq!(t, 0.1);
    }
}
