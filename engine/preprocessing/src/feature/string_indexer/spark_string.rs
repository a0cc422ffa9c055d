//! Spark's cast of a column to strings, which decides the labels a `StringIndexer` sees for numeric input:
//! integers print as digits, doubles and floats as Java's `Double.toString`/`Float.toString` (`1.0`, `1.0E7`,
//! `1.0E-4`), booleans as `true`/`false`. NaN becomes null, as `StringIndexer` replaces it before the cast.

use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::array::{Array, ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::common::cast::as_string_array;
use datafusion::common::plan_err;
use datafusion::error::Result;

/// Whether a `StringIndexer` accepts a column of this type (strings and numbers, as Spark).
pub(crate) fn is_indexable(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Boolean
    ) || data_type.is_numeric()
}

/// The column as Spark would cast it to strings.
pub(crate) fn spark_strings(array: &ArrayRef) -> Result<StringArray> {
    let strings: ArrayRef = match array.data_type() {
        DataType::Float64 => Arc::new(
            array
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.filter(|x| !x.is_nan()).map(java_double_string))
                .collect::<StringArray>(),
        ),
        DataType::Float32 => Arc::new(
            array
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| v.filter(|x| !x.is_nan()).map(java_float_string))
                .collect::<StringArray>(),
        ),
        DataType::Float16 => return spark_strings(&cast(array, &DataType::Float32)?),
        t if is_indexable(t) => cast(array, &DataType::Utf8)?,
        t => return plan_err!("cannot index values of type {t}: StringIndexer takes string or numeric columns"),
    };
    Ok(as_string_array(&strings)?.clone())
}

/// Java's `Double.toString` for a non-NaN double: `1.0`, `1.0E7`, `1.0E-4`.
pub(crate) fn java_double_string(x: f64) -> String {
    java_layout(
        x.is_sign_negative(),
        x.is_infinite(),
        x == 0.0,
        &format!("{:e}", x.abs()),
    )
}

/// Java's `Float.toString` for a non-NaN float.
pub(crate) fn java_float_string(x: f32) -> String {
    java_layout(
        x.is_sign_negative(),
        x.is_infinite(),
        x == 0.0,
        &format!("{:e}", x.abs()),
    )
}

/// Lays out Rust's shortest round-trip scientific form (`d.ddde±x`) the way Java prints floating point.
fn java_layout(negative: bool, infinite: bool, zero: bool, scientific: &str) -> String {
    let sign = if negative { "-" } else { "" };
    if infinite {
        return format!("{sign}Infinity");
    }
    if zero {
        return format!("{sign}0.0");
    }
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-3..7).contains(&exponent) {
        if exponent >= 0 {
            let split = exponent as usize + 1;
            let padded = format!("{digits:0<split$}");
            let (int_part, frac_part) = padded.split_at(split);
            let frac_part = if frac_part.is_empty() { "0" } else { frac_part };
            format!("{sign}{int_part}.{frac_part}")
        } else {
            let zeros = "0".repeat((-exponent - 1) as usize);
            format!("{sign}0.{zeros}{digits}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_does() {
        let cases = [
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (1234567.0, "1234567.0"),
            (1e7, "1.0E7"),
            (12345678.9, "1.23456789E7"),
            (0.1, "0.1"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "Infinity"),
            (1.5e-10, "1.5E-10"),
        ];
        for (x, want) in cases {
            assert_eq!(java_double_string(x), want, "{x}");
        }
        assert_eq!(java_float_string(0.1_f32), "0.1");
        assert_eq!(java_float_string(3.0e8_f32), "3.0E8");
    }
}
