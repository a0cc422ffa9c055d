//! A titled table of strings, the one shape every display is made of: HTML with escaped cells, or text
//! drawn by prettytable.

use prettytable::format::consts::FORMAT_NO_LINESEP_WITH_TITLE;
use prettytable::{Cell, Row, Table};

use super::Rich;

/// `text` safe inside HTML: `&`, `<`, `>`, `"` and `'` as entities.
///
/// ```
/// assert_eq!(hearth_display::escape("<script>\"x\" & 'y'"), "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;");
/// ```
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A table: an optional caption, a header, rows, and an optional note under it (what was left out).
///
/// ```
/// use hearth_display::{Grid, Rich};
/// let grid = Grid::new(["label"]).caption("Labels").row(["<b>"]).note("1 of 3 rows");
/// let html = grid.to_html();
/// assert!(html.contains("<caption>Labels</caption>") && html.contains("left\">&lt;b&gt;</td>"));
/// assert!(grid.to_text().starts_with("Labels\n"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    caption: Option<String>,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    note: Option<String>,
}

impl Grid {
    /// A table with these column names and no rows yet.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self {
            header: header.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Its caption, shown above it.
    pub fn caption(mut self, caption: impl Into<String>) -> Self {
        self.caption = Some(caption.into());
        self
    }

    /// Adds a row.
    pub fn row<S: Into<String>>(mut self, cells: impl IntoIterator<Item = S>) -> Self {
        self.push(cells);
        self
    }

    /// Adds a row in place.
    pub fn push<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// A note shown under it.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// Its rows.
    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }
}

impl Rich for Grid {
    fn to_html(&self) -> String {
        let mut html = String::from("<table class=\"hearth\">");
        if let Some(caption) = &self.caption {
            html.push_str(&format!("<caption>{}</caption>", escape(caption)));
        }
        html.push_str("<thead><tr>");
        for name in &self.header {
            html.push_str(&format!("<th>{}</th>", escape(name)));
        }
        html.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            html.push_str("<tr>");
            for cell in row {
                // Numbers align right (Jupyter's default for every cell), words left.
                if cell.parse::<f64>().is_ok() || cell == "-" {
                    html.push_str(&format!("<td>{}</td>", escape(cell)));
                } else {
                    html.push_str(&format!("<td style=\"text-align: left\">{}</td>", escape(cell)));
                }
            }
            html.push_str("</tr>");
        }
        html.push_str("</tbody></table>");
        if let Some(note) = &self.note {
            html.push_str(&format!("<p><em>{}</em></p>", escape(note)));
        }
        html
    }

    fn to_text(&self) -> String {
        let mut table = Table::new();
        table.set_format(*FORMAT_NO_LINESEP_WITH_TITLE);
        table.set_titles(Row::new(self.header.iter().map(|name| Cell::new(name)).collect()));
        for row in &self.rows {
            table.add_row(Row::new(row.iter().map(|cell| Cell::new(cell)).collect()));
        }
        let mut text = String::new();
        if let Some(caption) = &self.caption {
            text.push_str(caption);
            text.push('\n');
        }
        text.push_str(&table.to_string());
        if let Some(note) = &self.note {
            text.push_str(note);
            text.push('\n');
        }
        text
    }
}

/// Several tables shown one after the other.
impl Rich for [Grid] {
    fn to_html(&self) -> String {
        self.iter().map(Grid::to_html).collect::<Vec<_>>().join("\n")
    }

    fn to_text(&self) -> String {
        self.iter().map(Grid::to_text).collect::<Vec<_>>().join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_strings_are_text_in_html() {
        let grid = Grid::new(["<th>"])
            .caption("a & b")
            .row(["<script>alert(1)</script>"])
            .note("<i>");
        let html = grid.to_html();
        assert!(!html.contains("<script>") && !html.contains("<i>") && !html.contains("<th><th>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("<caption>a &amp; b</caption>"));
        // Tags open and close in pairs.
        for tag in ["table", "thead", "tbody", "tr", "th", "td", "caption", "p", "em"] {
            assert_eq!(
                html.matches(&format!("<{tag}>")).count() + html.matches(&format!("<{tag} ")).count(),
                html.matches(&format!("</{tag}>")).count(),
                "<{tag}> in {html}"
            );
        }
    }

    #[test]
    fn an_empty_grid_still_shows_its_header() {
        let grid = Grid::new(["a", "b"]);
        assert!(
            grid.to_html()
                .contains("<th>a</th><th>b</th></tr></thead><tbody></tbody>")
        );
        assert!(grid.to_text().contains("| a | b |"));
    }
}
