//! One rank's training loop: the same loop on every rank, kept in step by the communicator.
//!
//! Rank 0's initial parameters are broadcast to all. Before each epoch the ranks agree on the number of
//! steps — the most any rank has — and a rank whose shard is exhausted (or empty) still takes part in every
//! step with a zero contribution. Each step sums the loss over the local batch (each row's weighted by its
//! sample weight, if the shard has them), backpropagates, and allreduces one fused buffer holding every
//! gradient plus the step's row count (or weight); gradients are then divided by the global count. So N
//! ranks with batch `b` compute exactly what one rank computes with the concatenated batch of `N·b` rows.
//! Loss and correct predictions are summed on the device and allreduced once an epoch. On a GPU the shard is
//! moved to the device once ([`ShardTensors`]), and when every rank is on one NCCL sums the gradients there
//! ([`Averaging`]); under mixed precision the passes run in bfloat16 over the fp32 master parameters.
//!
//! ```text
//! for epoch:   order rows ─ agree on steps (max over ranks)
//!   for step:  zero_grad ─ forward/backward on the local batch ─ allreduce [gradient | rows] ─ step
//!   then:      allreduce [loss, hits, rows] ─ validation ─ history ─ checkpoint to `on_epoch` (rank 0)
//! ```
//!
//! Under [`EarlyStopping`](super::EarlyStopping), rank 0 keeps a copy of the best epoch's weights, decides
//! from the history before each epoch whether to go on, and broadcasts its decision, so every rank stops
//! at the same epoch; the best weights are the trained model.
//!
//! That is the [`Strategy::Synchronous`] default. Under the other strategies each rank steps on its own
//! gradient, and the [`Exchange`] combines parameters every window (an allreduce, or rank 0's parameter
//! server); an asynchronous rank runs its own number of steps, and the ranks meet at each epoch's end (for
//! the epoch's figures and checkpoint) within the job's deadline. At an epoch's end the window is flushed, and
//! for the strategies with a center, the center is put in place for validation and the checkpoint (and
//! kept after the last epoch: it is the model).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use hearth_collective::Communicator;
use hearth_stats::random::Draws;
use tch::{Device, Kind, Tensor};

use super::averaging::Averaging;
use super::batches::Batch;
use super::checkpoint::Checkpoint;
use super::device::device_name;
use super::early_stopping::BestWeights;
use super::error::{OptionsError, TrainError};
use super::exchange::{Exchange, set, swap_in};
use super::loss::{hits_of, loss_of};
use super::optimizer::Optimizer;
use super::options::{Loss, TrainOptions};
use super::precision::{Bf16Compute, computing, for_loss};
use super::report::{EpochStats, RankOutcome, RankReport};
use super::rows::{RankData, RankRows};
use super::setup::{Placement, image_shape, precision_split};
use super::strategy::Strategy;
use crate::model::{NamedTensor, Network, host_copies, load_into};

/// Trains one rank's shard with the other ranks of a communicator.
///
/// ```
/// use hearth_collective::LocalWorld;
/// use hearth_torch::data::Shard;
/// use hearth_torch::model::ModelSpec;
/// use hearth_torch::train::{DeviceChoice, RankTrainer, TrainOptions, TrainSettings};
///
/// let shard = Shard::new(vec![0.0, 1.0, 1.0, 0.0], vec![0.0, 1.0], 2).unwrap();
/// let settings = TrainSettings { epochs: 2, device: DeviceChoice::Cpu, ..TrainSettings::default() };
/// let options = TrainOptions::new(ModelSpec::Linear { inputs: 2, outputs: 2 }, settings);
/// let outcomes = LocalWorld::new(2)
///     .run(|mut comm| RankTrainer::new(&shard.round_robin(comm.rank(), 2), &options).run(&mut comm))
///     .unwrap();
/// assert_eq!(outcomes[0].as_ref().unwrap().report.history.len(), 2);
/// assert!(outcomes[1].as_ref().unwrap().tensors.is_none()); // rank 0 alone returns the tensors
/// ```
pub struct RankTrainer<'a> {
    training: RankData<'a>,
    options: &'a TrainOptions,
    validation: Option<RankData<'a>>,
    resume: Option<&'a Checkpoint>,
    on_epoch: Box<dyn FnMut(&Checkpoint) + 'a>,
    cancelled: Option<&'a AtomicBool>,
}

impl<'a> RankTrainer<'a> {
    /// A trainer of `rows` (a [`Shard`](crate::data::Shard) in memory, or a
    /// [`StreamedShard`](crate::data::StreamedShard) read from disk every epoch) with `options` (the same
    /// options on every rank).
    pub fn new(rows: impl Into<RankData<'a>>, options: &'a TrainOptions) -> Self {
        Self {
            training: rows.into(),
            options,
            validation: None,
            resume: None,
            on_epoch: Box::new(|_| {}),
            cancelled: None,
        }
    }

    /// This rank's validation rows: every epoch reports the loss and accuracy over all ranks' validation rows.
    pub fn validation(mut self, rows: impl Into<RankData<'a>>) -> Self {
        self.validation = Some(rows.into());
        self
    }

    /// Resume from `checkpoint` instead of starting afresh (the same checkpoint on every rank).
    pub fn resume(mut self, checkpoint: Option<&'a Checkpoint>) -> Self {
        self.resume = checkpoint;
        self
    }

    /// Called on rank 0 with a checkpoint after every epoch.
    pub fn on_epoch(mut self, on_epoch: impl FnMut(&Checkpoint) + 'a) -> Self {
        self.on_epoch = Box::new(on_epoch);
        self
    }

    /// Stops training, with [`TrainError::Cancelled`], at the first step after `flag` is set (a killed job).
    pub fn cancel_flag(mut self, flag: &'a AtomicBool) -> Self {
        self.cancelled = Some(flag);
        self
    }

    /// Trains with the other ranks of `comm`; rank 0's outcome carries the trained tensors.
    ///
    /// After each epoch, for the strategies that keep a center (the EASGD family, the parameter-server
    /// ones), the center is what is validated and checkpointed; after the last it is the trained model.
    pub fn run(mut self, comm: &mut Communicator) -> Result<RankOutcome, TrainError> {
        let started = Instant::now();
        let (mut job, training, validation) = Job::start(&self, comm)?;
        let mut exchange = Exchange::start(&self.options.settings.strategy, comm, &job.optimizer.values())?;
        let (first_epoch, epochs) = (self.resume.map_or(0, |c| c.epoch), self.options.settings.epochs);
        for epoch in first_epoch..epochs {
            if job.best.stops(&job.history, comm)? {
                break;
            }
            let mut stats = job.run_epoch(comm, &mut exchange, (epoch, &training), self.cancelled)?;
            let mut values = job.optimizer.values();
            let local = match exchange.center()? {
                Some(center) => Some(swap_in(job.rank, &mut values, &center)?),
                None => None,
            };
            if let Some(validation) = &validation {
                let (loss, accuracy) = job.evaluate(comm, validation)?;
                stats.validation_loss = Some(loss);
                stats.validation_accuracy = Some(accuracy).filter(|_| job.options.loss != Loss::MeanSquaredError);
            }
            job.history.push(stats);
            job.best
                .observe(job.rank, &job.history, &job.named)
                .map_err(|e| job.torch(e))?;
            if job.rank == 0 {
                (self.on_epoch)(&job.checkpoint(epoch + 1)?);
            }
            if let Some(local) = local.filter(|_| epoch + 1 < epochs) {
                set(job.rank, &mut values, &local)?;
            }
            if exchange.needs_settling() {
                comm.barrier()?;
            }
        }
        let staleness = exchange.staleness();
        exchange.finish();
        let tensors = match job.rank {
            0 => Some(job.trained_tensors()?),
            _ => None,
        };
        Ok(RankOutcome {
            report: RankReport {
                rank: job.rank,
                host: job.host,
                device: device_name(job.device),
                rows: training.rows(),
                steps: job.steps_taken,
                streamed: training.streamed(),
                peak_bytes: (training.peak_bytes() + validation.as_ref().map_or(0, RankRows::peak_bytes)) as u64,
                history: job.history,
                seconds: started.elapsed().as_secs_f64(),
                staleness,
            },
            tensors,
        })
    }
}

/// Steps between marks of a GPU's queue when NCCL averages (its operations have no deadline of their own):
/// the device runs at most two marks behind, fewer launches than its queue holds.
const MARK_EVERY: usize = 4;

/// Validation rows scored at once.
const EVALUATION_ROWS: usize = 65_536;

/// A rank's training in progress: the network on its device, the optimizer, and the buffer gradients are
/// allreduced in.
struct Job<'a> {
    options: &'a TrainOptions,
    rank: usize,
    world: usize,
    host: String,
    device: Device,
    network: Network,
    named: Vec<(String, Tensor)>,
    optimizer: Optimizer,
    class_weights: Option<Tensor>,
    /// The `[C, H, W]` shape of the images, when training augments them.
    image_shape: Option<[i64; 3]>,
    /// How every step's gradient is averaged over the ranks (the synchronous strategy on several ranks), if it
    /// is.
    averaging: Averaging,
    /// The bfloat16 copy the network computes with, under mixed precision.
    bf16: Option<Bf16Compute>,
    history: Vec<EpochStats>,
    /// Under early stopping, rank 0's copy of the best epoch's weights.
    best: BestWeights,
    steps_taken: usize,
}

/// What one epoch's steps add up on this rank, summed where they are computed (no wait on the device a
/// step); read once an epoch.
struct EpochSums {
    loss: Tensor,
    correct: Tensor,
    /// Rows stepped on.
    rows: f64,
    /// Their total sample weight (the rows, without weights): what loss and hits are divided by.
    weight: f64,
    learning_rate: f64,
}

impl<'a> Job<'a> {
    /// Checks the rows (and gives them where the loop reads them), picks the device and threads, builds the
    /// network (or loads the checkpoint), and gives every rank rank 0's tensors.
    #[allow(clippy::type_complexity)]
    fn start(
        trainer: &RankTrainer<'a>,
        comm: &mut Communicator,
    ) -> Result<(Self, RankRows<'a>, Option<RankRows<'a>>), TrainError> {
        let options = trainer.options;
        let settings = &options.settings;
        let Placement { rank, host, device } = Placement::of(comm, settings)?;

        let model = (options.model.input_features(), options.model.outputs()?, options.loss);
        let training = RankRows::new(trainer.training, "training", model, device, rank)?;
        let validation = trainer
            .validation
            .map(|rows| RankRows::new(rows, "validation", model, device, rank))
            .transpose()?;
        let refused = |e: OptionsError| TrainError::Options {
            rank,
            message: e.option.to_string(),
            cause: Some(e),
        };
        settings.optimizer.check().map_err(refused)?;
        if let Some(rule) = &settings.early_stopping {
            rule.check().map_err(refused)?;
            if trainer.validation.is_none() {
                return Err(TrainError::Options {
                    rank,
                    message: "early_stopping decides on the validation loss, and this training has no validation \
                              rows (mark some with a validation indicator column)"
                        .to_string(),
                    cause: None,
                });
            }
        }
        let network = Network::new(&options.model, device, settings.seed)?;
        let optimizer = Optimizer::new(settings.optimizer.clone(), network.parameters());
        let (named, bf16) = precision_split(rank, options, &network, &optimizer)?;
        let world = comm.world_size();
        let strategy = &settings.strategy;
        strategy.check(settings.scaled_learning_rate(world)).map_err(refused)?;
        if *strategy == Strategy::Single && world > 1 {
            return Err(TrainError::Options {
                rank,
                message: format!("strategy single trains on one worker, and this stage has {world}"),
                cause: None,
            });
        }
        let averaging = match strategy.averages_gradients() && world > 1 {
            true => Averaging::start(comm, device)?,
            false => Averaging::Not,
        };
        let image_shape = image_shape(rank, options)?;
        let mut job = Self {
            options,
            rank,
            world,
            host,
            device,
            class_weights: settings
                .class_weights
                .as_ref()
                .map(|w| Tensor::from_slice(w).to_kind(Kind::Float).to_device(device)),
            averaging,
            bf16,
            image_shape,
            network,
            named,
            optimizer,
            history: Vec::new(),
            best: BestWeights::new(settings.early_stopping),
            steps_taken: 0,
        };
        if let Some(checkpoint) = trainer.resume {
            job.restore(checkpoint)?;
        }
        job.broadcast_tensors(comm)?;
        Ok((job, training, validation))
    }

    fn torch(&self, source: tch::TchError) -> TrainError {
        TrainError::Torch {
            rank: self.rank,
            source,
        }
    }

    /// Loads a checkpoint's network and optimizer state and history.
    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<(), TrainError> {
        load_into(&self.named, &checkpoint.tensors).map_err(|e| TrainError::loading(self.rank, e))?;
        let state: Vec<Tensor> = checkpoint
            .optimizer_state
            .iter()
            .map(|t| {
                Tensor::from_slice(&t.values)
                    .view(t.shape.as_slice())
                    .to_device(self.device)
            })
            .collect();
        self.optimizer.restore(checkpoint.optimizer_steps, &state);
        self.history = checkpoint.history.clone();
        self.best.restore(&checkpoint.best_tensors);
        Ok(())
    }

    /// Rank 0's tensors to every rank (parameters and batch-norm statistics alike).
    fn broadcast_tensors(&self, comm: &mut Communicator) -> Result<(), TrainError> {
        if self.world == 1 {
            return Ok(());
        }
        let host = host_copies(&self.named).map_err(|e| self.torch(e))?;
        let mut flat: Vec<f32> = host.iter().flat_map(|t| t.values.iter().copied()).collect();
        comm.broadcast(&mut flat, 0)?;
        let mut offset = 0;
        let received: Vec<NamedTensor> = host
            .into_iter()
            .map(|t| {
                let n = t.values.len();
                let values = flat[offset..offset + n].to_vec();
                offset += n;
                NamedTensor { values, ..t }
            })
            .collect();
        load_into(&self.named, &received).map_err(|e| TrainError::loading(self.rank, e))
    }

    /// One pass over the shard: every step, the strategy's last exchange of the epoch, then the epoch's
    /// training metrics over all ranks (validation is the caller's, once the center is in place).
    fn run_epoch(
        &mut self,
        comm: &mut Communicator,
        exchange: &mut Exchange,
        (epoch, training): (usize, &RankRows<'_>),
        cancelled: Option<&AtomicBool>,
    ) -> Result<EpochStats, TrainError> {
        let options: &'a TrainOptions = self.options;
        let settings = &options.settings;
        let started = Instant::now();
        let mut draws = Draws::for_rank(settings.seed, self.rank, epoch);
        self.network
            .seed_dropout(Draws::for_rank(!settings.seed, self.rank, epoch));
        let batch = settings.batch_size.max(1);
        let mut batches = training.epoch(batch, settings.shuffle, &mut draws, (settings.seed, self.rank, epoch))?;
        let own_steps = training.rows().div_ceil(batch);
        // Asynchronous ranks go at their own pace; the others agree on the most steps any rank has.
        let steps = if settings.strategy.is_asynchronous() {
            own_steps
        } else {
            comm.max_u64(own_steps as u64)? as usize
        };
        // Through NCCL the step's row count is not in the summed buffer: every step's is summed here, once.
        let step_weights = match self.averaging.needs_step_weights() {
            true => {
                let mut weights = batches.step_weights(steps)?;
                comm.allreduce_sum(&mut weights)?;
                Some(weights)
            }
            false => None,
        };
        let mut sums = EpochSums {
            loss: Tensor::zeros([], (Kind::Double, self.device)),
            correct: Tensor::zeros([], (Kind::Double, self.device)),
            rows: 0.0,
            weight: 0.0,
            learning_rate: settings.learning_rate(epoch as f64, self.world),
        };
        for step in 0..steps {
            if cancelled.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
                return Err(TrainError::Cancelled {
                    rank: self.rank,
                    epoch: epoch + 1,
                });
            }
            sums.learning_rate = settings.learning_rate(epoch as f64 + step as f64 / steps.max(1) as f64, self.world);
            let rows = batches.next_batch()?;
            let total = step_weights.as_ref().map(|weights| weights[step]);
            self.step(comm, exchange, rows, total, &mut draws, &mut sums)?;
            if step % MARK_EVERY == MARK_EVERY - 1 {
                self.averaging.mark(comm.timeout())?;
            }
        }
        self.averaging.settle(comm.timeout())?;
        exchange.flush(comm, &mut self.optimizer.values(), sums.learning_rate)?;
        let mut totals = [
            sums.loss.double_value(&[]) as f32,
            sums.correct.double_value(&[]) as f32,
            sums.weight as f32,
            sums.rows as f32,
        ];
        comm.allreduce_sum(&mut totals)?;
        let [loss_sum, correct, weight, rows] = totals.map(f64::from);
        let classification = self.options.loss != Loss::MeanSquaredError;
        Ok(EpochStats {
            epoch: epoch + 1,
            loss: if weight > 0.0 { loss_sum / weight } else { f64::NAN },
            accuracy: (classification && weight > 0.0).then(|| correct / weight),
            validation_loss: None,
            validation_accuracy: None,
            learning_rate: sums.learning_rate,
            seconds: started.elapsed().as_secs_f64(),
            rows: rows as u64,
        })
    }

    /// One step: forward and backward over this rank's `rows` (none once its shard is exhausted); averaging,
    /// the gradient summed over all ranks and divided by their rows (`total`, when known beforehand),
    /// otherwise this rank's own; the optimizer's update; and the strategy's exchange when its window is full.
    fn step(
        &mut self,
        comm: &mut Communicator,
        exchange: &mut Exchange,
        rows: Option<Batch>,
        total: Option<f32>,
        draws: &mut Draws,
        sums: &mut EpochSums,
    ) -> Result<(), TrainError> {
        self.optimizer.zero_grad();
        if let Some(bf16) = &mut self.bf16 {
            bf16.zero_grad();
        }
        let mut values = self.optimizer.values();
        if rows.is_some() {
            exchange.before_step(&mut values);
        }
        let stepping = rows.is_some();
        let local_rows = match rows {
            Some(batch) => self.backward(batch, draws, sums)?,
            None => 0.0,
        };
        if let (Some(bf16), true) = (&self.bf16, stepping) {
            bf16.gradient_into(&mut self.optimizer.gradient());
        }
        let count = self.averaging.sum(comm, &self.optimizer, local_rows, total)?;
        if count > 0.0 {
            let mut gradient = self.optimizer.gradient();
            if self.averaging.is_on() {
                let _ = gradient.f_div_scalar_(f64::from(count)).map_err(|e| self.torch(e))?;
            }
            self.optimizer.step(&gradient, sums.learning_rate);
        }
        sums.weight += f64::from(local_rows);
        exchange.after_step(comm, &mut values, sums.learning_rate, stepping)?;
        self.steps_taken += 1;
        Ok(())
    }

    /// Forward and backward over a local batch (MixUp when asked); adds its loss, hits and rows to `sums` and
    /// returns its weight (its row count, without sample weights).
    fn backward(&mut self, batch: Batch, draws: &mut Draws, sums: &mut EpochSums) -> Result<f32, TrainError> {
        self.refresh_bf16();
        let options: &'a TrainOptions = self.options;
        let (settings, loss_kind) = (&options.settings, options.loss);
        let Batch {
            features: x,
            labels: y,
            weights: sample_weights,
            rows,
            weight: count,
        } = batch;
        let x = match self.image_shape {
            Some(shape) => settings.augmentation.apply(&x, shape, draws),
            None => x,
        };
        let (weights, sampled) = (self.class_weights.as_ref(), sample_weights.as_ref());
        let mixup = settings.mixup_alpha.filter(|a| *a > 0.0).map(|alpha| {
            let lambda = draws.beta(alpha);
            let mut permutation: Vec<i64> = (0..rows as i64).collect();
            draws.shuffle(&mut permutation);
            (lambda, Tensor::from_slice(&permutation).to_device(self.device))
        });
        let (loss, hits) = match &mixup {
            None => {
                let logits = self.forward(&x, true)?;
                (
                    loss_of(loss_kind, &logits, &y, weights, sampled),
                    hits_of(loss_kind, &logits, &y, sampled),
                )
            }
            Some((lambda, permutation)) => {
                let mixed = &x * *lambda + x.index_select(0, permutation) * (1.0 - lambda);
                let logits = self.forward(&mixed, true)?;
                let other = y.index_select(0, permutation);
                let loss = loss_of(loss_kind, &logits, &y, weights, sampled) * *lambda
                    + loss_of(loss_kind, &logits, &other, weights, sampled) * (1.0 - lambda);
                (loss, hits_of(loss_kind, &logits, &y, sampled))
            }
        };
        sums.rows += rows as f64;
        if count == 0.0 {
            // Every row of the batch weighs nothing: no gradient (and no step, see `step`).
        } else if !self.averaging.is_on() {
            // Not averaging, the weight is known before backpropagating: no gradient rescaling afterwards.
            (&loss / count).backward();
        } else {
            loss.backward();
        }
        let _ = sums.loss.g_add_(&loss.detach().to_kind(Kind::Double));
        let _ = sums.correct.g_add_(&hits);
        Ok(count as f32)
    }

    /// Mean loss and accuracy over every rank's validation shard (weighted, with sample weights).
    fn evaluate(&mut self, comm: &mut Communicator, validation: &RankRows<'_>) -> Result<(f64, f64), TrainError> {
        self.refresh_bf16();
        let loss_kind = self.options.loss;
        let mut totals = [0f32; 3];
        if validation.rows() > 0 {
            let (mut loss, mut hits, mut weight) = (0.0, 0.0, 0.0);
            // A part at a time: a large validation set need not fit on the device at once.
            for part in validation.parts(EVALUATION_ROWS, self.rank)? {
                let part = part?;
                weight += part.weight;
                let (x, y, sampled) = (&part.features, &part.labels, part.weights.as_ref());
                let logits = tch::no_grad(|| self.forward(x, false))?;
                let part_loss = tch::no_grad(|| loss_of(loss_kind, &logits, y, self.class_weights.as_ref(), sampled));
                loss += part_loss.double_value(&[]);
                hits += hits_of(loss_kind, &logits, y, sampled).double_value(&[]);
            }
            let weight = validation.held_weight().unwrap_or(weight as f32);
            totals = [weight, loss as f32, hits as f32];
        }
        comm.allreduce_sum(&mut totals)?;
        let weight = f64::from(totals[0]);
        if weight > 0.0 {
            Ok((f64::from(totals[1]) / weight, f64::from(totals[2]) / weight))
        } else {
            Ok((f64::NAN, f64::NAN))
        }
    }

    /// The network's logits for `x`, in fp32 whatever it computes in.
    fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor, TrainError> {
        match self.bf16 {
            Some(_) => self
                .network
                .forward(&computing(x), train)
                .map(|logits| for_loss(&logits)),
            None => self.network.forward(x, train),
        }
        .map_err(|e| self.torch(e))
    }

    /// Under mixed precision, the master parameters cast into the copy the network computes with.
    fn refresh_bf16(&mut self) {
        if let Some(bf16) = &mut self.bf16 {
            bf16.refresh(&self.optimizer.values());
        }
    }

    /// The trained model's tensors: the best epoch's under early stopping, else the last's.
    fn trained_tensors(&self) -> Result<Vec<NamedTensor>, TrainError> {
        match self.best.tensors() {
            Some(best) => Ok(best.to_vec()),
            None => host_copies(&self.named).map_err(|e| self.torch(e)),
        }
    }

    /// The state after `epochs` epochs, to resume from.
    fn checkpoint(&self, epochs: usize) -> Result<Checkpoint, TrainError> {
        let (optimizer_steps, state) = self.optimizer.state();
        let state_named: Vec<(String, Tensor)> = state
            .into_iter()
            .enumerate()
            .map(|(i, t)| (format!("state.{i}"), t))
            .collect();
        Ok(Checkpoint {
            epoch: epochs,
            tensors: host_copies(&self.named).map_err(|e| self.torch(e))?,
            optimizer_steps,
            optimizer_state: host_copies(&state_named).map_err(|e| self.torch(e))?,
            history: self.history.clone(),
            best_tensors: self.best.tensors().unwrap_or_default().to_vec(),
        })
    }
}
