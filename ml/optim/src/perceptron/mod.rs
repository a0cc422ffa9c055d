//! Spark's `MultilayerPerceptronClassifier` fitted as Spark fits it: sigmoid hidden layers and a softmax output
//! over a flat weight vector, rows stacked `block_size` at a time within each rank's shard, the objective the
//! mean over all stacks of each stack's mean cross-entropy, minimized by L-BFGS (memory 10) or by gradient
//! descent with a constant step — every pass summed over the ranks.

mod network;
mod xorshift;

pub use xorshift::XorShiftRandom;

use serde::{Deserialize, Serialize};

use crate::glm::{FitError, Reduce, Shard, Solved};
use crate::vector::norm;
use crate::{Lbfgs, Stop};
use network::Topology;

/// Spark's `solver` for the perceptron.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MlpSolver {
    /// L-BFGS over all rows (memory 10).
    #[default]
    #[serde(rename = "l-bfgs")]
    LBfgs,
    /// Gradient descent over all rows with a constant `step_size`.
    Gd,
}

/// The settings of a perceptron fit, Spark's params of the same names and defaults.
///
/// ```
/// use hearth_optim::perceptron::MlpSettings;
/// let settings = MlpSettings { layers: vec![4, 5, 3], ..MlpSettings::default() };
/// assert_eq!((settings.block_size, settings.max_iter, settings.step_size), (128, 100, 0.03));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MlpSettings {
    /// `[inputs, hidden…, classes]`.
    pub layers: Vec<usize>,
    /// L-BFGS or gradient descent.
    pub solver: MlpSolver,
    /// The most iterations.
    pub max_iter: usize,
    /// The relative tolerance.
    pub tol: f64,
    /// Gradient descent's step.
    pub step_size: f64,
    /// Rows stacked into one matrix; the objective averages over stacks, so it changes the result.
    pub block_size: usize,
    /// The seed of the initial weights.
    pub seed: i64,
    /// Weights to start from instead of drawn ones.
    pub initial_weights: Option<Vec<f64>>,
}

impl Default for MlpSettings {
    fn default() -> Self {
        Self {
            layers: Vec::new(),
            solver: MlpSolver::LBfgs,
            max_iter: 100,
            tol: 1e-6,
            step_size: 0.03,
            block_size: 128,
            seed: -763_139_545,
            initial_weights: None,
        }
    }
}

/// A fitted perceptron: its layers and flat weights (per layer `W`, outputs × inputs column-major, then `b`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MlpFit {
    /// `[inputs, hidden…, classes]`.
    pub layers: Vec<usize>,
    /// The weights, in Spark's layout.
    pub weights: Vec<f64>,
    /// How the solve went.
    #[serde(default)]
    pub solved: Solved,
}

impl MlpFit {
    /// The output layer's scores before the softmax (Spark's `predictRaw`) for one row of features.
    pub fn predict_raw(&self, features: &[f64]) -> Vec<f64> {
        raw_scores(&self.layers, &self.weights, features, 1)
    }
}

/// The output layer's scores before the softmax (Spark's `predictRaw`) of a perceptron of `layers` and
/// `weights` (Spark's layout) for `rows` rows of features, row-major.
///
/// ```
/// use hearth_optim::perceptron::raw_scores;
/// // One layer, 1 input → 2 classes: W = [[1], [−1]], b = [0, 0.5].
/// assert_eq!(raw_scores(&[1, 2], &[1.0, -1.0, 0.0, 0.5], &[2.0, 0.0], 2), vec![2.0, -1.5, 0.0, 0.5]);
/// ```
pub fn raw_scores(layers: &[usize], weights: &[f64], features: &[f64], rows: usize) -> Vec<f64> {
    Topology::new(layers).forward(weights, features, rows).1
}

/// Why a perceptron's settings cannot be fitted.
fn check<E>(settings: &MlpSettings, dim: usize) -> Result<Topology, FitError<E>> {
    let layers = &settings.layers;
    let topology = Topology::new(layers);
    let refuse = |why: String| Err(FitError::Settings(why));
    if layers.len() < 2 || layers.contains(&0) {
        return refuse(format!(
            "layers must be at least [inputs, classes], all positive, got {layers:?}"
        ));
    }
    if layers[0] != dim {
        return refuse(format!(
            "layers start with {} inputs, the features have {dim}",
            layers[0]
        ));
    }
    if settings.block_size == 0 {
        return refuse("block_size must be at least 1".to_string());
    }
    if let Some(weights) = &settings.initial_weights
        && weights.len() != topology.size()
    {
        return refuse(format!(
            "initial_weights holds {} weights, layers {layers:?} take {}",
            weights.len(),
            topology.size()
        ));
    }
    Ok(topology)
}

/// Fits Spark's `MultilayerPerceptronClassifier` on every rank's shard; every rank returns the same fit.
///
/// ```
/// use hearth_optim::glm::{Alone, Shard};
/// use hearth_optim::perceptron::{MlpSettings, fit_mlp};
/// // PySpark's doctest: XOR, layers [2, 2, 2], seed 123.
/// let shard = Shard::new(2, vec![0., 0., 0., 1., 1., 0., 1., 1.], vec![0., 1., 1., 0.], None).unwrap();
/// let settings = MlpSettings { layers: vec![2, 2, 2], block_size: 1, seed: 123, ..MlpSettings::default() };
/// let fit = fit_mlp(&shard, &settings, &mut Alone).unwrap();
/// let raw = fit.predict_raw(&[1.0, 0.0]);
/// assert!((raw[0] - -16.207979543085145).abs() < 1e-6 && (raw[1] - 16.34397052898097).abs() < 1e-6);
/// ```
pub fn fit_mlp<R: Reduce>(shard: &Shard, settings: &MlpSettings, ranks: &mut R) -> Result<MlpFit, FitError<R::Error>> {
    let topology = check(settings, shard.dim())?;
    let classes = settings.layers[settings.layers.len() - 1];
    let mut labels = Vec::with_capacity(shard.rows());
    for row in 0..shard.rows() {
        let label = shard.label(row);
        if label < 0.0 || label.fract() != 0.0 || label >= classes as f64 {
            return Err(FitError::Label { row, label });
        }
        labels.push(label as usize);
    }
    let stacks = Stacks {
        shard,
        labels: &labels,
        block_size: settings.block_size,
        topology: &topology,
    };
    let start = settings
        .initial_weights
        .clone()
        .unwrap_or_else(|| topology.initial_weights(settings.seed));
    let (weights, solved) = match settings.solver {
        MlpSolver::LBfgs => {
            let mut objective = |w: &mut [f64]| stacks.mean(w, ranks);
            let lbfgs = Lbfgs::new().max_iter(settings.max_iter).tol(settings.tol);
            let minimum = lbfgs.minimize(&mut objective, start).map_err(FitError::Ranks)?;
            (minimum.x.clone(), Solved::from(minimum))
        }
        MlpSolver::Gd => descend(&stacks, settings, start, ranks).map_err(FitError::Ranks)?,
    };
    Ok(MlpFit {
        layers: settings.layers.clone(),
        weights,
        solved,
    })
}

/// A shard's rows in stacks of `block_size`, in order.
struct Stacks<'a> {
    shard: &'a Shard,
    labels: &'a [usize],
    block_size: usize,
    topology: &'a Topology,
}

impl Stacks<'_> {
    /// The mean over every rank's stacks of each stack's mean loss, and its gradient.
    fn mean<R: Reduce>(&self, weights: &[f64], ranks: &mut R) -> Result<(f64, Vec<f64>), R::Error> {
        let mut sums = vec![0.0; 2 + weights.len()];
        let dim = self.shard.dim();
        let mut start = 0;
        while start < self.shard.rows() {
            let end = (start + self.block_size).min(self.shard.rows());
            let x: Vec<f64> = (start..end).flat_map(|r| self.shard.row(r).iter().copied()).collect();
            debug_assert_eq!(x.len(), (end - start) * dim);
            let (loss, gradient) = self.topology.stack_loss(weights, &x, &self.labels[start..end]);
            sums[0] += loss;
            sums[1] += 1.0;
            sums[2..].iter_mut().zip(&gradient).for_each(|(s, g)| *s += g);
            start = end;
        }
        ranks.sum(&mut sums)?;
        let stacks = sums[1];
        let scale = 1.0 / stacks;
        Ok((sums[0] / stacks, sums[2..].iter().map(|g| g * scale).collect()))
    }
}

/// Spark's gradient descent: `w −= step·ḡ` each iteration, the loss recorded before each step; stopped once a
/// step moves the weights less than `tol·max(‖w‖, 1)` (from the second step), the loss at the last weights
/// recorded when it was not.
fn descend<R: Reduce>(
    stacks: &Stacks<'_>,
    settings: &MlpSettings,
    mut weights: Vec<f64>,
    ranks: &mut R,
) -> Result<(Vec<f64>, Solved), R::Error> {
    let (mut history, mut converged, mut iterations) = (Vec::new(), false, 0);
    let mut previous: Option<Vec<f64>> = None;
    while !converged && iterations < settings.max_iter {
        let (loss, gradient) = stacks.mean(&weights, ranks)?;
        history.push(loss);
        weights
            .iter_mut()
            .zip(&gradient)
            .for_each(|(w, g)| *w -= settings.step_size * g);
        iterations += 1;
        if let Some(before) = previous.replace(weights.clone()) {
            let moved: Vec<f64> = before.iter().zip(&weights).map(|(b, w)| b - w).collect();
            converged = norm(&moved) < settings.tol * norm(&weights).max(1.0);
        }
    }
    if !converged {
        history.push(stacks.mean(&weights, ranks)?.0);
    }
    let stop = if converged {
        Stop::FunctionValues
    } else {
        Stop::MaxIterations
    };
    let solved = Solved {
        objective_history: history,
        total_iterations: iterations,
        stop,
        evaluations: iterations + usize::from(!converged),
    };
    Ok((weights, solved))
}

#[cfg(test)]
mod spark_reference;
