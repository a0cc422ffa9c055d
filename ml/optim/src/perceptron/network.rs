//! Spark's perceptron as a flat weight vector: per layer `W` (outputs × inputs, column-major) then `b`; sigmoid
//! hidden layers, a softmax output, and one stack of rows' mean cross-entropy and its gradient.

use super::XorShiftRandom;

/// The layers' sizes `[inputs, hidden…, classes]`, and where each layer's weights start.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Topology {
    layers: Vec<usize>,
}

impl Topology {
    pub(crate) fn new(layers: &[usize]) -> Self {
        Self {
            layers: layers.to_vec(),
        }
    }

    /// Weights in all: `Σ (inputs·outputs + outputs)`.
    pub(crate) fn size(&self) -> usize {
        self.layers.windows(2).map(|w| w[0] * w[1] + w[1]).sum()
    }

    /// Spark's initial weights: each `(u·4.8 − 2.4)/√inputs` for `u` drawn in order from `XORShiftRandom(seed)`.
    pub(crate) fn initial_weights(&self, seed: i64) -> Vec<f64> {
        let mut random = XorShiftRandom::new(seed);
        let mut weights = Vec::with_capacity(self.size());
        for w in self.layers.windows(2) {
            let scale = (w[0] as f64).sqrt();
            weights.extend((0..w[0] * w[1] + w[1]).map(|_| (random.next_double() * 4.8 - 2.4) / scale));
        }
        weights
    }

    /// Each layer's output for `rows` rows of `x` (row-major): the affine map, then the sigmoid, or the
    /// softmax for the last layer; the last entry is the output layer's pre-softmax scores.
    pub(crate) fn forward(&self, weights: &[f64], x: &[f64], rows: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
        let mut activations = vec![x.to_vec()];
        let mut offset = 0;
        let last = self.layers.len() - 2;
        let mut raw = Vec::new();
        for (l, w) in self.layers.windows(2).enumerate() {
            let (inputs, outputs) = (w[0], w[1]);
            let (matrix, bias) = weights[offset..offset + inputs * outputs + outputs].split_at(inputs * outputs);
            offset += inputs * outputs + outputs;
            let a = &activations[l];
            let mut z = vec![0.0; rows * outputs];
            for r in 0..rows {
                for o in 0..outputs {
                    z[r * outputs + o] = bias[o]
                        + (0..inputs)
                            .map(|i| matrix[i * outputs + o] * a[r * inputs + i])
                            .sum::<f64>();
                }
            }
            if l == last {
                raw.clone_from(&z);
                z.chunks_exact_mut(outputs).for_each(softmax);
            } else {
                z.iter_mut().for_each(|v| *v = 1.0 / (1.0 + (-*v).exp()));
            }
            activations.push(z);
        }
        (activations, raw)
    }

    /// One stack's mean cross-entropy against `labels` (class indices) and its gradient, in the weights' layout.
    pub(crate) fn stack_loss(&self, weights: &[f64], x: &[f64], labels: &[usize]) -> (f64, Vec<f64>) {
        let rows = labels.len();
        let n = rows as f64;
        let (activations, _) = self.forward(weights, x, rows);
        let classes = *self.layers.last().unwrap_or(&0);
        let output = &activations[activations.len() - 1];
        let mut loss = 0.0;
        let mut delta = output.clone();
        for (r, &label) in labels.iter().enumerate() {
            loss -= output[r * classes + label].ln();
            delta[r * classes + label] -= 1.0;
        }
        let mut gradient = vec![0.0; self.size()];
        let offsets: Vec<usize> = self
            .layers
            .windows(2)
            .scan(0, |o, w| Some(std::mem::replace(o, *o + w[0] * w[1] + w[1])))
            .collect();
        for l in (0..self.layers.len() - 1).rev() {
            let (inputs, outputs) = (self.layers[l], self.layers[l + 1]);
            let input = &activations[l];
            let (g_matrix, g_bias) =
                gradient[offsets[l]..offsets[l] + inputs * outputs + outputs].split_at_mut(inputs * outputs);
            for r in 0..rows {
                for o in 0..outputs {
                    let d = delta[r * outputs + o];
                    (0..inputs).for_each(|i| g_matrix[i * outputs + o] += d * input[r * inputs + i]);
                    g_bias[o] += d;
                }
            }
            g_matrix.iter_mut().chain(g_bias.iter_mut()).for_each(|g| *g /= n);
            if l > 0 {
                let matrix = &weights[offsets[l]..offsets[l] + inputs * outputs];
                let mut back = vec![0.0; rows * inputs];
                for r in 0..rows {
                    for i in 0..inputs {
                        let a = input[r * inputs + i];
                        let sum: f64 = (0..outputs)
                            .map(|o| matrix[i * outputs + o] * delta[r * outputs + o])
                            .sum();
                        back[r * inputs + i] = sum * a * (1.0 - a);
                    }
                }
                delta = back;
            }
        }
        (loss / n, gradient)
    }
}

/// `v` replaced by its softmax, shifted by its largest entry.
fn softmax(v: &mut [f64]) {
    let largest = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    v.iter_mut().for_each(|x| *x = (*x - largest).exp());
    let total: f64 = v.iter().sum();
    v.iter_mut().for_each(|x| *x /= total);
}
