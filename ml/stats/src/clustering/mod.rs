//! k-means and the clustering metrics' math with Spark MLlib's definitions, as mergeable states the engine
//! runs as aggregates: [`ClusterSums`] is one pass of Lloyd's algorithm, [`k_means_plus_plus`] the driver's
//! last step of k-means|| initialisation, [`SilhouetteStats`] the silhouette's first pass.
//!
//! ```
//! use hearth_stats::clustering::{Centers, ClusterSums, DistanceMeasure};
//! // Lloyd's algorithm by hand: assign, then move each center to its cluster's mean.
//! let points = [[0.0], [1.0], [9.0], [11.0]];
//! let mut centers = Centers::new(1, vec![0.0, 1.0]).unwrap();
//! for _ in 0..3 {
//!     let mut sums = ClusterSums::new(2, 1);
//!     points.iter().for_each(|p| { sums.add(DistanceMeasure::Euclidean, &centers, p, 1.0); });
//!     let next: Vec<Vec<f64>> = (0..2).map(|c| sums.centroid(DistanceMeasure::Euclidean, c).unwrap()).collect();
//!     centers = Centers::from_rows(1, &next).unwrap();
//! }
//! assert_eq!(centers.values(), &[0.5, 10.0]);
//! ```

mod measure;
mod plus_plus;
mod silhouette;
mod sums;

pub use measure::{Centers, DistanceMeasure, dot, norm};
pub use plus_plus::k_means_plus_plus;
pub use silhouette::{SilhouetteError, SilhouetteStats};
pub use sums::ClusterSums;
