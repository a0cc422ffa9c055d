//! Where in a CSV file a read failed. The CSV decoder counts lines from wherever it started — the start of a
//! byte range when a file is split among partitions, the start of a chunk while inferring types — so the line
//! in its message is rarely the line in the file. [`located`] reads what the message says went wrong (a row
//! with the wrong number of fields, a value that does not parse, bytes that are not UTF-8), finds the first
//! record in the files that fails that way and names its file and line.
//!
//! ```text
//! data/people.csv: line 51: 34 fields where 35 were expected
//! ```

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use datafusion::error::DataFusionError;

use super::CsvOptions;

/// What a CSV decoder's message says was wrong with a record.
#[derive(Debug, PartialEq)]
enum Failure {
    /// A record had a different number of fields: `expected` when the reader knew the table's count, none
    /// when it compared records with the first it read itself (which may be the ragged one, or start mid-file);
    /// then a record fails when its count differs from the file's first record's (its header's).
    Fields { expected: Option<usize> },
    /// A value in a column (0-based, in the file) did not parse as the column's type.
    Value {
        column: usize,
        value: String,
        data_type: String,
    },
    /// A field was not UTF-8.
    Utf8,
}

impl Failure {
    /// Reads the failure from the messages of arrow's CSV reader and its schema inference.
    fn of(message: &str) -> Option<Self> {
        if let Some(rest) = after(message, "incorrect number of fields for line ") {
            return Some(Self::Fields {
                expected: Some(leading_number(after(rest, "expected ")?)?),
            });
        }
        if message.contains("unequal lengths between records") {
            return Some(Self::Fields { expected: None });
        }
        if let Some(rest) = after(message, "Error while parsing value '") {
            let (value, rest) = rest.split_once("' as type '")?;
            let (data_type, rest) = rest.split_once("' for column ")?;
            return Some(Self::Value {
                column: leading_number(rest)?,
                value: value.to_string(),
                data_type: data_type.to_string(),
            });
        }
        message.contains("invalid UTF-8").then_some(Self::Utf8)
    }

    /// Whether `record` fails this way; `header` when it is a file's header line, `first` the number of fields
    /// of the file's first record.
    fn fails(&self, record: &csv::ByteRecord, header: bool, first: usize) -> Option<String> {
        match self {
            Self::Fields {
                expected: Some(expected),
            } if record.len() != *expected => Some(format!(
                "{} fields where {expected} were expected{}",
                record.len(),
                if header { " (the header has them)" } else { "" }
            )),
            Self::Fields { expected: None } if record.len() != first => Some(format!(
                "{} fields where {first} were expected (as line 1 has)",
                record.len()
            )),
            Self::Value {
                column,
                value,
                data_type,
            } if !header && record.get(*column) == Some(value.as_bytes()) => Some(format!(
                "value {value:?} in column {} does not parse as {data_type}",
                column + 1
            )),
            Self::Utf8 => record
                .iter()
                .position(|field| std::str::from_utf8(field).is_err())
                .map(|field| format!("field {} is not valid UTF-8", field + 1)),
            _ => None,
        }
    }
}

fn after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    text.find(marker).map(|at| &text[at + marker.len()..])
}

fn leading_number(text: &str) -> Option<usize> {
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    text[..digits].parse().ok()
}

/// `error` with the file and line of the first record in `files` that fails as its message says; `error`
/// naming the files when the message is not about a record, or no record fails so (a compressed file other
/// than gzip is not searched).
pub(crate) fn located(error: DataFusionError, files: &[PathBuf], options: &CsvOptions) -> DataFusionError {
    let message = error.to_string();
    let Some(failure) = Failure::of(&message).filter(|_| !files.is_empty()) else {
        return error;
    };
    for file in files {
        match first_failing(file, &failure, options) {
            // The reader's own message is left out: its line numbers are what misleads.
            Ok(Some((line, what))) => {
                return DataFusionError::Execution(format!("{}: line {line}: {what}", file.display()));
            }
            Ok(None) => {}
            Err(e) => {
                return DataFusionError::Execution(format!(
                    "{message} (reading {}; finding the line failed: {e})",
                    file.display()
                ));
            }
        }
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    DataFusionError::Execution(format!("{message} (reading {})", names.join(", ")))
}

/// The line (1-based, in the file) of the first record of `file` that fails as `failure`, and what is wrong.
fn first_failing(file: &Path, failure: &Failure, options: &CsvOptions) -> std::io::Result<Option<(u64, String)>> {
    let opened = BufReader::new(File::open(file)?);
    let bytes: Box<dyn Read> = match file.extension().and_then(|e| e.to_str()) {
        Some("gz") => Box::new(flate2::read::MultiGzDecoder::new(opened)),
        Some("bz2" | "xz" | "zst") => return Ok(None),
        _ => Box::new(opened),
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(options.delimiter)
        .quote(options.quote)
        .escape(options.escape)
        .double_quote(options.escape.is_none())
        .comment(options.comment)
        .from_reader(bytes);
    let mut record = csv::ByteRecord::new();
    let mut first_fields = None;
    while reader.read_byte_record(&mut record).map_err(std::io::Error::other)? {
        let header = first_fields.is_none() && options.header;
        let first = *first_fields.get_or_insert(record.len());
        if let Some(what) = failure.fails(&record, header, first) {
            let line = record.position().map_or(0, csv::Position::line);
            return Ok(Some((line, what)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_read_from_the_readers_messages() {
        let fields = "Arrow error: Csv error: incorrect number of fields for line 5000, expected 35 got 34";
        assert_eq!(Failure::of(fields), Some(Failure::Fields { expected: Some(35) }));
        // A reader that counts from a record of its own: its "expected" may be the ragged record's.
        let inferring = "Arrow error: Csv error: Encountered unequal lengths between records on CSV file. \
                         Expected 34 records, found 35 records at line 2";
        assert_eq!(Failure::of(inferring), Some(Failure::Fields { expected: None }));
        let value = "Parser error: Error while parsing value 'x's' as type 'Float64' for column 2 at line 4. \
                     Row data: '[1,2,x's]'";
        assert_eq!(
            Failure::of(value),
            Some(Failure::Value {
                column: 2,
                value: "x's".to_string(),
                data_type: "Float64".to_string()
            })
        );
        assert_eq!(
            Failure::of("Csv error: Encountered invalid UTF-8 data for line 3 and field 2"),
            Some(Failure::Utf8)
        );
        assert_eq!(Failure::of("Execution error: no such column"), None);
    }

    #[test]
    fn the_first_failing_record_is_named_by_its_line_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("people.csv");
        // A quoted field over two lines: records and lines differ from line 3 on.
        std::fs::write(&file, "name,age\n\"Ann\nLee\",31\nBob,40\nCid,x\nDee,52,extra\n").unwrap();
        let options = CsvOptions::new();
        let error = |message: &str| {
            located(
                DataFusionError::Execution(message.to_string()),
                std::slice::from_ref(&file),
                &options,
            )
            .to_string()
        };
        let ragged = error("incorrect number of fields for line 3, expected 2 got 3");
        assert!(
            ragged.contains("people.csv: line 6: 3 fields where 2 were expected"),
            "{ragged}"
        );
        // A reader that started at the ragged record expects its count: the file's first record decides.
        let inferring = error("Encountered unequal lengths between records on CSV file. Expected 3 records, found 2");
        assert!(
            inferring.contains("people.csv: line 6: 3 fields where 2 were expected (as line 1 has)"),
            "{inferring}"
        );
        let value = error("Error while parsing value 'x' as type 'Int64' for column 1 at line 1. Row data: ''");
        assert!(
            value.contains("line 5: value \"x\" in column 2 does not parse as Int64"),
            "{value}"
        );
        let unrelated = error("Execution error: something else");
        assert!(!unrelated.contains("line"), "{unrelated}");
    }
}
