//! How the fleet's commands print: tables (prettytable), sizes, ages and durations in words.

use prettytable::format::consts::FORMAT_NO_LINESEP_WITH_TITLE;
use prettytable::{Cell, Row, Table};

/// A table with these column titles, in the style of the main job's tables.
pub(crate) fn table(titles: &[&str]) -> Table {
    let mut table = Table::new();
    table.set_format(*FORMAT_NO_LINESEP_WITH_TITLE);
    table.set_titles(Row::new(titles.iter().map(|t| Cell::new(t)).collect()));
    table
}

/// Adds a row of texts.
pub(crate) fn add_row(table: &mut Table, cells: &[String]) {
    table.add_row(Row::new(cells.iter().map(|c| Cell::new(c)).collect()));
}

/// A size in bytes as people read it: `512 B`, `15.6 GiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `n` things: `1 host`, `2 hosts`.
pub(crate) fn count(n: usize, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        n => format!("{n} {thing}s"),
    }
}

/// A duration in milliseconds as people read it: `850 ms`, `12.3 s`, `4m 05s`, `2h 01m`.
pub(crate) fn duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m {:02}s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{}h {:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

/// How long ago `then_ms` (milliseconds since the Unix epoch) was, from `now_ms`.
pub(crate) fn ago(then_ms: u64, now_ms: u64) -> String {
    format!("{} ago", duration(now_ms.saturating_sub(then_ms)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_in_words() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(16_706_000_000), "15.6 GiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(80 * (1 << 30)), "80.0 GiB");
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(12_340), "12.3 s");
        assert_eq!(duration(245_000), "4m 05s");
        assert_eq!(duration(7_260_000), "2h 01m");
        assert_eq!(ago(1_000, 3_500), "2.5 s ago");
        assert_eq!(count(1, "host"), "1 host");
        assert_eq!(count(0, "executor"), "0 executors");
    }
}
