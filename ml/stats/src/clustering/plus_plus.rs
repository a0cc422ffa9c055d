//! Spark's `LocalKMeans.kMeansPlusPlus`: the last step of k-means|| initialisation, run on the driver. From
//! more than `k` weighted candidate centers it picks `k` by k-means++ sampling and refines them with up to
//! `max_iterations` rounds of weighted Lloyd's algorithm.

use super::measure::{Centers, DistanceMeasure};
use crate::random::Draws;

/// `k` centers chosen from `points` (each weighted by how many rows it stands for).
///
/// ```
/// use hearth_stats::clustering::{DistanceMeasure, k_means_plus_plus};
/// let points = vec![vec![0.0], vec![0.1], vec![10.0], vec![10.2]];
/// let centers = k_means_plus_plus(&points, &[1.0, 1.0, 1.0, 1.0], 2, 30, 7, DistanceMeasure::Euclidean);
/// let mut firsts: Vec<f64> = centers.iter().map(|c| c[0]).collect();
/// firsts.sort_by(f64::total_cmp);
/// assert_eq!(firsts, vec![0.05, 10.1]);
/// ```
pub fn k_means_plus_plus(
    points: &[Vec<f64>],
    weights: &[f64],
    k: usize,
    max_iterations: usize,
    seed: u64,
    measure: DistanceMeasure,
) -> Vec<Vec<f64>> {
    if points.is_empty() || k == 0 {
        return Vec::new();
    }
    let mut draws = Draws::new(seed);
    let dim = points[0].len();
    let mut centers = vec![pick_weighted(&mut draws, points, weights).clone()];
    let mut costs: Vec<f64> = points.iter().map(|p| measure.distance(p, &centers[0])).collect();
    for _ in 1..k {
        let total: f64 = costs.iter().zip(weights).map(|(c, w)| c * w).sum();
        let target = draws.uniform() * total;
        let mut cumulative = 0.0;
        let mut next = 0;
        while next < points.len() && cumulative < target {
            cumulative += weights[next] * costs[next];
            next += 1;
        }
        // With no cost left (fewer distinct points than k) Spark repeats the first point.
        let chosen = points[next.saturating_sub(1)].clone();
        for (cost, point) in costs.iter_mut().zip(points) {
            *cost = cost.min(measure.distance(point, &chosen));
        }
        centers.push(chosen);
    }
    let mut previous = vec![usize::MAX; points.len()];
    for _ in 0..max_iterations {
        let Some(current) = Centers::from_rows(dim, &centers) else {
            break;
        };
        let mut moved = false;
        let mut sums = vec![vec![0.0; dim]; k];
        let mut totals = vec![0.0; k];
        for (i, point) in points.iter().enumerate() {
            let (cluster, _) = measure.closest(&current, point);
            measure.add_to_sum(&mut sums[cluster], point, weights[i]);
            totals[cluster] += weights[i];
            if previous[i] != cluster {
                moved = true;
                previous[i] = cluster;
            }
        }
        if !moved {
            break;
        }
        for (cluster, center) in centers.iter_mut().enumerate() {
            *center = match totals[cluster] {
                0.0 => points[(draws.next_u64() % points.len() as u64) as usize].clone(),
                weight => measure.centroid(&sums[cluster], weight),
            };
        }
    }
    centers
}

/// A point drawn with probability proportional to its weight.
fn pick_weighted<'a>(draws: &mut Draws, points: &'a [Vec<f64>], weights: &[f64]) -> &'a Vec<f64> {
    let target = draws.uniform() * weights.iter().sum::<f64>();
    let mut cumulative = 0.0;
    let mut index = 0;
    while index < points.len() && cumulative < target {
        cumulative += weights[index];
        index += 1;
    }
    &points[index.saturating_sub(1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_pull_the_refined_center() {
        // Two candidates per group; the heavier one dominates its group's center.
        let points = vec![vec![0.0, 0.0], vec![1.0, 0.0], vec![20.0, 0.0], vec![21.0, 0.0]];
        let centers = k_means_plus_plus(&points, &[3.0, 1.0, 1.0, 1.0], 2, 30, 1, DistanceMeasure::Euclidean);
        let mut xs: Vec<f64> = centers.iter().map(|c| c[0]).collect();
        xs.sort_by(f64::total_cmp);
        assert_eq!(xs, vec![0.25, 20.5]);
    }

    #[test]
    fn fewer_distinct_points_than_k_repeat_one() {
        let points = vec![vec![1.0], vec![1.0]];
        let centers = k_means_plus_plus(&points, &[1.0, 1.0], 3, 30, 1, DistanceMeasure::Euclidean);
        assert_eq!(centers.len(), 3);
        assert!(centers.iter().all(|c| c == &vec![1.0]));
    }
}
