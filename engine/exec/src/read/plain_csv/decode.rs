//! Plain CSV lines into Arrow columns: one pass over a line's bytes splits its fields and parses them, a
//! decimal like `-0.123456` or `42` as it is split. A field the quick parsers do not take goes to arrow's own
//! parser (`Float64Type::parse`, `Int64Type::parse`), so every value is what arrow's CSV reader makes of it.
//! A line that cannot be decoded here — a value that does not parse, the wrong number of fields — is
//! refused, and the reader hands the lines from its batch's first on to arrow's decoder, whose error is the
//! one a user would have had.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, NullBufferBuilder, PrimitiveArray, RecordBatch, RecordBatchOptions, StringBuilder,
};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::compute::kernels::cast_utils::Parser;
use datafusion::arrow::datatypes::{ArrowPrimitiveType, DataType, Float64Type, Int64Type, SchemaRef};
use datafusion::error::Result as DfResult;

/// Powers of ten that are exact as `f64`: a decimal with at most 15 significant digits divided by one of
/// them is rounded once, correctly — the value any correct parser gives.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// The largest integer every smaller one of which is exact as `f64`: 2^53.
const EXACT_MANTISSA: u64 = 1 << 53;

/// Whether columns of `data_type` are decoded here.
pub(super) fn decodes(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Float64 | DataType::Int64 | DataType::Utf8)
}

/// One projected column being built: numbers into a vector of their own, whose pushes inline, and a
/// validity bitmap made only once a null comes.
enum Column {
    Float64(Vec<f64>, NullBufferBuilder),
    Int64(Vec<i64>, NullBufferBuilder),
    Utf8(StringBuilder),
}

impl Column {
    fn new(data_type: &DataType, rows: usize) -> Self {
        match data_type {
            DataType::Float64 => Self::Float64(Vec::with_capacity(rows), NullBufferBuilder::new(rows)),
            DataType::Int64 => Self::Int64(Vec::with_capacity(rows), NullBufferBuilder::new(rows)),
            _ => Self::Utf8(StringBuilder::with_capacity(rows, rows * 8)),
        }
    }

    /// Parses the field starting at `start` of `line` and appends it; returns where the field ends (at the
    /// delimiter or the line's end), or `None` when arrow's parser does not take it either.
    fn append(&mut self, line: &[u8], start: usize, delimiter: u8) -> Option<usize> {
        let rest = &line[start..];
        match self {
            Self::Float64(values, nulls) => {
                append_number::<Float64Type>(values, nulls, rest, delimiter, quick_decimal).map(|len| start + len)
            }
            Self::Int64(values, nulls) => {
                append_number::<Int64Type>(values, nulls, rest, delimiter, quick_integer).map(|len| start + len)
            }
            Self::Utf8(builder) => {
                let len = field_len(rest, delimiter);
                if len == 0 {
                    builder.append_null();
                } else if builder.values_slice().len() + len > i32::MAX as usize {
                    // Past what one batch's string offsets hold: arrow's decoder says so.
                    return None;
                } else {
                    builder.append_value(std::str::from_utf8(&rest[..len]).ok()?);
                }
                Some(start + len)
            }
        }
    }

    /// The column built so far; the next starts empty with room for as many rows.
    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Float64(values, nulls) => primitive::<Float64Type>(values, nulls),
            Self::Int64(values, nulls) => primitive::<Int64Type>(values, nulls),
            Self::Utf8(builder) => {
                // A finished builder starts again with no room at all; its successor gets as much.
                let room = StringBuilder::with_capacity(builder.len(), builder.values_slice().len());
                Arc::new(std::mem::replace(builder, room).finish())
            }
        }
    }
}

/// The array of `values` and `nulls`, which start again empty, with room for as many rows.
fn primitive<T: ArrowPrimitiveType>(values: &mut Vec<T::Native>, nulls: &mut NullBufferBuilder) -> ArrayRef {
    let rows = values.len();
    let values = std::mem::replace(values, Vec::with_capacity(rows));
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls.finish()))
}

/// A parser of a number's plainest forms: the value at the start of its bytes and how many it took.
type QuickParser<N> = fn(&[u8]) -> Option<(N, usize)>;

/// Appends the number at the start of `rest` — read by `quick` when it takes the whole field, else as arrow's
/// CSV reader reads it: empty is null, anything else through arrow's parser — and returns the field's length.
fn append_number<T: ArrowPrimitiveType + Parser>(
    values: &mut Vec<T::Native>,
    nulls: &mut NullBufferBuilder,
    rest: &[u8],
    delimiter: u8,
    quick: QuickParser<T::Native>,
) -> Option<usize> {
    if let Some((value, len)) = quick(rest)
        && rest.get(len).is_none_or(|b| *b == delimiter)
    {
        values.push(value);
        nulls.append_non_null();
        return Some(len);
    }
    let len = field_len(rest, delimiter);
    if len == 0 {
        values.push(T::Native::default());
        nulls.append_null();
    } else {
        values.push(T::parse(std::str::from_utf8(&rest[..len]).ok()?)?);
        nulls.append_non_null();
    }
    Some(len)
}

/// The length of the field at the start of `rest`: up to the delimiter or the end.
fn field_len(rest: &[u8], delimiter: u8) -> usize {
    memchr::memchr(delimiter, rest).unwrap_or(rest.len())
}

/// A decimal at the start of `bytes` in its plainest form — an optional `-`, digits, optionally `.` and
/// more digits, at most 19 digits that make an integer below 2^53 — and the bytes it took; `None` for
/// anything else (an exponent, `inf`, a leading `+` or space, more digits), which arrow's parser reads.
fn quick_decimal(bytes: &[u8]) -> Option<(f64, usize)> {
    let negative = bytes.first() == Some(&b'-');
    let mut at = usize::from(negative);
    let mut mantissa: u64 = 0;
    let digits_from = at;
    while let Some(digit) = bytes.get(at).map(|b| b.wrapping_sub(b'0')).filter(|d| *d < 10) {
        mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(digit));
        at += 1;
    }
    let whole_digits = at - digits_from;
    let mut fraction_digits = 0;
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        while let Some(digit) = bytes.get(at).map(|b| b.wrapping_sub(b'0')).filter(|d| *d < 10) {
            mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(digit));
            at += 1;
            fraction_digits += 1;
        }
        if fraction_digits == 0 {
            return None;
        }
    }
    if whole_digits == 0 || whole_digits + fraction_digits > 19 || mantissa >= EXACT_MANTISSA {
        return None;
    }
    let magnitude = mantissa as f64 / *EXACT_POWERS_OF_TEN.get(fraction_digits)?;
    Some((if negative { -magnitude } else { magnitude }, at))
}

/// An integer at the start of `bytes` — an optional `-` and 1 to 18 digits — and the bytes it took.
fn quick_integer(bytes: &[u8]) -> Option<(i64, usize)> {
    let negative = bytes.first() == Some(&b'-');
    let mut at = usize::from(negative);
    let mut value: i64 = 0;
    while let Some(digit) = bytes.get(at).map(|b| b.wrapping_sub(b'0')).filter(|d| *d < 10) {
        if at - usize::from(negative) == 18 {
            return None;
        }
        value = value * 10 + i64::from(digit);
        at += 1;
    }
    if at == usize::from(negative) {
        return None;
    }
    Some((if negative { -value } else { value }, at))
}

/// Builds a batch of the projected columns of plain CSV lines.
pub(super) struct LineDecoder {
    delimiter: u8,
    /// For each of the file's columns, the projected column it fills, if any.
    slots: Vec<Option<usize>>,
    columns: Vec<Column>,
    projected: SchemaRef,
    rows: usize,
}

impl LineDecoder {
    /// A decoder of lines with `file_columns` fields separated by `delimiter` into batches of up to
    /// `batch_size` rows of `projected` (the file's columns at `projection`, each of a type that [`decodes`]).
    pub(super) fn new(
        delimiter: u8,
        file_columns: usize,
        projection: &[usize],
        projected: SchemaRef,
        batch_size: usize,
    ) -> Self {
        let mut slots = vec![None; file_columns];
        for (slot, column) in projection.iter().enumerate() {
            slots[*column] = Some(slot);
        }
        let columns = projected
            .fields()
            .iter()
            .map(|field| Column::new(field.data_type(), batch_size))
            .collect();
        Self {
            delimiter,
            slots,
            columns,
            projected,
            rows: 0,
        }
    }

    /// Rows decoded since the last batch.
    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    /// Whether `line` has as many fields as the file has columns.
    pub(super) fn fields_match(&self, line: &[u8]) -> bool {
        memchr::memchr_iter(self.delimiter, line).count() + 1 == self.slots.len()
    }

    /// Decodes one line (its terminator removed); `false` when it is not for this decoder — a field that does
    /// not parse, more or fewer fields than the file's — and then the batch's columns are no longer whole.
    pub(super) fn decode(&mut self, line: &[u8]) -> bool {
        let last = self.slots.len() - 1;
        let mut start = 0;
        for (index, slot) in self.slots.iter().enumerate() {
            let end = match slot {
                Some(slot) => match self.columns[*slot].append(line, start, self.delimiter) {
                    Some(end) => end,
                    None => return false,
                },
                None => start + field_len(&line[start..], self.delimiter),
            };
            let at_line_end = end == line.len();
            if at_line_end != (index == last) {
                return false;
            }
            start = end + 1;
        }
        self.rows += 1;
        true
    }

    /// The batch of the lines decoded since the last one, and a fresh start for the next.
    pub(super) fn finish(&mut self) -> DfResult<RecordBatch> {
        let rows = self.rows;
        let columns: Vec<ArrayRef> = self.columns.iter_mut().map(Column::finish).collect();
        self.rows = 0;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.projected),
            columns,
            &options,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick parsers agree with arrow's on every form they take, and leave the rest to it.
    #[test]
    fn quick_parsers_agree_with_arrow() {
        for text in [
            "0",
            "-0",
            "-0.000000",
            "0.123456",
            "-999",
            "1234567.891011",
            "9007199254740991",
            "3.14159",
            "100000000000000000.5",
            "0.1000000000000000000001",
            "5",
            "-17.25",
        ] {
            let ours = quick_decimal(text.as_bytes()).map(|(v, len)| {
                assert_eq!(len, text.len(), "{text}");
                v
            });
            if let Some(ours) = ours {
                let arrow = Float64Type::parse(text).unwrap();
                assert_eq!(ours.to_bits(), arrow.to_bits(), "{text}");
            }
        }
        for refused in ["1e5", "+1", " 1", ".5", "5.", "inf", "NaN", "-", "12345678901234567890"] {
            assert!(
                quick_decimal(refused.as_bytes()).is_none_or(|(_, len)| len < refused.len()),
                "{refused}"
            );
        }
        for text in ["0", "-12", "123456789012345678"] {
            assert_eq!(quick_integer(text.as_bytes()).map(|(v, _)| v), Int64Type::parse(text));
        }
        assert!(quick_integer(b"1234567890123456789").is_none());
    }

    /// Runs of digits of every length on both sides of the point, followed by a delimiter or by nothing,
    /// read as arrow reads them, or left to it.
    #[test]
    fn digit_runs_of_every_length_read_as_arrow_reads_them() {
        let digits = "9081726354453627189";
        for whole in 0..=19 {
            for fraction in 0..=19 - whole {
                let mut text = String::from(&digits[..whole]);
                if fraction > 0 {
                    text.push('.');
                    text.push_str(&digits[19 - fraction..]);
                }
                for line in [text.clone(), format!("-{text},7")] {
                    let field = line.split(',').next().unwrap_or_default();
                    match (quick_decimal(line.as_bytes()), Float64Type::parse(field)) {
                        (Some((ours, len)), Some(arrow)) => {
                            assert_eq!(len, field.len(), "{line}");
                            assert_eq!(ours.to_bits(), arrow.to_bits(), "{line}");
                        }
                        (None, _) => assert!(whole == 0 || whole + fraction >= 16, "{line} refused"),
                        (Some(_), None) => panic!("{line} read here but not by arrow"),
                    }
                    if fraction == 0 && (1..=18).contains(&whole) {
                        let ours = quick_integer(line.as_bytes()).map(|(v, _)| v);
                        assert_eq!(ours, Int64Type::parse(field), "{line}");
                    }
                }
            }
        }
    }
}
