//! The strong Wolfe line search L-BFGS takes its steps with: bracket a step that decreases enough, then zoom
//! in with cubic interpolation until the slope is small enough (Nocedal & Wright, algorithms 3.5 and 3.6).

use super::{LineFunction, LineSearchFailed, Probe};

/// Sufficient decrease: `φ(t) ≤ φ(0) + C1·t·φ'(0)`.
const C1: f64 = 1e-4;
/// Curvature: `|φ'(t)| ≤ C2·|φ'(0)|`.
const C2: f64 = 0.9;
/// Growth of the trial step while it decreases enough but is still too short.
const GROWTH: f64 = 1.5;

/// A strong Wolfe search of at most `max_search` trial steps and `max_zoom` zoom steps (10 each for L-BFGS, 64
/// for L-BFGS-B), its steps no longer than `bound` (infinite for L-BFGS; for L-BFGS-B the step that reaches the
/// box's nearest face, where a step that decreases enough is taken without the curvature condition).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StrongWolfe {
    pub(crate) max_zoom: usize,
    pub(crate) max_search: usize,
    pub(crate) bound: f64,
}

impl StrongWolfe {
    /// A step along the line from `start` satisfying both conditions; the function's own errors pass through.
    pub(crate) fn search<E>(
        &self,
        phi: &mut impl LineFunction<E>,
        start: f64,
    ) -> Result<Result<f64, LineSearchFailed>, E> {
        let origin = phi.probe(0.0)?;
        if origin.slope > 0.0 {
            return Ok(Err(LineSearchFailed::NotDescent(origin.slope)));
        }
        let mut low = origin;
        let mut t = start;
        for i in 0..self.max_search {
            let c = phi.probe(t)?;
            if !c.value.is_finite() {
                t /= 2.0;
                continue;
            }
            if c.value > origin.value + C1 * t * origin.slope || (i > 0 && c.value >= low.value) {
                return self.zoom(phi, origin, low, c);
            }
            if c.slope.abs() <= C2 * origin.slope.abs() {
                return Ok(Ok(c.t));
            }
            if c.slope >= 0.0 {
                return self.zoom(phi, origin, c, low);
            }
            low = c;
            if t == self.bound {
                return Ok(Ok(t));
            }
            t = (t * GROWTH).min(self.bound);
        }
        Ok(Err(LineSearchFailed::Exhausted))
    }

    /// Narrows `[low, high]`, which brackets a step satisfying both conditions.
    fn zoom<E>(
        &self,
        phi: &mut impl LineFunction<E>,
        origin: Probe,
        mut low: Probe,
        mut high: Probe,
    ) -> Result<Result<f64, LineSearchFailed>, E> {
        for _ in 0..self.max_zoom {
            let t = if low.t > high.t {
                cubic_minimum(&high, &low)
            } else {
                cubic_minimum(&low, &high)
            };
            if t.is_nan() {
                return Ok(Err(LineSearchFailed::Exhausted));
            }
            let c = phi.probe(t)?;
            if c.value > origin.value + C1 * c.t * origin.slope || c.value >= low.value {
                high = c;
            } else {
                if c.slope.abs() <= C2 * origin.slope.abs() {
                    return Ok(Ok(c.t));
                }
                if c.slope * (high.t - low.t) >= 0.0 {
                    high = low;
                }
                low = c;
            }
        }
        Ok(Err(LineSearchFailed::Exhausted))
    }
}

/// The minimizer of the cubic through both probes' values and slopes, kept within the middle 80 % of
/// `[left.t, right.t]`.
fn cubic_minimum(left: &Probe, right: &Probe) -> f64 {
    let d1 = left.slope + right.slope - 3.0 * (left.value - right.value) / (left.t - right.t);
    let d2 = (d1 * d1 - left.slope * right.slope).sqrt();
    let width = right.t - left.t;
    let t = right.t - width * (right.slope + d2 - d1) / (right.slope - left.slope + 2.0 * d2);
    let (lower, upper) = (left.t + 0.1 * width, left.t + 0.9 * width);
    if t < lower {
        lower
    } else if t > upper {
        upper
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// φ(t) = (t − 3)², whose minimum is t = 3.
    struct Parabola(usize);

    impl LineFunction<()> for Parabola {
        fn probe(&mut self, t: f64) -> Result<Probe, ()> {
            self.0 += 1;
            Ok(Probe {
                t,
                value: (t - 3.0).powi(2),
                slope: 2.0 * (t - 3.0),
            })
        }
    }

    #[test]
    fn a_cubic_through_a_parabola_finds_its_minimum() {
        let left = Probe {
            t: 0.0,
            value: 9.0,
            slope: -6.0,
        };
        let right = Probe {
            t: 5.0,
            value: 4.0,
            slope: 4.0,
        };
        assert!((cubic_minimum(&left, &right) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn grows_the_step_then_zooms_to_a_strong_wolfe_point() {
        let search = StrongWolfe {
            max_zoom: 10,
            max_search: 10,
            bound: f64::INFINITY,
        };
        let mut phi = Parabola(0);
        let t = search.search(&mut phi, 1.0).unwrap().unwrap();
        let slope = 2.0 * (t - 3.0);
        assert!(slope.abs() <= C2 * 6.0, "t = {t}");
        assert!((t - 3.0).powi(2) <= 9.0 + C1 * t * -6.0);
    }

    #[test]
    fn a_bounded_search_stops_at_its_bound_once_it_decreases_enough() {
        let search = StrongWolfe {
            max_zoom: 10,
            max_search: 10,
            bound: 0.2,
        };
        // Up to t = 0.3 the slope stays steeper than C2 of the origin's: no step before the bound is taken.
        let mut phi = Parabola(0);
        assert_eq!(search.search(&mut phi, 0.1).unwrap(), Ok(0.2));
        assert_eq!(phi.0, 4, "the origin, 0.1, 0.15 and the bound");
    }

    #[test]
    fn an_ascent_direction_is_refused() {
        struct Up;
        impl LineFunction<()> for Up {
            fn probe(&mut self, t: f64) -> Result<Probe, ()> {
                Ok(Probe {
                    t,
                    value: t,
                    slope: 1.0,
                })
            }
        }
        let search = StrongWolfe {
            max_zoom: 10,
            max_search: 10,
            bound: f64::INFINITY,
        };
        assert_eq!(search.search(&mut Up, 1.0), Ok(Err(LineSearchFailed::NotDescent(1.0))));
    }
}
