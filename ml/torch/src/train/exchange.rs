//! What a rank does between its local steps under a [`Strategy`] that does not average gradients: count
//! steps, and every window combine parameters with the other ranks (an allreduce) or with the parameter
//! server on rank 0 — the rules of [`strategy`](super::strategy), applied to the optimizer's flat parameter
//! buffer.

use hearth_collective::{CenterClient, CenterServer, Communicator, Staleness};
use hearth_collective::{add_into, elastic_exchange};
use tch::{Device, Tensor};

use super::error::TrainError;
use super::strategy::{Strategy, pushed_change};

/// A rank's side of its strategy: what it keeps between exchanges.
pub(super) struct Exchange {
    strategy: Strategy,
    rank: usize,
    world: usize,
    /// Local steps since the last exchange.
    pending: usize,
    state: State,
}

enum State {
    /// `Synchronous` and `Single`: the gradient allreduce is the whole exchange.
    Gradients,
    /// `LocalSgd`: nothing kept; parameters are averaged.
    Average,
    /// `Easgd`: the center, the same on every rank.
    Elastic { center: Vec<f32> },
    /// The asynchronous strategies.
    Server {
        /// Rank 0's server (kept alive while its rank trains).
        _server: Option<CenterServer>,
        client: CenterClient,
        /// The parameters as last pulled (DOWNPOUR, ADAG).
        anchor: Vec<f32>,
        /// EAMSGD's velocity and the parameters before the look-ahead.
        momentum: Option<Momentum>,
    },
}

/// Nesterov momentum around any optimizer's local step (EAMSGD): look ahead by `δ·v`, step from there, and
/// take the velocity as where the step ended minus where it began.
struct Momentum {
    delta: f64,
    velocity: Tensor,
    before: Tensor,
}

impl Momentum {
    fn new(delta: f64, values: &Tensor) -> Self {
        Self {
            delta,
            velocity: values.zeros_like(),
            before: values.zeros_like(),
        }
    }

    /// `x += δ·v`, remembering `x` first.
    fn look_ahead(&mut self, values: &mut Tensor) {
        tch::no_grad(|| {
            self.before.copy_(values);
            let _ = values.g_add_(&(&self.velocity * self.delta));
        });
    }

    /// `v = x − x_before` once the step is taken.
    fn record(&mut self, values: &Tensor) {
        tch::no_grad(|| self.velocity.copy_(&(values - &self.before)));
    }
}

impl Exchange {
    /// Sets up `strategy` for this rank once every rank holds the same starting `values` (the center's
    /// start); the asynchronous strategies start rank 0's parameter server here.
    pub(super) fn start(strategy: &Strategy, comm: &mut Communicator, values: &Tensor) -> Result<Self, TrainError> {
        let (rank, world) = (comm.rank(), comm.world_size());
        let state = match strategy {
            Strategy::Synchronous | Strategy::Single => State::Gradients,
            Strategy::LocalSgd { .. } => State::Average,
            Strategy::Easgd { .. } => State::Elastic {
                center: host(rank, values)?,
            },
            _ => {
                let start = host(rank, values)?;
                let (server, client) = comm.start_center(&start)?;
                State::Server {
                    _server: server,
                    client,
                    anchor: start,
                    momentum: strategy.momentum().map(|delta| Momentum::new(delta, values)),
                }
            }
        };
        Ok(Self {
            strategy: strategy.clone(),
            rank,
            world,
            pending: 0,
            state,
        })
    }

    /// Before a local step: EAMSGD's look-ahead `x += δ·v`.
    pub(super) fn before_step(&mut self, values: &mut Tensor) {
        if let State::Server { momentum: Some(m), .. } = &mut self.state {
            m.look_ahead(values);
        }
    }

    /// After a local step (`stepped` is false for a rank with no rows left, which still counts the step so
    /// that the synchronous exchanges stay in step): EAMSGD's velocity, then the window's exchange if due.
    pub(super) fn after_step(
        &mut self,
        comm: &mut Communicator,
        values: &mut Tensor,
        learning_rate: f64,
        stepped: bool,
    ) -> Result<(), TrainError> {
        if matches!(self.state, State::Gradients) {
            return Ok(());
        }
        if let (true, State::Server { momentum: Some(m), .. }) = (stepped, &mut self.state) {
            m.record(values);
        }
        self.pending += 1;
        if self.pending >= self.strategy.window() {
            self.exchange(comm, values, learning_rate)?;
        }
        Ok(())
    }

    /// At the end of an epoch: the exchange of a partly run window, so no local step is left out of the
    /// center (the synchronous strategies run it on every rank alike, as their step counts agree).
    pub(super) fn flush(
        &mut self,
        comm: &mut Communicator,
        values: &mut Tensor,
        learning_rate: f64,
    ) -> Result<(), TrainError> {
        if self.pending > 0 {
            self.exchange(comm, values, learning_rate)?;
        }
        Ok(())
    }

    /// The center, for the strategies whose model it is (the EASGD family and the parameter-server ones).
    pub(super) fn center(&mut self) -> Result<Option<Vec<f32>>, TrainError> {
        Ok(match &mut self.state {
            State::Elastic { center } => Some(center.clone()),
            State::Server { client, .. } => Some(client.pull()?),
            State::Gradients | State::Average => None,
        })
    }

    /// Whether ranks must wait for each other after reading the center at an epoch's end, before any of them
    /// changes it again (the asynchronous strategies).
    pub(super) fn needs_settling(&self) -> bool {
        matches!(self.state, State::Server { .. })
    }

    /// Ends the strategy after the last epoch: this rank says goodbye to the parameter server.
    pub(super) fn finish(self) {
        if let State::Server { client, .. } = self.state {
            client.finish();
        }
    }

    /// This rank's staleness at the parameter server (the asynchronous strategies).
    pub(super) fn staleness(&self) -> Option<Staleness> {
        match &self.state {
            State::Server { client, .. } => Some(client.staleness()),
            _ => None,
        }
    }

    fn exchange(&mut self, comm: &mut Communicator, values: &mut Tensor, learning_rate: f64) -> Result<(), TrainError> {
        let steps = std::mem::take(&mut self.pending);
        let rank = self.rank;
        let mut x = host(rank, values)?;
        let alpha = self.strategy.alpha(learning_rate).unwrap_or(0.0) as f32;
        match &mut self.state {
            State::Gradients => return Ok(()),
            State::Average => {
                comm.allreduce_sum(&mut x)?;
                let world = self.world as f32;
                x.iter_mut().for_each(|v| *v /= world);
            }
            State::Elastic { center } => {
                let mut moved = elastic_exchange(&mut x, center, alpha);
                comm.allreduce_sum(&mut moved)?;
                add_into(center, &moved);
            }
            State::Server { client, anchor, .. } => match &self.strategy {
                Strategy::Downpour { .. } | Strategy::Adag { .. } => {
                    // ADAG normalises by the steps accumulated: the window, or fewer at an epoch's end.
                    let divisor = match self.strategy {
                        Strategy::Adag { .. } => steps.max(1) as f32,
                        _ => 1.0,
                    };
                    x = client.add(&pushed_change(&x, anchor, divisor))?;
                    anchor.clone_from(&x);
                }
                _ => {
                    let moved = client.elastic(&x, alpha)?;
                    x.iter_mut().zip(&moved).for_each(|(x, e)| *x -= e);
                }
            },
        }
        set(rank, values, &x)
    }
}

/// Puts `center` (the flat parameters) into `values`, returning what `values` held.
pub(super) fn swap_in(rank: usize, values: &mut Tensor, center: &[f32]) -> Result<Vec<f32>, TrainError> {
    let local = host(rank, values)?;
    set(rank, values, center)?;
    Ok(local)
}

/// The flat parameters on the host.
fn host(rank: usize, values: &Tensor) -> Result<Vec<f32>, TrainError> {
    values
        .f_to_device(Device::Cpu)
        .and_then(|t| Vec::<f32>::try_from(&t))
        .map_err(|source| TrainError::Torch { rank, source })
}

/// Overwrites the flat parameters with `from`.
pub(super) fn set(rank: usize, values: &mut Tensor, from: &[f32]) -> Result<(), TrainError> {
    let source = Tensor::f_from_slice(from)
        .and_then(|t| t.f_to_device(values.device()))
        .map_err(|source| TrainError::Torch { rank, source })?;
    tch::no_grad(|| values.f_copy_(&source)).map_err(|source| TrainError::Torch { rank, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_collective::LocalWorld;

    /// Two ranks start from the center's 2.0, each moves its parameter by `moves[rank][step]` (standing in for
    /// its optimizer's step) and calls `after_step`; `ordered` runs rank 0's step before rank 1's (for the
    /// parameter server, whose result depends on the order). Returns each rank's parameter and the center.
    fn two_ranks(
        strategy: Strategy,
        moves: [[f32; 2]; 2],
        ordered: bool,
    ) -> Vec<(f32, Option<f32>, Option<Staleness>)> {
        LocalWorld::new(2)
            .run(|mut comm| {
                let rank = comm.rank();
                let mut values = Tensor::from_slice(&[2.0f32]);
                let mut exchange = Exchange::start(&strategy, &mut comm, &values).unwrap();
                for moved in moves[rank] {
                    for turn in 0..2 {
                        if (ordered && turn == rank) || (!ordered && turn == 0) {
                            let _ = values.g_add_(&Tensor::from_slice(&[moved]));
                            exchange.after_step(&mut comm, &mut values, 0.1, true).unwrap();
                        }
                        if ordered {
                            comm.barrier().unwrap();
                        }
                    }
                }
                let center = exchange.center().unwrap().map(|c| c[0]);
                let staleness = exchange.staleness();
                comm.barrier().unwrap();
                exchange.finish();
                (values.double_value(&[0]) as f32, center, staleness)
            })
            .unwrap()
    }

    #[test]
    fn local_sgd_averages_every_period() {
        // Step 1: 1 and 3 → both 2; step 2: 1 and 1 → both 1.
        let ranks = two_ranks(Strategy::LocalSgd { period: 1 }, [[-1.0, -1.0], [1.0, -1.0]], false);
        assert_eq!(ranks.iter().map(|r| r.0).collect::<Vec<_>>(), [1.0, 1.0]);
    }

    #[test]
    fn synchronous_easgd_through_the_ring() {
        // α = 5 × 0.1 (the rate passed); the numbers of `strategy`'s hand-worked test: x 1.25 and 1.75, c 1.
        let strategy = Strategy::Easgd {
            rho: 5.0,
            communication_window: 1,
            learning_rate: None,
        };
        let ranks = two_ranks(strategy, [[-1.0, -1.0], [1.0, -1.0]], false);
        assert_eq!(
            ranks.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
            [(1.25, Some(1.0)), (1.75, Some(1.0))]
        );
    }

    #[test]
    fn downpour_through_the_parameter_server() {
        // Step 1: rank 0 pushes −1 (c = 1), then rank 1 pushes +1 (c = 2, one update stale); step 2: rank 0
        // moves from 1 to 0 and pushes −1 (c = 1, one stale), rank 1 from 2 to 1, pushes −1 (c = 0).
        let ranks = two_ranks(
            Strategy::Downpour {
                communication_window: 1,
            },
            [[-1.0, -1.0], [1.0, -1.0]],
            true,
        );
        let (x, center): (Vec<f32>, Vec<_>) = ranks.iter().map(|r| (r.0, r.1)).unzip();
        assert_eq!((x, center), (vec![1.0, 0.0], vec![Some(0.0), Some(0.0)]));
        let most = ranks.iter().map(|r| r.2.unwrap().max).collect::<Vec<_>>();
        assert_eq!(most, [1, 1]);
    }

    #[test]
    fn asynchronous_easgd_through_the_parameter_server() {
        // α = 0.5, exchanges in rank order. Step 1: rank 0 at 1, E = −0.5 → x 1.5, c 1.5; rank 1 at 3,
        // E = 0.75 → x 2.25, c 2.25. Step 2: rank 0 at 0.5, E = −0.875 → x 1.375, c 1.375; rank 1 at 1.25,
        // E = −0.0625 → x 1.3125, c 1.3125.
        let strategy = Strategy::AsyncEasgd {
            rho: 5.0,
            communication_window: 1,
            learning_rate: Some(0.1),
        };
        let ranks = two_ranks(strategy, [[-1.0, -1.0], [1.0, -1.0]], true);
        let x: Vec<f32> = ranks.iter().map(|r| r.0).collect();
        assert_eq!(x, [1.375, 1.3125]);
        assert_eq!((ranks[0].1, ranks[1].1), (Some(1.3125), Some(1.3125)));
    }

    #[test]
    fn eamsgd_looks_ahead_by_the_momentum() {
        // δ = 0.5, v = 0 at first, plain SGD at η = 0.1 on gradient 10 (a move of −1) each step.
        // Step 1: look-ahead x = 2; step → 1; v = 1 − 2 = −1.
        // Step 2: look-ahead x = 1 + 0.5(−1) = 0.5; step → −0.5; v = −0.5 − 1 = −1.5.
        let mut values = Tensor::from_slice(&[2.0f32]);
        let mut momentum = Momentum::new(0.5, &values);
        for expected in [(1.0, -1.0), (-0.5, -1.5)] {
            momentum.look_ahead(&mut values);
            let _ = values.g_sub_(&Tensor::from_slice(&[1.0f32]));
            momentum.record(&values);
            let (x, v) = (values.double_value(&[0]), momentum.velocity.double_value(&[0]));
            assert_eq!((x, v), expected);
        }
    }
}
