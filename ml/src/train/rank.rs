//! One rank's training loop: the same loop on every rank, kept in step by the communicator.
//!
//! Rank 0's initial parameters are broadcast to all. Before each epoch the ranks agree on the number of
//! steps — the most any rank has — and a rank whose shard is exhausted (or empty) still takes part in every
//! step with a zero contribution. Each step sums the loss over the local batch, backpropagates, and
//! allreduces one fused buffer holding every gradient plus the step's row count; gradients are then divided
//! by the global row count. So N ranks with batch `b` compute exactly what one rank computes with the
//! concatenated batch of `N·b` rows. Loss and correct predictions are summed on the device and allreduced
//! once an epoch.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Reduction, Tensor};

use super::optimizer::Optimizer;
use super::options::{DeviceChoice, Loss, TrainOptions};
use crate::collective::{CollectiveError, Communicator};
use crate::data::Shard;
use crate::model::{LoadError, NamedTensor, Network, SpecError, host_copies, load_into};
use crate::random::Draws;

/// Why a rank's training failed.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A collective failed (a peer died, stalled or misbehaved).
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    /// The model spec is inconsistent.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// libtorch refused an operation.
    #[error("rank {rank}: libtorch: {source}")]
    Torch {
        /// The rank.
        rank: usize,
        /// libtorch's error.
        source: tch::TchError,
    },
    /// The shard does not fit the model or the loss.
    #[error("rank {rank}: {message}")]
    Data {
        /// The rank.
        rank: usize,
        /// What is wrong, with the row and value.
        message: String,
    },
}

/// Metrics of one epoch, averaged over all ranks' rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// Epoch number, from 1.
    pub epoch: usize,
    /// Mean training loss.
    pub loss: f64,
    /// Training accuracy (classification).
    pub accuracy: Option<f64>,
    /// Mean loss on the validation shards, when given.
    pub validation_loss: Option<f64>,
    /// Accuracy on the validation shards (classification).
    pub validation_accuracy: Option<f64>,
    /// The learning rate at the end of the epoch.
    pub learning_rate: f64,
    /// Wall-clock seconds of the epoch on this rank.
    pub seconds: f64,
}

/// What is needed to resume training after an epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Epochs completed.
    pub epoch: usize,
    /// The network's tensors.
    pub tensors: Vec<NamedTensor>,
    /// Optimizer steps taken.
    pub optimizer_steps: i64,
    /// The optimizer's state tensors.
    pub optimizer_state: Vec<NamedTensor>,
    /// History so far.
    pub history: Vec<EpochStats>,
}

/// The metadata key of a checkpoint's bytes that holds its epoch, step count and history.
const CHECKPOINT_KEY: &str = "hearth.checkpoint";

#[derive(Serialize, Deserialize)]
struct CheckpointHeader {
    epoch: usize,
    optimizer_steps: i64,
    history: Vec<EpochStats>,
}

impl Checkpoint {
    /// The checkpoint as one safetensors buffer: `model.*` and `optimizer.*` tensors, the rest in metadata.
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        let header = CheckpointHeader {
            epoch: self.epoch,
            optimizer_steps: self.optimizer_steps,
            history: self.history.clone(),
        };
        let metadata = std::collections::HashMap::from([(
            CHECKPOINT_KEY.to_string(),
            serde_json::to_string(&header).map_err(|e| e.to_string())?,
        )]);
        let tensors: Vec<NamedTensor> = [("model.", &self.tensors), ("optimizer.", &self.optimizer_state)]
            .into_iter()
            .flat_map(|(prefix, tensors)| {
                tensors.iter().map(move |t| NamedTensor {
                    name: format!("{prefix}{}", t.name),
                    ..t.clone()
                })
            })
            .collect();
        crate::model::to_safetensors(&tensors, metadata)
    }

    /// Reads a checkpoint written by [`Checkpoint::to_bytes`].
    ///
    /// ```
    /// use hearth_ml::model::NamedTensor;
    /// use hearth_ml::train::Checkpoint;
    /// let tensor = |name: &str| NamedTensor { name: name.into(), shape: vec![1], values: vec![0.5] };
    /// let checkpoint = Checkpoint {
    ///     epoch: 2,
    ///     tensors: vec![tensor("0.weight")],
    ///     optimizer_steps: 8,
    ///     optimizer_state: vec![tensor("state.0"), tensor("state.1")],
    ///     history: vec![],
    /// };
    /// assert_eq!(Checkpoint::from_bytes(&checkpoint.to_bytes().unwrap()).unwrap(), checkpoint);
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let (tensors, metadata) = crate::model::from_safetensors(bytes)?;
        let header: CheckpointHeader = serde_json::from_str(
            metadata
                .get(CHECKPOINT_KEY)
                .ok_or_else(|| format!("not a checkpoint: no {CHECKPOINT_KEY:?} metadata"))?,
        )
        .map_err(|e| e.to_string())?;
        let (mut model, mut optimizer) = (Vec::new(), Vec::new());
        for t in tensors {
            if let Some(name) = t.name.strip_prefix("model.") {
                model.push(NamedTensor {
                    name: name.to_string(),
                    ..t
                });
            } else if let Some(name) = t.name.strip_prefix("optimizer.") {
                optimizer.push(NamedTensor {
                    name: name.to_string(),
                    ..t
                });
            }
        }
        // The optimizer's state is positional: state.0, state.1, … state.10 in numeric order.
        optimizer.sort_by_key(|t| t.name.rsplit('.').next().and_then(|i| i.parse::<usize>().ok()));
        Ok(Self {
            epoch: header.epoch,
            tensors: model,
            optimizer_steps: header.optimizer_steps,
            optimizer_state: optimizer,
            history: header.history,
        })
    }
}

/// What a rank reports when training ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// The rank.
    pub rank: usize,
    /// Its host.
    pub host: String,
    /// The device it trained on.
    pub device: String,
    /// Rows in its shard.
    pub rows: usize,
    /// Steps it took part in.
    pub steps: usize,
    /// Per-epoch metrics (the same on every rank).
    pub history: Vec<EpochStats>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// The outcome on a rank: its report, and on rank 0 the trained tensors.
#[derive(Debug)]
pub struct RankOutcome {
    /// The report.
    pub report: RankReport,
    /// The final network tensors (rank 0 only).
    pub tensors: Option<Vec<NamedTensor>>,
}

/// The CUDA devices libtorch sees on this machine (0 without a GPU or driver).
pub fn cuda_device_count() -> usize {
    tch::Cuda::device_count().max(0) as usize
}

/// The device for this rank: its index among the ranks on its host picks the GPU.
fn pick_device(choice: &DeviceChoice, local_rank: usize) -> Device {
    let gpus = cuda_device_count();
    match choice {
        DeviceChoice::Cpu => Device::Cpu,
        DeviceChoice::Cuda(Some(i)) if *i < gpus => Device::Cuda(*i),
        DeviceChoice::Cuda(_) | DeviceChoice::Auto if gpus > 0 => Device::Cuda(local_rank % gpus),
        _ => Device::Cpu,
    }
}

fn device_name(device: Device) -> String {
    match device {
        Device::Cuda(i) => format!("cuda:{i}"),
        _ => "cpu".to_string(),
    }
}

/// Trains on `shard` with the other ranks of `comm`; `validation` is this rank's validation shard, `resume`
/// a checkpoint to start from, and `on_epoch` receives a checkpoint after every epoch (on rank 0).
pub fn train_rank(
    shard: &Shard,
    validation: Option<&Shard>,
    options: &TrainOptions,
    comm: &mut Communicator,
    resume: Option<&Checkpoint>,
    on_epoch: &mut dyn FnMut(&Checkpoint),
) -> Result<RankOutcome, TrainError> {
    let started = Instant::now();
    let rank = comm.rank();
    let world = comm.world_size();
    let torch = |source: tch::TchError| TrainError::Torch { rank, source };
    let host = comm.peers()[rank].registration.host.clone();
    let local_ranks: Vec<usize> = comm
        .peers()
        .iter()
        .filter(|p| p.registration.host == host)
        .map(|p| p.rank)
        .collect();
    let local_rank = local_ranks.iter().position(|&r| r == rank).unwrap_or(0);
    let device = pick_device(&options.device, local_rank);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    tch::set_num_threads(options.threads.unwrap_or((cores / local_ranks.len().max(1)).max(1)) as i32);

    let inputs = options.model.input_features();
    let outputs = options.model.outputs()?;
    check_shard(rank, "training", shard, inputs, outputs, options.loss)?;
    if let Some(v) = validation {
        check_shard(rank, "validation", v, inputs, outputs, options.loss)?;
    }
    let network = Network::new(&options.model, device, options.seed)?;
    let named = network.named_tensors();
    let mut optimizer = Optimizer::new(options.optimizer.clone(), network.parameters());
    let mut history = Vec::new();
    let mut first_epoch = 0;
    if let Some(checkpoint) = resume {
        load_into(&named, &checkpoint.tensors).map_err(|e| loading(rank, e))?;
        let state: Vec<Tensor> = checkpoint
            .optimizer_state
            .iter()
            .map(|t| Tensor::from_slice(&t.values).view(t.shape.as_slice()).to_device(device))
            .collect();
        optimizer.restore(checkpoint.optimizer_steps, &state);
        history = checkpoint.history.clone();
        first_epoch = checkpoint.epoch;
    }
    broadcast_tensors(comm, &named).map_err(|e| e.on_rank(rank))?;

    let features = Tensor::from_slice(shard.features()).view([shard.rows() as i64, inputs as i64]);
    let labels = label_tensor(options.loss, shard.labels());
    let class_weights = options
        .class_weights
        .as_ref()
        .map(|w| Tensor::from_slice(w).to_kind(Kind::Float).to_device(device));
    let batch = options.batch_size.max(1);
    let numel = optimizer.len();
    // The gradients, then the step's row count.
    let mut fused = if world == 1 { Vec::new() } else { vec![0f32; numel + 1] };
    let mut steps_taken = 0;
    for epoch in first_epoch..options.epochs {
        let epoch_started = Instant::now();
        let mut order: Vec<i64> = (0..shard.rows() as i64).collect();
        let mut draws = Draws::for_rank(options.seed, rank, epoch);
        network.seed_dropout(Draws::for_rank(!options.seed, rank, epoch));
        if options.shuffle {
            draws.shuffle(&mut order);
        }
        let local_steps = shard.rows().div_ceil(batch) as u64;
        let steps = u64::MAX - comm.min_u64(u64::MAX - local_steps)?;
        // Loss and hits summed where they are computed, read once an epoch (no wait on the device a step).
        let mut loss_sum = Tensor::zeros([], (Kind::Double, device));
        let mut correct = Tensor::zeros([], (Kind::Int64, device));
        let mut rows_seen = 0.0f64;
        let mut lr = options.learning_rate(epoch as f64, world);
        for step in 0..steps as usize {
            lr = options.learning_rate(epoch as f64 + step as f64 / steps.max(1) as f64, world);
            optimizer.zero_grad();
            let start = step * batch;
            let mut local_rows = 0f32;
            if start < order.len() {
                let end = (start + batch).min(order.len());
                let (x, y) = if options.shuffle {
                    let index = Tensor::from_slice(&order[start..end]);
                    (features.index_select(0, &index), labels.index_select(0, &index))
                } else {
                    let (offset, len) = (start as i64, (end - start) as i64);
                    (features.narrow(0, offset, len), labels.narrow(0, offset, len))
                };
                let (x, y) = (x.to_device(device), y.to_device(device));
                let mixup = options.mixup_alpha.filter(|a| *a > 0.0).map(|alpha| {
                    let lambda = draws.beta(alpha);
                    let mut permutation: Vec<i64> = (0..(end - start) as i64).collect();
                    draws.shuffle(&mut permutation);
                    (lambda, Tensor::from_slice(&permutation).to_device(device))
                });
                let (loss, hits) = match &mixup {
                    None => {
                        let logits = network.forward(&x, true).map_err(torch)?;
                        (
                            loss_of(options.loss, &logits, &y, class_weights.as_ref()),
                            hits_of(options.loss, &logits, &y),
                        )
                    }
                    Some((lambda, permutation)) => {
                        let mixed = &x * *lambda + x.index_select(0, permutation) * (1.0 - lambda);
                        let logits = network.forward(&mixed, true).map_err(torch)?;
                        let other = y.index_select(0, permutation);
                        let loss = loss_of(options.loss, &logits, &y, class_weights.as_ref()) * *lambda
                            + loss_of(options.loss, &logits, &other, class_weights.as_ref()) * (1.0 - lambda);
                        (loss, hits_of(options.loss, &logits, &y))
                    }
                };
                let rows = (end - start) as f64;
                if world == 1 {
                    // Alone, the row count is known before backpropagating: no gradient rescaling afterwards.
                    (&loss / rows).backward();
                } else {
                    loss.backward();
                }
                let _ = loss_sum.g_add_(&loss.detach().to_kind(Kind::Double));
                let _ = correct.g_add_(&hits);
                local_rows = rows as f32;
            }
            let count = if world == 1 {
                local_rows
            } else {
                fuse_gradients(&optimizer.gradient(), &mut fused, local_rows).map_err(torch)?;
                comm.allreduce_sum(&mut fused)?;
                fused[numel]
            };
            if count > 0.0 {
                let gradient = if world == 1 {
                    optimizer.gradient()
                } else {
                    fused[..numel].iter_mut().for_each(|g| *g /= count);
                    Tensor::f_from_slice(&fused[..numel])
                        .and_then(|g| g.f_to_device(device))
                        .map_err(torch)?
                };
                optimizer.step(&gradient, lr);
            }
            rows_seen += f64::from(count);
            steps_taken += 1;
        }
        let mut totals = [loss_sum.double_value(&[]) as f32, correct.int64_value(&[]) as f32];
        comm.allreduce_sum(&mut totals)?;
        let (loss_sum, correct) = (f64::from(totals[0]), f64::from(totals[1]));
        let classification = options.loss != Loss::MeanSquaredError;
        let (validation_loss, validation_accuracy) = match validation {
            Some(v) => {
                let (l, a) =
                    evaluate(comm, &network, v, options, class_weights.as_ref()).map_err(|e| e.on_rank(rank))?;
                (Some(l), a.filter(|_| classification))
            }
            None => (None, None),
        };
        history.push(EpochStats {
            epoch: epoch + 1,
            loss: if rows_seen > 0.0 {
                loss_sum / rows_seen
            } else {
                f64::NAN
            },
            accuracy: (classification && rows_seen > 0.0).then(|| correct / rows_seen),
            validation_loss,
            validation_accuracy,
            learning_rate: lr,
            seconds: epoch_started.elapsed().as_secs_f64(),
        });
        if rank == 0 {
            let (optimizer_steps, state) = optimizer.state();
            let state_named: Vec<(String, Tensor)> = state
                .into_iter()
                .enumerate()
                .map(|(i, t)| (format!("state.{i}"), t))
                .collect();
            let checkpoint = Checkpoint {
                epoch: epoch + 1,
                tensors: host_copies(&named).map_err(torch)?,
                optimizer_steps,
                optimizer_state: host_copies(&state_named).map_err(torch)?,
                history: history.clone(),
            };
            on_epoch(&checkpoint);
        }
    }
    let tensors = if rank == 0 {
        Some(host_copies(&named).map_err(torch)?)
    } else {
        None
    };
    Ok(RankOutcome {
        report: RankReport {
            rank,
            host,
            device: device_name(device),
            rows: shard.rows(),
            steps: steps_taken,
            history,
            seconds: started.elapsed().as_secs_f64(),
        },
        tensors,
    })
}

/// Checks labels and widths before any step, naming the row and value.
fn check_shard(
    rank: usize,
    what: &str,
    shard: &Shard,
    inputs: usize,
    outputs: usize,
    loss: Loss,
) -> Result<(), TrainError> {
    let error = |message: String| TrainError::Data { rank, message };
    if shard.rows() > 0 && shard.dim() != inputs {
        return Err(error(format!(
            "{what} features have {} values per row; the model takes {inputs}",
            shard.dim()
        )));
    }
    for (row, &label) in shard.labels().iter().enumerate() {
        let valid = match loss {
            Loss::SoftmaxCrossEntropy => label >= 0.0 && label.fract() == 0.0 && (label as usize) < outputs,
            Loss::BinaryCrossEntropy => label == 0.0 || label == 1.0,
            Loss::MeanSquaredError => label.is_finite(),
        };
        if !valid {
            return Err(error(format!(
                "{what} row {row}: label {label} does not fit a {loss:?} loss with {outputs} outputs"
            )));
        }
    }
    Ok(())
}

/// The summed loss of a batch.
fn loss_of(loss: Loss, logits: &Tensor, labels: &Tensor, class_weights: Option<&Tensor>) -> Tensor {
    match loss {
        Loss::SoftmaxCrossEntropy => {
            logits
                .log_softmax(-1, Kind::Float)
                .g_nll_loss(labels, class_weights, Reduction::Sum, -100)
        }
        Loss::BinaryCrossEntropy => {
            let sample_weights = class_weights.map(|w| w.index_select(0, &labels.to_kind(Kind::Int64)));
            logits.view([-1]).binary_cross_entropy_with_logits(
                labels,
                sample_weights.as_ref(),
                None::<&Tensor>,
                Reduction::Sum,
            )
        }
        Loss::MeanSquaredError => logits.view([-1]).mse_loss(labels, Reduction::Sum),
    }
}

/// Correct predictions in a batch (0 for regression).
fn hits_of(loss: Loss, logits: &Tensor, labels: &Tensor) -> Tensor {
    match loss {
        Loss::SoftmaxCrossEntropy => logits.argmax(-1, false).eq_tensor(labels).sum(Kind::Int64),
        Loss::BinaryCrossEntropy => logits.view([-1]).gt(0.0).eq_tensor(&labels.gt(0.5)).sum(Kind::Int64),
        Loss::MeanSquaredError => Tensor::zeros([], (Kind::Int64, logits.device())),
    }
}

/// A failure inside a fused host transfer.
enum Fused {
    Collective(CollectiveError),
    Torch(tch::TchError),
    Load(LoadError),
}

impl Fused {
    fn on_rank(self, rank: usize) -> TrainError {
        match self {
            Fused::Collective(e) => TrainError::Collective(e),
            Fused::Torch(source) => TrainError::Torch { rank, source },
            Fused::Load(e) => loading(rank, e),
        }
    }
}

/// A failure to load tensors, as a rank's error.
fn loading(rank: usize, error: LoadError) -> TrainError {
    match error {
        LoadError::Torch(source) => TrainError::Torch { rank, source },
        LoadError::Missing(name) => TrainError::Data {
            rank,
            message: format!("the checkpoint has no tensor {name:?} for this model"),
        },
    }
}

/// Copies the flat gradient into `fused`, followed by the step's row count.
fn fuse_gradients(gradient: &Tensor, fused: &mut [f32], rows: f32) -> Result<(), tch::TchError> {
    let n = gradient.numel();
    gradient.f_to_device(Device::Cpu)?.f_copy_data(&mut fused[..n], n)?;
    fused[n] = rows;
    Ok(())
}

/// A shard's labels as the loss takes them: class indices (`Int64`) for softmax cross-entropy, values
/// (`Float`) otherwise.
fn label_tensor(loss: Loss, labels: &[f32]) -> Tensor {
    let values = Tensor::from_slice(labels);
    match loss {
        Loss::SoftmaxCrossEntropy => values.to_kind(Kind::Int64),
        Loss::BinaryCrossEntropy | Loss::MeanSquaredError => values,
    }
}

/// Rank 0's tensors to every rank (parameters and batch-norm statistics alike).
fn broadcast_tensors(comm: &mut Communicator, named: &[(String, Tensor)]) -> Result<(), Fused> {
    if comm.world_size() == 1 {
        return Ok(());
    }
    let host = host_copies(named).map_err(Fused::Torch)?;
    let mut flat: Vec<f32> = host.iter().flat_map(|t| t.values.iter().copied()).collect();
    comm.broadcast(&mut flat, 0).map_err(Fused::Collective)?;
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
    load_into(named, &received).map_err(Fused::Load)
}

/// Mean loss and accuracy over every rank's validation shard.
fn evaluate(
    comm: &mut Communicator,
    network: &Network,
    shard: &Shard,
    options: &TrainOptions,
    class_weights: Option<&Tensor>,
) -> Result<(f64, Option<f64>), Fused> {
    let mut totals = [0f32; 3];
    if shard.rows() > 0 {
        let device = network.device();
        let x = Tensor::from_slice(shard.features())
            .view([shard.rows() as i64, shard.dim() as i64])
            .to_device(device);
        let y = label_tensor(options.loss, shard.labels()).to_device(device);
        let logits = tch::no_grad(|| network.forward(&x, false)).map_err(Fused::Torch)?;
        totals = [
            shard.rows() as f32,
            tch::no_grad(|| loss_of(options.loss, &logits, &y, class_weights)).double_value(&[]) as f32,
            hits_of(options.loss, &logits, &y).int64_value(&[]) as f32,
        ];
    }
    comm.allreduce_sum(&mut totals).map_err(Fused::Collective)?;
    let rows = f64::from(totals[0]).max(1.0);
    Ok((f64::from(totals[1]) / rows, Some(f64::from(totals[2]) / rows)))
}
