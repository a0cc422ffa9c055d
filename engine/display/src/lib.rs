//! How hearth's values show themselves: as HTML in a notebook (evcxr calls `evcxr_display`, and a Jupyter
//! front end gets HTML with plain text beside it) and as text in a terminal. Data frames show their first rows
//! (`df.preview(20).await?`), fitted pipelines their stages, trained models their architecture, history, ranks
//! and attempts with their training curves, [`Metrics`] an evaluation with its ROC and precision-recall curves
//! and confusion matrix, a [`SessionView`] where a session runs; training shows its epochs as they end
//! ([`progress`]). Plots are SVG ([`plot`]), also saved to files.
//!
//! ```
//! use hearth_display::{Grid, Rich};
//! let grid = Grid::new(["metric", "value"]).row(["f1", "0.7766"]);
//! assert!(grid.to_html().contains("<td>0.7766</td>"));
//! assert!(grid.to_text().contains("| f1     | 0.7766 |"));
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

mod catalog;
mod frame;
mod grid;
mod metrics;
mod models;
pub mod plot;
#[cfg(feature = "polars")]
pub mod polars;

pub use catalog::CatalogPlots;
pub use frame::{FrameDisplay, FramePreview, PreviewExt, SHOWN_ROWS};
pub use grid::{Grid, escape};
pub use metrics::Metrics;
pub use models::{SessionView, TrainingCurves};
pub use plot::Svg;

/// A value that shows itself as HTML in a notebook and as text anywhere else.
pub trait Rich {
    /// HTML for a notebook; every string that came from data or from the user is escaped.
    fn to_html(&self) -> String;

    /// Plain text for a terminal (tables drawn with characters).
    fn to_text(&self) -> String;

    /// What evcxr calls to show a cell's value: the text, then the HTML (Jupyter shows the richest).
    fn evcxr_display(&self) {
        println!("EVCXR_BEGIN_CONTENT text/plain\n{}\nEVCXR_END_CONTENT", self.to_text());
        println!("EVCXR_BEGIN_CONTENT text/html\n{}\nEVCXR_END_CONTENT", self.to_html());
    }
}
