//! `df.preview(n)`: a data frame's first rows with its column names and types, and its row count when the plan
//! knows it without running (a table in memory, Parquet statistics).

use async_trait::async_trait;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::stats::Precision;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};

use super::{Grid, Rich};

/// The most columns a preview shows; the rest are named in its note.
pub const MAX_COLUMNS: usize = 50;

/// The most characters a cell shows (a long vector or string ends with `…`).
pub const MAX_CELL: usize = 80;

/// The first rows of a data frame, formatted, ready to show.
#[derive(Clone, Debug, PartialEq)]
pub struct FramePreview {
    names: Vec<String>,
    types: Vec<String>,
    hidden_columns: usize,
    rows: Vec<Vec<String>>,
    more_rows: bool,
    total_rows: Option<usize>,
}

/// `preview` for DataFusion's data frames: Spark's `df.show(n)` as a value (DataFusion's own `show` prints).
#[async_trait]
pub trait PreviewExt {
    /// The first `rows` rows (and whether there are more), column names and types; runs the query for
    /// those rows only. In a notebook the result shows as an HTML table.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
    /// use hearth_display::{PreviewExt, Rich};
    /// let session = hearth_exec::session::Session::builder().local(2);
    /// let df = session.context().sql("SELECT * FROM generate_series(1, 100) AS t(x)").await.unwrap();
    /// let preview = df.preview(3).await.unwrap();
    /// assert_eq!(preview.rows().len(), 3);
    /// assert!(preview.to_text().contains("x: Int64"));
    /// # });
    /// ```
    async fn preview(&self, rows: usize) -> Result<FramePreview>;
}

#[async_trait]
impl PreviewExt for DataFrame {
    async fn preview(&self, rows: usize) -> Result<FramePreview> {
        FramePreview::of(self, rows).await
    }
}

/// The rows a data frame shows when a notebook cell ends with it, as Spark's `df.show()` prints.
pub const SHOWN_ROWS: usize = 20;

/// A data frame that ends a notebook cell shows its first [`SHOWN_ROWS`] rows, as `df.preview(20)` would:
/// evcxr calls `evcxr_display`, which runs the query for those rows then and there.
pub trait FrameDisplay {
    /// The first `rows` rows, the query run to completion before returning: inside a multi-threaded tokio
    /// runtime (a notebook's async cell) without blocking its other tasks, outside any runtime on one of its
    /// own.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// use hearth_display::FrameDisplay;
    /// let session = hearth_exec::session::Session::builder().local(2);
    /// let df = session.context().sql("SELECT * FROM generate_series(1, 100) AS t(x)").await.unwrap();
    /// assert_eq!(df.preview_now(3).unwrap().rows().len(), 3);
    /// # });
    /// ```
    fn preview_now(&self, rows: usize) -> Result<FramePreview>;

    /// What evcxr calls to show a cell's data frame: its preview's text and HTML.
    fn evcxr_display(&self) {
        match self.preview_now(SHOWN_ROWS) {
            Ok(preview) => preview.evcxr_display(),
            Err(e) => println!("EVCXR_BEGIN_CONTENT text/plain\ncannot show the data frame: {e}\nEVCXR_END_CONTENT"),
        }
    }
}

impl FrameDisplay for DataFrame {
    fn preview_now(&self, rows: usize) -> Result<FramePreview> {
        use tokio::runtime::{Builder, Handle, RuntimeFlavor};
        match Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| handle.block_on(FramePreview::of(self, rows)))
            }
            Ok(_) => Err(HearthError::invalid_param(
                "FrameDisplay",
                "runtime",
                "a single-threaded runtime cannot wait for the query here: use `df.preview(n).await`",
            )),
            Err(_) => Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    HearthError::invalid_param("FrameDisplay", "runtime", "cannot start a runtime to run the query")
                        .caused_by(e)
                })?
                .block_on(FramePreview::of(self, rows)),
        }
    }
}

impl FramePreview {
    /// The first `rows` rows of `df`.
    pub async fn of(df: &DataFrame, rows: usize) -> Result<Self> {
        let schema = df.schema();
        let shown = schema.fields().len().min(MAX_COLUMNS);
        let names = schema.fields().iter().take(shown).map(|f| f.name().clone()).collect();
        let types = schema
            .fields()
            .iter()
            .take(shown)
            .map(|f| f.data_type().to_string())
            .collect();
        let total_rows = known_row_count(df).await;
        let columns: Vec<Expr> = schema.columns().into_iter().take(shown).map(Expr::Column).collect();
        let batches = df.clone().select(columns)?.limit(0, Some(rows + 1))?.collect().await?;
        let options = FormatOptions::default().with_null("null");
        let mut cells = Vec::new();
        for batch in &batches {
            let formatters = batch
                .columns()
                .iter()
                .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            for row in 0..batch.num_rows() {
                cells.push(formatters.iter().map(|f| clipped(f.value(row).to_string())).collect());
            }
        }
        let more_rows = cells.len() > rows;
        cells.truncate(rows);
        Ok(Self {
            names,
            types,
            hidden_columns: schema.fields().len() - shown,
            rows: cells,
            more_rows,
            total_rows,
        })
    }

    /// The rows shown, each cell formatted.
    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }

    /// The column names shown.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The columns left out (beyond [`MAX_COLUMNS`]).
    pub fn hidden_columns(&self) -> usize {
        self.hidden_columns
    }

    /// The table shown: each column headed by its name and type.
    fn grid(&self) -> Grid {
        let header = self.names.iter().zip(&self.types).map(|(n, t)| format!("{n}: {t}"));
        let columns = self.names.len() + self.hidden_columns;
        let caption = match self.total_rows {
            Some(total) => format!("{total} rows × {columns} columns"),
            None => format!("{columns} columns"),
        };
        let mut notes = Vec::new();
        match (self.more_rows, self.total_rows) {
            (true, Some(total)) => notes.push(format!("first {} of {total} rows", self.rows.len())),
            (true, None) => notes.push(format!("first {} rows", self.rows.len())),
            (false, _) if self.rows.is_empty() => notes.push("no rows".to_string()),
            (false, _) => {}
        }
        if self.hidden_columns > 0 {
            notes.push(format!(
                "first {} of {columns} columns ({} more not shown)",
                self.names.len(),
                self.hidden_columns
            ));
        }
        let mut grid = Grid::new(header).caption(caption);
        for row in &self.rows {
            grid.push(row.iter().cloned());
        }
        match notes.is_empty() {
            true => grid,
            false => grid.note(notes.join("; ")),
        }
    }
}

impl Rich for FramePreview {
    fn to_html(&self) -> String {
        self.grid().to_html()
    }

    fn to_text(&self) -> String {
        self.grid().to_text()
    }
}

/// `text` cut to [`MAX_CELL`] characters.
fn clipped(text: String) -> String {
    match text.char_indices().nth(MAX_CELL) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// The row count the plan knows exactly without running it, if any.
async fn known_row_count(df: &DataFrame) -> Option<usize> {
    let plan = df.clone().create_physical_plan().await.ok()?;
    exact_rows(plan.as_ref())
}

/// The rows `plan`'s statistics count exactly.
fn exact_rows(plan: &dyn ExecutionPlan) -> Option<usize> {
    let statistics = StatisticsContext::new().compute(plan, &StatisticsArgs::new()).ok()?;
    match statistics.num_rows {
        Precision::Exact(rows) => Some(rows),
        _ => None,
    }
}
