//! OWL-QN's handling of an L1 penalty (Andrew & Gao, 2007): the pseudo-gradient, the direction kept in its
//! orthant, and steps projected back onto the orthant they started in.

/// Per-coordinate L1 weights; all zero (or none) means plain L-BFGS.
#[derive(Clone, Debug)]
pub(crate) struct L1 {
    weights: Vec<f64>,
}

impl L1 {
    pub(crate) fn new(weights: &[f64]) -> Self {
        let weights = if weights.iter().any(|w| *w > 0.0) {
            weights.to_vec()
        } else {
            Vec::new()
        };
        Self { weights }
    }

    /// Whether no coordinate is penalized.
    pub(crate) fn is_none(&self) -> bool {
        self.weights.is_empty()
    }

    fn weight(&self, i: usize) -> f64 {
        self.weights.get(i).copied().unwrap_or(0.0)
    }

    /// The value with `Σ lᵢ·|xᵢ|` added, and the pseudo-gradient: for a coordinate at zero, the one-sided
    /// derivative that decreases the objective, or zero when neither does.
    pub(crate) fn adjust(&self, x: &[f64], gradient: &[f64], value: f64) -> (f64, Vec<f64>) {
        if self.is_none() {
            return (value, gradient.to_vec());
        }
        let mut adjusted = value;
        let pseudo = x
            .iter()
            .zip(gradient)
            .enumerate()
            .map(|(i, (&xi, &gi))| {
                let l = self.weight(i);
                if l == 0.0 {
                    return gi;
                }
                adjusted += (l * xi).abs();
                if xi == 0.0 {
                    let (right, left) = (gi + l, gi - l);
                    if left > 0.0 {
                        left
                    } else if right < 0.0 {
                        right
                    } else {
                        0.0
                    }
                } else {
                    gi + xi.signum() * l
                }
            })
            .collect();
        (adjusted, pseudo)
    }

    /// The quasi-Newton direction with every coordinate that does not descend along the pseudo-gradient zeroed.
    pub(crate) fn corrected(&self, mut direction: Vec<f64>, pseudo_gradient: &[f64]) -> Vec<f64> {
        direction.iter_mut().zip(pseudo_gradient).for_each(|(d, g)| {
            if *d * g >= 0.0 {
                *d = 0.0;
            }
        });
        direction
    }

    /// `stepped` with every coordinate that left the orthant of `from` (its sign, or for a zero coordinate the
    /// sign opposite its pseudo-gradient) set to zero.
    pub(crate) fn projected(&self, mut stepped: Vec<f64>, from: &[f64], pseudo_gradient: &[f64]) -> Vec<f64> {
        for ((v, &x), &g) in stepped.iter_mut().zip(from).zip(pseudo_gradient) {
            let orthant = if x != 0.0 { x.signum() } else { (-g).signum() };
            if sign(*v) != sign(orthant) {
                *v = 0.0;
            }
        }
        stepped
    }
}

/// The sign as Java's `Math.signum` gives it: −1, 0 or 1 (zero for ±0).
fn sign(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pseudo_gradient_at_zero_takes_the_descending_side_or_none() {
        let l1 = L1::new(&[1.0, 1.0, 1.0, 0.0]);
        let (value, pseudo) = l1.adjust(&[0.0, 0.0, 2.0, 5.0], &[3.0, 0.5, 0.5, 7.0], 1.0);
        assert_eq!(value, 3.0);
        assert_eq!(pseudo, vec![2.0, 0.0, 1.5, 7.0]);
    }

    #[test]
    fn a_step_leaving_its_orthant_stops_at_zero() {
        let l1 = L1::new(&[1.0, 1.0]);
        let projected = l1.projected(vec![-0.5, 0.3], &[1.0, 0.0], &[2.0, -1.0]);
        assert_eq!(projected, vec![0.0, 0.3]);
    }
}
