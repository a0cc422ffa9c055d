//! L-BFGS-B's direction (Byrd, Lu, Nocedal & Zhu, 1995), as Breeze computes it: the generalized Cauchy point —
//! the first local minimum of the quadratic model along the projected steepest descent path — then, from the
//! second iteration on, the model minimized over the coordinates still free there (the direct primal method),
//! stopped at the box.

use nalgebra::{DMatrix, DVector};

use super::Bounds;
use super::compact::CompactHistory;

/// The direction could not be computed (a singular system, a step out of the box): the iteration fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NoDirection;

/// The generalized Cauchy point from `x` with gradient `g`, and `c = Wᵀ·(x_cauchy − x)`.
pub(super) fn cauchy_point(
    bounds: &Bounds,
    history: &CompactHistory,
    x: &[f64],
    g: &[f64],
) -> (Vec<f64>, DVector<f64>) {
    let n = x.len();
    let (mut d, mut breakpoints) = (vec![0.0; n], vec![f64::MAX; n]);
    for i in 0..n {
        if g[i] != 0.0 {
            let t = if g[i] < 0.0 {
                (x[i] - bounds.upper[i]) / g[i]
            } else {
                (x[i] - bounds.lower[i]) / g[i]
            };
            breakpoints[i] = t;
            d[i] = if t == 0.0 { 0.0 } else { -g[i] };
        }
    }
    let (w, m, theta) = (&history.w, &history.m, history.theta);
    let mut cauchy = x.to_vec();
    let mut p = w.transpose() * DVector::from_column_slice(&d);
    let mut c = DVector::zeros(m.nrows());
    let mut slope: f64 = g.iter().zip(&d).map(|(gi, di)| gi * di).sum();
    let mut curvature = -theta * slope - p.dot(&(m * &p));
    let mut step_to_minimum = -slope / curvature;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| breakpoints[*a].total_cmp(&breakpoints[*b]));
    let mut i = order.iter().position(|b| breakpoints[*b] != 0.0).unwrap_or(n);
    let mut previous = 0.0;
    while i < n {
        let b = order[i];
        let segment = breakpoints[b] - previous;
        // Breeze's loop condition: not a number (a model without curvature) stops the walk too.
        let within = segment <= step_to_minimum;
        if !within {
            break;
        }
        cauchy[b] = if d[b] > 0.0 { bounds.upper[b] } else { bounds.lower[b] };
        let zb = cauchy[b] - x[b];
        c += &p * segment;
        let wb: DVector<f64> = w.row(b).transpose();
        let gb = g[b];
        slope += segment * curvature + gb * gb + theta * gb * zb - gb * wb.dot(&(m * &c));
        curvature += -theta * gb * gb - 2.0 * gb * wb.dot(&(m * &p)) - gb * gb * wb.dot(&(m * &wb));
        p += &wb * gb;
        d[b] = 0.0;
        step_to_minimum = -slope / curvature;
        previous = breakpoints[b];
        i += 1;
    }
    let step_to_minimum = step_to_minimum.max(0.0);
    let reached = previous + step_to_minimum;
    for &j in &order[i..] {
        cauchy[j] = x[j] + reached * d[j];
    }
    c += &p * step_to_minimum;
    (cauchy, c)
}

/// The quadratic model's minimum over the coordinates free at the Cauchy point `cauchy` (those at neither
/// bound), from it towards that minimum as far as the box allows.
pub(super) fn subspace_minimum(
    bounds: &Bounds,
    history: &CompactHistory,
    (x, g): (&[f64], &[f64]),
    cauchy: &[f64],
    c: &DVector<f64>,
) -> Result<Vec<f64>, NoDirection> {
    let (w, m, theta) = (&history.w, &history.m, history.theta);
    let free: Vec<usize> = (0..x.len())
        .filter(|&i| cauchy[i] != bounds.upper[i] && cauchy[i] != bounds.lower[i])
        .collect();
    let mut wz = DMatrix::zeros(w.ncols(), free.len());
    for (column, &i) in free.iter().enumerate() {
        wz.set_column(column, &w.row(i).transpose());
    }
    let wmc = w * (m * c);
    let reduced = DVector::from_iterator(
        free.len(),
        free.iter().map(|&i| g[i] + theta * (cauchy[i] - x[i]) - wmc[i]),
    );
    let v = m * (&wz * &reduced);
    let n = DMatrix::identity(m.nrows(), m.nrows()) - m * (&wz * wz.transpose() / theta);
    let v = n.lu().solve(&v).ok_or(NoDirection)?;
    let du = -(&reduced / theta + wz.transpose() * v / (theta * theta));
    let mut alpha: f64 = 1.0;
    for (j, &i) in free.iter().enumerate() {
        if du[j] > 0.0 {
            alpha = alpha.min((bounds.upper[i] - cauchy[i]) / du[j]);
        } else if du[j] < 0.0 {
            alpha = alpha.min((bounds.lower[i] - cauchy[i]) / du[j]);
        }
    }
    if !(0.0..=1.0).contains(&alpha) {
        return Err(NoDirection);
    }
    let mut minimum = cauchy.to_vec();
    for (j, &i) in free.iter().enumerate() {
        minimum[i] += alpha * du[j];
    }
    Ok(minimum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_memory_the_cauchy_point_follows_the_gradient_to_the_box() {
        // The model is ½‖d‖² + g·d: its minimum along −g is a whole gradient step, cut short by the box.
        let bounds = Bounds::new(vec![-1.0, -1.0], vec![0.5, 1.0]);
        let history = CompactHistory::new(2, 5);
        let (cauchy, _) = cauchy_point(&bounds, &history, &[0.0, 0.0], &[-2.0, 0.5]);
        assert_eq!(cauchy, vec![0.5, -0.5]);
    }

    #[test]
    fn the_subspace_step_stays_in_the_box() {
        let bounds = Bounds::new(vec![-1.0, -1.0], vec![1.0, 1.0]);
        let history = CompactHistory::new(2, 5).updated(&[0.5, 0.5], &[0.5, 2.0]);
        let (x, g) = ([0.0, 0.0], [-3.0, 0.1]);
        let (cauchy, c) = cauchy_point(&bounds, &history, &x, &g);
        let minimum = subspace_minimum(&bounds, &history, (&x, &g), &cauchy, &c).unwrap();
        assert!(minimum.iter().all(|v| (-1.0..=1.0).contains(v)), "{minimum:?}");
    }
}
