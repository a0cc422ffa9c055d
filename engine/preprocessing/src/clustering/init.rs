//! The initial centers, as Spark picks them: `random` takes `k` rows; `k-means||` (Bahmani et al., "Scalable
//! K-Means++", VLDB 2012) starts from one random row and in each of `init_steps` steps keeps every row with
//! probability `2k · cost / total cost`, then reduces the candidates to `k` with a weighted k-means++ on the
//! driver. Each step is two aggregate queries; the row draws hash the row's values, so the same data and seed
//! give the same centers under any partitioning.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Float64Type;
use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{Expr, col, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::splitmix64;
use hearth_exec::error::Result;
use hearth_exec::frame::ROW_UNIFORM;
use hearth_exec::udf::args::f64_list_literal;
use hearth_exec::vector::vector_values;
use hearth_stats::clustering::{ClusterSums, DistanceMeasure, k_means_plus_plus};

use super::functions::{KMEANS_COST, KMEANS_SUMS};

/// How many rounds of Lloyd's algorithm refine the k-means|| candidates on the driver (Spark's 30).
const LOCAL_ITERATIONS: usize = 30;

/// What initialisation needs: the prepared rows (their features and weight columns), their width, and the
/// settings.
pub(super) struct Init<'a> {
    pub data: &'a DataFrame,
    pub features: &'a str,
    pub weight: &'a str,
    pub dim: usize,
    pub k: usize,
    pub seed: i64,
    pub measure: DistanceMeasure,
}

impl Init<'_> {
    /// `k` random rows (fewer when there are fewer rows).
    pub async fn random(&self) -> Result<Vec<Vec<f64>>> {
        self.first_by_draw(0, self.k).await
    }

    /// The k-means|| centers (fewer than `k` when the candidates are fewer).
    pub async fn parallel(&self, steps: usize) -> Result<Vec<Vec<f64>>> {
        let mut centers = self.first_by_draw(0, 1).await?;
        if centers.is_empty() {
            return Ok(centers);
        }
        for step in 1..=steps as u64 {
            let cost = || {
                KMEANS_COST.call(vec![
                    ident(self.features),
                    self.centers_literal(&centers),
                    lit(self.measure.name()),
                ])
            };
            let total = self
                .data
                .clone()
                .aggregate(vec![], vec![sum(cost()).alias("total")])?
                .collect()
                .await?;
            let total = total
                .iter()
                .find(|b| b.num_rows() > 0)
                .map_or(0.0, |b| b.column(0).as_primitive::<Float64Type>().value(0));
            if total <= 0.0 {
                break;
            }
            let keep = self.draw(step).lt(lit(2.0 * self.k as f64 / total) * cost());
            let chosen = self.data.clone().filter(keep)?.select(vec![ident(self.features)])?;
            centers.extend(self.vectors(chosen).await?);
        }
        // The candidates arrive in whatever order the partitions finish: put them in one order of their own,
        // so the driver's k-means++ draws pick the same ones on every run.
        let mut distinct = centers;
        distinct.sort_by(|a, b| {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.total_cmp(y))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        distinct.dedup();
        if distinct.len() <= self.k {
            return Ok(distinct);
        }
        // Weigh each candidate by the rows nearest to it, then pick k of them on the driver.
        let counts = self.assigned_rows(&distinct).await?;
        let weights: Vec<f64> = (0..distinct.len()).map(|c| counts.rows(c) as f64).collect();
        Ok(k_means_plus_plus(
            &distinct,
            &weights,
            self.k,
            LOCAL_ITERATIONS,
            splitmix64(self.seed as u64),
            self.measure,
        ))
    }

    /// One pass assigning every row to the nearest of `centers`.
    async fn assigned_rows(&self, centers: &[Vec<f64>]) -> Result<ClusterSums> {
        let call = KMEANS_SUMS.call(vec![
            ident(self.features),
            ident(self.weight),
            self.centers_literal(centers),
            lit(self.measure.name()),
        ]);
        sums_of(self.data.clone().aggregate(vec![], vec![call.alias("sums")])?).await
    }

    /// The `count` rows with the smallest draws of `step`.
    async fn first_by_draw(&self, step: u64, count: usize) -> Result<Vec<Vec<f64>>> {
        let picked = self
            .data
            .clone()
            .select(vec![ident(self.features), self.draw(step).alias("draw")])?
            .sort(vec![col("draw").sort(true, false)])?
            .limit(0, Some(count))?
            .select(vec![ident(self.features)])?;
        self.vectors(picked).await
    }

    /// Each row's uniform draw for `step`, a hash of its values and the seed.
    fn draw(&self, step: u64) -> Expr {
        let seed = splitmix64(self.seed as u64 ^ step.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & i64::MAX as u64;
        ROW_UNIFORM.call(vec![lit(seed), ident(self.features)])
    }

    fn centers_literal(&self, centers: &[Vec<f64>]) -> Expr {
        lit(f64_list_literal(&centers.concat()))
    }

    /// The vectors of a one-column frame.
    async fn vectors(&self, frame: DataFrame) -> Result<Vec<Vec<f64>>> {
        let mut rows = Vec::new();
        for batch in frame.collect().await? {
            let (values, _) = vector_values(batch.column(0))?;
            rows.extend(
                values
                    .values()
                    .chunks_exact(self.dim.max(1))
                    .take(batch.num_rows())
                    .map(|row| row.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>()),
            );
        }
        Ok(rows)
    }
}

/// The merged [`ClusterSums`] of a one-row aggregate of `ml_kmeans_sums`.
pub(super) async fn sums_of(query: DataFrame) -> Result<ClusterSums> {
    let bytes = hearth_exec::udf::aggregate_bytes(query).await?;
    ClusterSums::from_bytes(&bytes).map_err(|e| datafusion::error::DataFusionError::Execution(e.to_string()).into())
}
