//! How the ranks of a job combine what they learn: dist-keras's trainers as options of one loop.
//!
//! `Synchronous` averages every step's gradient over all ranks (today's allreduce, deterministic).
//! The others let each rank step with its own optimizer on its own rows and combine parameters every
//! `communication_window` steps:
//!
//! | strategy      | every window                                                    | center lives    |
//! |---------------|-----------------------------------------------------------------|-----------------|
//! | `LocalSgd`    | every rank's parameters ← their average (allreduce)             | nowhere         |
//! | `Easgd`       | `E = α(x − c)`, `x −= E`, `c += ΣE` over all ranks (allreduce)  | every rank      |
//! | `AsyncEasgd`  | the same exchange with a parameter server, one rank at a time    | rank 0's server |
//! | `AsyncEamsgd` | `AsyncEasgd` with Nesterov momentum `δ` on the local steps       | rank 0's server |
//! | `Downpour`    | push `x − x₀` (`c += x − x₀`), pull `x = x₀ = c`                   | rank 0's server |
//! | `Adag`        | push `(x − x₀)/window`, pull `x = x₀ = c`                          | rank 0's server |
//!
//! `α = ρ·η` (Zhang, Choromanska & LeCun 2015), with `η` the strategy's `learning_rate` or, when it has
//! none, the optimizer's current rate. The center is the trained model for the elastic and parameter-server
//! strategies; it is also what a checkpoint holds. `Single` trains on one worker (dist-keras's baseline).
//! The functions below are the update rules on flat parameter vectors, shared by the trainer and the
//! parameter server.

use serde::{Deserialize, Serialize};

use super::error::OptionsError;

/// How ranks combine their learning (default: [`Strategy::Synchronous`]).
///
/// ```
/// use hearth_torch::train::{Strategy, TrainSettings};
/// let settings = TrainSettings {
///     strategy: Strategy::AsyncEasgd { rho: 5.0, communication_window: 30, learning_rate: Some(0.04) },
///     ..TrainSettings::default()
/// };
/// assert!(settings.strategy.is_asynchronous());
/// assert_eq!(settings.strategy.alpha(0.1), Some(0.2));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "snake_case")]
pub enum Strategy {
    /// Every step's gradient averaged over all ranks (allreduce); deterministic for a seed.
    #[default]
    Synchronous,
    /// One worker trains on every row (the baseline the others are compared with).
    Single,
    /// Synchronous elastic averaging: every `communication_window` steps each rank moves `α(x − c)` toward
    /// the center `c`, and the center moves by the sum of those moves. Deterministic for a seed.
    Easgd {
        /// The elastic force ρ (`α = ρ·η`).
        rho: f64,
        /// Local steps between exchanges.
        communication_window: usize,
        /// η of `α = ρ·η` (default: the optimizer's current rate).
        #[serde(default)]
        learning_rate: Option<f64>,
    },
    /// Asynchronous EASGD: each rank exchanges with the parameter server on its own schedule.
    AsyncEasgd {
        /// The elastic force ρ.
        rho: f64,
        /// Local steps between exchanges.
        communication_window: usize,
        /// η of `α = ρ·η` (default: the optimizer's current rate).
        #[serde(default)]
        learning_rate: Option<f64>,
    },
    /// Asynchronous EAMSGD: `AsyncEasgd` whose local steps carry Nesterov momentum `momentum`.
    AsyncEamsgd {
        /// The elastic force ρ.
        rho: f64,
        /// Local steps between exchanges.
        communication_window: usize,
        /// The momentum δ of the local steps.
        momentum: f64,
        /// η of `α = ρ·η` (default: the optimizer's current rate).
        #[serde(default)]
        learning_rate: Option<f64>,
    },
    /// DOWNPOUR (Dean et al. 2012): each rank pushes what its parameters moved since its last pull, then
    /// pulls the center.
    Downpour {
        /// Local steps between exchanges.
        communication_window: usize,
    },
    /// ADAG (Hermans 2017): DOWNPOUR with the pushed change divided by the window.
    Adag {
        /// Local steps between exchanges.
        communication_window: usize,
    },
    /// Model averaging every `period` local steps (local SGD).
    LocalSgd {
        /// Local steps between averagings.
        period: usize,
    },
}

impl Strategy {
    /// Its name as options and tables spell it (`async_easgd`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::Synchronous => "synchronous",
            Strategy::Single => "single",
            Strategy::Easgd { .. } => "easgd",
            Strategy::AsyncEasgd { .. } => "async_easgd",
            Strategy::AsyncEamsgd { .. } => "async_eamsgd",
            Strategy::Downpour { .. } => "downpour",
            Strategy::Adag { .. } => "adag",
            Strategy::LocalSgd { .. } => "local_sgd",
        }
    }

    /// Whether every step's gradient is averaged over the ranks (`Synchronous` and `Single`).
    pub fn averages_gradients(&self) -> bool {
        matches!(self, Strategy::Synchronous | Strategy::Single)
    }

    /// Whether ranks exchange with a parameter server, each at its own pace.
    pub fn is_asynchronous(&self) -> bool {
        matches!(
            self,
            Strategy::AsyncEasgd { .. }
                | Strategy::AsyncEamsgd { .. }
                | Strategy::Downpour { .. }
                | Strategy::Adag { .. }
        )
    }

    /// Local steps between exchanges (1 for the strategies that combine every step).
    pub fn window(&self) -> usize {
        match self {
            Strategy::Synchronous | Strategy::Single => 1,
            Strategy::Easgd {
                communication_window, ..
            }
            | Strategy::AsyncEasgd {
                communication_window, ..
            }
            | Strategy::AsyncEamsgd {
                communication_window, ..
            }
            | Strategy::Downpour { communication_window }
            | Strategy::Adag { communication_window } => *communication_window,
            Strategy::LocalSgd { period } => *period,
        }
    }

    /// The elastic moving rate `α = ρ·η` of the EASGD family, `η` being the strategy's learning rate or
    /// `optimizer_rate`; none for the others.
    pub fn alpha(&self, optimizer_rate: f64) -> Option<f64> {
        match self {
            Strategy::Easgd { rho, learning_rate, .. }
            | Strategy::AsyncEasgd { rho, learning_rate, .. }
            | Strategy::AsyncEamsgd { rho, learning_rate, .. } => Some(rho * learning_rate.unwrap_or(optimizer_rate)),
            _ => None,
        }
    }

    /// The Nesterov momentum of the local steps (`AsyncEamsgd`).
    pub fn momentum(&self) -> Option<f64> {
        match self {
            Strategy::AsyncEamsgd { momentum, .. } => Some(*momentum),
            _ => None,
        }
    }

    /// Checks the parameters, given the optimizer's rate (scaled by the ranks where it is): windows ≥ 1,
    /// `0 < α < 1` (from α = 1 the elastic move overshoots the center; from 2 it diverges),
    /// `0 ≤ momentum < 1`. The message names the parameter and its value.
    pub fn check(&self, optimizer_rate: f64) -> Result<(), OptionsError> {
        let refused = |message: String| OptionsError {
            option: "strategy",
            message,
        };
        if self.window() == 0 {
            let name = if matches!(self, Strategy::LocalSgd { .. }) {
                "period"
            } else {
                "communication_window"
            };
            return Err(refused(format!("{} needs {name} ≥ 1, got 0", self.name())));
        }
        if let Some(alpha) = self.alpha(optimizer_rate)
            && !(alpha > 0.0 && alpha < 1.0)
        {
            return Err(refused(format!(
                "{} needs 0 < α = rho × learning_rate < 1, got α = {alpha}",
                self.name()
            )));
        }
        if let Some(momentum) = self.momentum()
            && !(0.0..1.0).contains(&momentum)
        {
            return Err(refused(format!(
                "{} needs 0 ≤ momentum < 1, got {momentum}",
                self.name()
            )));
        }
        Ok(())
    }
}

/// What a DOWNPOUR or ADAG rank pushes: `(x − anchor) / divisor`, the move since its last pull (ADAG divides
/// by the window, DOWNPOUR by 1).
pub fn pushed_change(x: &[f32], anchor: &[f32], divisor: f32) -> Vec<f32> {
    x.iter().zip(anchor).map(|(x, a)| (x - a) / divisor).collect()
}

#[cfg(test)]
mod tests {
    //! Two workers, two steps, numbers worked out by hand in the comments. Each worker steps with plain SGD
    //! at η = 0.1 on the gradient given, starting from the center's 2.0.
    use super::*;
    use hearth_collective::{add_into, elastic_exchange};

    const ETA: f32 = 0.1;

    fn sgd(x: &mut [f32], g: f32) {
        x.iter_mut().for_each(|x| *x -= ETA * g);
    }

    #[test]
    fn synchronous_easgd_two_workers_two_steps() {
        // α = ρη = 5 × 0.1 = 0.5, window 1; center and both workers start at 2.0.
        let alpha = Strategy::Easgd {
            rho: 5.0,
            communication_window: 1,
            learning_rate: None,
        }
        .alpha(0.1)
        .unwrap();
        assert!((alpha - 0.5).abs() < 1e-12);
        let (mut x0, mut x1, mut c) = ([2.0f32], [2.0f32], [2.0f32]);
        // Step 1: gradients 10 and −10 → x0 = 1, x1 = 3; E0 = 0.5(1 − 2) = −0.5, E1 = 0.5; x0 = 1.5, x1 = 2.5;
        // c += −0.5 + 0.5 → 2.0.
        sgd(&mut x0, 10.0);
        sgd(&mut x1, -10.0);
        let (e0, e1) = (elastic_exchange(&mut x0, &c, 0.5), elastic_exchange(&mut x1, &c, 0.5));
        add_into(&mut c, &e0);
        add_into(&mut c, &e1);
        assert_eq!((x0, x1, c), ([1.5], [2.5], [2.0]));
        // Step 2: gradients 10 and 10 → x0 = 0.5, x1 = 1.5; E0 = 0.5(0.5 − 2) = −0.75, E1 = −0.25;
        // x0 = 1.25, x1 = 1.75; c = 2 − 1 = 1.0.
        sgd(&mut x0, 10.0);
        sgd(&mut x1, 10.0);
        let (e0, e1) = (elastic_exchange(&mut x0, &c, 0.5), elastic_exchange(&mut x1, &c, 0.5));
        add_into(&mut c, &e0);
        add_into(&mut c, &e1);
        assert_eq!((x0, x1, c), ([1.25], [1.75], [1.0]));
    }

    #[test]
    fn asynchronous_easgd_two_workers_two_steps_one_at_a_time() {
        // α = 0.5; the server applies worker 0's exchange, then worker 1's, each against the center as it is.
        let (mut x0, mut x1, mut c) = ([2.0f32], [2.0f32], [2.0f32]);
        sgd(&mut x0, 10.0); // 1.0
        sgd(&mut x1, -10.0); // 3.0
        let e0 = elastic_exchange(&mut x0, &c, 0.5); // E0 = −0.5, x0 = 1.5
        add_into(&mut c, &e0); // c = 1.5
        let e1 = elastic_exchange(&mut x1, &c, 0.5); // E1 = 0.5(3 − 1.5) = 0.75, x1 = 2.25
        add_into(&mut c, &e1); // c = 2.25
        assert_eq!((x0, x1, c), ([1.5], [2.25], [2.25]));
        sgd(&mut x1, 10.0); // worker 1 first this time: x1 = 1.25
        sgd(&mut x0, 10.0); // x0 = 0.5
        let e1 = elastic_exchange(&mut x1, &c, 0.5); // E1 = 0.5(1.25 − 2.25) = −0.5, x1 = 1.75
        add_into(&mut c, &e1); // c = 1.75
        let e0 = elastic_exchange(&mut x0, &c, 0.5); // E0 = 0.5(0.5 − 1.75) = −0.625, x0 = 1.125
        add_into(&mut c, &e0); // c = 1.125
        assert_eq!((x0, x1, c), ([1.125], [1.75], [1.125]));
    }

    #[test]
    fn downpour_and_adag_push_the_change_since_the_last_pull() {
        // Window 2: each worker takes two steps from the pulled 2.0, pushes, and pulls.
        for (divisor, after_first, after_both) in [(1.0, 0.0, 2.0), (2.0, 1.0, 2.0)] {
            let mut c = [2.0f32];
            let (mut x0, mut x1) = ([2.0f32], [2.0f32]);
            sgd(&mut x0, 10.0);
            sgd(&mut x0, 10.0); // x0 = 0.0: moved −2
            sgd(&mut x1, -10.0);
            sgd(&mut x1, -10.0); // x1 = 4.0: moved +2
            add_into(&mut c, &pushed_change(&x0, &[2.0], divisor));
            assert_eq!(c, [after_first]);
            x0 = c; // pull
            add_into(&mut c, &pushed_change(&x1, &[2.0], divisor));
            assert_eq!(c, [after_both]);
            assert_eq!(x0, [after_first]);
        }
    }

    #[test]
    fn checks_name_the_parameter() {
        let too_strong = Strategy::AsyncEasgd {
            rho: 50.0,
            communication_window: 3,
            learning_rate: Some(0.1),
        };
        assert!(too_strong.check(1e-3).unwrap_err().to_string().contains("α = 5"));
        let no_period = Strategy::LocalSgd { period: 0 };
        assert!(no_period.check(1e-3).unwrap_err().to_string().contains("period ≥ 1"));
        let momentum = Strategy::AsyncEamsgd {
            rho: 5.0,
            communication_window: 10,
            momentum: 1.5,
            learning_rate: Some(0.01),
        };
        assert!(momentum.check(1e-3).unwrap_err().to_string().contains("momentum"));
        assert!(Strategy::Synchronous.check(1e-3).is_ok());
    }

    #[test]
    fn strategies_read_from_json() {
        let s: Strategy = serde_json::from_str(r#"{"strategy": "downpour", "communication_window": 5}"#).unwrap();
        assert_eq!(
            s,
            Strategy::Downpour {
                communication_window: 5
            }
        );
        assert_eq!(
            serde_json::to_value(Strategy::LocalSgd { period: 4 }).unwrap()["strategy"],
            "local_sgd"
        );
    }
}
