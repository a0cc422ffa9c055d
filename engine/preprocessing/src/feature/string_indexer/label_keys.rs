//! A column's values as integer keys that stand for the labels Spark's cast to string would print, so a
//! `StringIndexer` counts and looks up labels without making a string per row: integers by value, doubles and
//! floats by bit pattern, short strings as their bytes packed into an integer.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, GenericStringArray, OffsetSizeTrait};
use datafusion::arrow::buffer::{NullBuffer, ScalarBuffer};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{ArrowNativeType, DataType, Float32Type, Float64Type, Int64Type};
use datafusion::common::HashMap;

use super::spark_string::{java_double_string, java_float_string};

/// Longest string packed into a key: 7 bytes, the eighth holds the length.
const PACKED_BYTES: usize = 7;

/// Up to this many distinct keys are counted a key at a time, one vectorised pass over a batch each; more by
/// hashing.
const SCANNED_KEYS: usize = 8;

/// What a key holds, which decides the label it prints as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeyKind {
    /// An integer, as `i64`.
    Int,
    /// An `f64`'s bits.
    Double,
    /// An `f32`'s bits.
    Float,
    /// A string of at most 7 bytes: the bytes, then the length in the top byte.
    Packed,
}

impl KeyKind {
    /// The label the value keyed `key` prints as.
    pub(crate) fn label(self, key: u64) -> String {
        match self {
            KeyKind::Int => (key as i64).to_string(),
            KeyKind::Double => java_double_string(f64::from_bits(key)),
            KeyKind::Float => java_float_string(f32::from_bits(key as u32)),
            KeyKind::Packed => {
                let bytes = key.to_le_bytes();
                String::from_utf8_lossy(&bytes[..usize::from(bytes[PACKED_BYTES])]).into_owned()
            }
        }
    }

    /// The key of the value that prints as `label`, when a value of this kind can.
    pub(crate) fn key_of(self, label: &str) -> Option<u64> {
        match self {
            KeyKind::Int => label
                .parse::<i64>()
                .ok()
                .filter(|x| x.to_string() == label)
                .map(|x| x as u64),
            KeyKind::Double => {
                let x: f64 = label.parse().ok()?;
                (java_double_string(x) == label).then_some(x.to_bits())
            }
            KeyKind::Float => {
                let x: f32 = label.parse().ok()?;
                (java_float_string(x) == label).then_some(u64::from(x.to_bits()))
            }
            KeyKind::Packed => pack(label.as_bytes()),
        }
    }
}

/// A batch's values as keys; `valid` is false for nulls and NaN (which a `StringIndexer` treats as null).
/// The keys of 64-bit integers and doubles are the column's own buffer, read as `u64`.
pub(crate) struct KeyedValues {
    pub(crate) kind: KeyKind,
    pub(crate) keys: ScalarBuffer<u64>,
    pub(crate) valid: Option<NullBuffer>,
}

impl KeyedValues {
    /// The keys of `array`'s values, or `None` when its values cannot all be keyed (other types, longer
    /// strings): such a batch goes through Spark's cast to strings.
    pub(crate) fn of(array: &ArrayRef) -> Option<Self> {
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        let (kind, keys, not_nan) = match array.data_type() {
            DataType::Float64 => {
                let values = array.as_primitive::<Float64Type>().values();
                (KeyKind::Double, as_keys(values), not_nan(values, f64::is_nan))
            }
            DataType::Float32 => {
                let values = array.as_primitive::<Float32Type>().values();
                let keys = values.iter().map(|x| u64::from(x.to_bits())).collect();
                (KeyKind::Float, keys, not_nan(values, f32::is_nan))
            }
            t if t.is_integer() && *t != DataType::UInt64 => {
                let ints = cast(array, &DataType::Int64).ok()?;
                (KeyKind::Int, as_keys(ints.as_primitive::<Int64Type>().values()), None)
            }
            DataType::Utf8 => (KeyKind::Packed, packed_keys(array.as_string::<i32>())?.into(), None),
            DataType::LargeUtf8 => (KeyKind::Packed, packed_keys(array.as_string::<i64>())?.into(), None),
            _ => return None,
        };
        let valid = match not_nan {
            None => nulls,
            Some(not_nan) => NullBuffer::union(nulls.as_ref(), Some(&not_nan)),
        };
        Some(Self { kind, keys, valid })
    }
}

/// The keys of 64-bit values (`i64`, `f64`) without a copy: the same bytes read as `u64` (an integer's two's
/// complement, a double's bits).
fn as_keys<T: ArrowNativeType>(values: &ScalarBuffer<T>) -> ScalarBuffer<u64> {
    const {
        assert!(
            size_of::<T>() == size_of::<u64>(),
            "only 64-bit values are their own keys"
        );
    };
    values.inner().clone().into()
}

/// Which values are not NaN, when some are (`None` when none is).
fn not_nan<T: Copy>(values: &[T], is_nan: impl Fn(T) -> bool) -> Option<NullBuffer> {
    values
        .iter()
        .any(|&x| is_nan(x))
        .then(|| NullBuffer::from(values.iter().map(|&x| !is_nan(x)).collect::<Vec<bool>>()))
}

/// A string of at most `PACKED_BYTES` bytes as an integer.
fn pack(bytes: &[u8]) -> Option<u64> {
    if bytes.len() > PACKED_BYTES {
        return None;
    }
    let mut packed = [0u8; 8];
    packed[..bytes.len()].copy_from_slice(bytes);
    packed[PACKED_BYTES] = bytes.len() as u8;
    Some(u64::from_le_bytes(packed))
}

/// Every string of the array packed, or `None` if one is too long to pack.
fn packed_keys<O: OffsetSizeTrait>(strings: &GenericStringArray<O>) -> Option<Vec<u64>> {
    let bytes = strings.value_data();
    let mut keys = Vec::with_capacity(strings.len());
    for window in strings.value_offsets().windows(2) {
        let (start, len) = (window[0].as_usize(), (window[1] - window[0]).as_usize());
        if len > PACKED_BYTES {
            return None;
        }
        // One unaligned 8-byte read masked to the string's length, where the buffer has 8 bytes left.
        let key = match bytes.get(start..start + 8) {
            Some(word) => {
                let word = u64::from_le_bytes(word.try_into().ok()?);
                (word & ((1u64 << (8 * len)) - 1)) | ((len as u64) << (8 * PACKED_BYTES))
            }
            None => pack(&bytes[start..start + len])?,
        };
        keys.push(key);
    }
    Some(keys)
}

/// Positions of the labels that values of one kind can print as, for finding each row's label.
pub(crate) struct LabelPositions {
    lookup: Lookup,
}

/// How a key's label position is found.
enum Lookup {
    /// Up to `TABLED_LABELS` labels: a small table with no two labels in one slot.
    Table(KeyTable),
    /// More labels: a hash map.
    Hashed(HashMap<u64, f64>),
}

/// Most labels looked up through a [`KeyTable`]; beyond that a hash map is as quick.
const TABLED_LABELS: usize = 64;

impl LabelPositions {
    /// The labels' positions, keyed as values of `kind` are.
    pub(crate) fn new(labels: &[String], kind: KeyKind) -> Self {
        let keyed: Vec<(u64, f64)> = labels
            .iter()
            .enumerate()
            .filter_map(|(i, l)| kind.key_of(l).map(|k| (k, i as f64)))
            .collect();
        let table = (keyed.len() <= TABLED_LABELS).then(|| KeyTable::new(&keyed)).flatten();
        let lookup = match table {
            Some(table) => Lookup::Table(table),
            None => Lookup::Hashed(keyed.into_iter().collect()),
        };
        Self { lookup }
    }

    /// Each row's label position; `NaN` for a null or NaN value and for a value that is not a label.
    pub(crate) fn positions(&self, values: &KeyedValues) -> Vec<f64> {
        let mut out: Vec<f64> = match &self.lookup {
            Lookup::Table(table) => table.find_all(&values.keys),
            Lookup::Hashed(hashed) => {
                let find = |k: &u64| hashed.get(k).copied().unwrap_or(f64::NAN);
                values.keys.iter().map(find).collect()
            }
        };
        if let Some(valid) = &values.valid {
            for row in (0..out.len()).filter(|&r| valid.is_null(r)) {
                out[row] = f64::NAN;
            }
        }
        out
    }
}

/// A few keys in a power-of-two table, each in the slot a multiplicative hash gives it, chosen so that no two
/// share a slot: a lookup is a multiply, a shift and one compare, with no branch (a perfect hash).
struct KeyTable {
    multiplier: u64,
    shift: u32,
    /// Each slot's key and position; an empty slot's position is `NaN`, so whatever key it holds finds nothing.
    slots: Vec<(u64, f64)>,
}

impl KeyTable {
    /// Odd multipliers tried in turn (fixed, so a table is the same in every run).
    const MULTIPLIERS: [u64; 8] = [
        0x9E37_79B9_7F4A_7C15,
        0xC2B2_AE3D_27D4_EB4F,
        0x1656_67B1_9E37_79F9,
        0xD6E8_FEB8_6659_FD93,
        0xFF51_AFD7_ED55_8CCD,
        0xC4CE_B9FE_1A85_EC53,
        0x94D0_49BB_1331_11EB,
        0xBF58_476D_1CE4_E5B9,
    ];

    /// A table for `keyed` (distinct keys with their positions), or `None` if no multiplier separates them in
    /// a table of up to 64 slots per key.
    fn new(keyed: &[(u64, f64)]) -> Option<Self> {
        let least_bits = (keyed.len().max(1) * 4).next_power_of_two().trailing_zeros();
        for bits in least_bits..=least_bits + 4 {
            for multiplier in Self::MULTIPLIERS {
                let shift = 64 - bits;
                let mut slots = vec![(0u64, f64::NAN); 1 << bits];
                let placed = keyed.iter().all(|&(key, position)| {
                    let slot = &mut slots[(key.wrapping_mul(multiplier) >> shift) as usize];
                    let free = slot.1.is_nan();
                    *slot = (key, position);
                    free
                });
                if placed {
                    return Some(Self {
                        multiplier,
                        shift,
                        slots,
                    });
                }
            }
        }
        None
    }

    /// The position of each key's label, `NaN` for a key with none. The table's fields are read once, before
    /// the loop.
    fn find_all(&self, keys: &[u64]) -> Vec<f64> {
        let (multiplier, shift, slots) = (self.multiplier, self.shift, self.slots.as_slice());
        let mask = slots.len() - 1;
        let find = move |&key: &u64| {
            let (slot_key, position) = slots[(key.wrapping_mul(multiplier) >> shift) as usize & mask];
            if slot_key == key { position } else { f64::NAN }
        };
        keys.iter().map(find).collect()
    }
}

/// Counts of keys: up to `SCANNED_KEYS` distinct ones counted a key at a time, each in one vectorised pass
/// over the batch; more in a hash map.
#[derive(Debug, Default)]
pub(crate) struct KeyCounts {
    few: Vec<(u64, i64)>,
    many: HashMap<u64, i64>,
}

impl KeyCounts {
    /// Counts the valid values of a batch.
    pub(crate) fn add(&mut self, values: &KeyedValues) {
        match &values.valid {
            None => self.add_keys(&values.keys),
            Some(valid) => {
                let keys: Vec<u64> = values
                    .keys
                    .iter()
                    .zip(valid.iter())
                    .filter_map(|(&k, v)| v.then_some(k))
                    .collect();
                self.add_keys(&keys);
            }
        }
    }

    fn add_keys(&mut self, keys: &[u64]) {
        if !self.many.is_empty() {
            for &key in keys {
                *self.many.entry(key).or_insert(0) += 1;
            }
            return;
        }
        let mut counted = 0;
        for (key, count) in &mut self.few {
            let found = occurrences(keys, *key);
            *count += found as i64;
            counted += found;
        }
        let is_new = |few: &[(u64, i64)], key: u64| few.iter().all(|&(k, _)| k != key);
        while counted < keys.len() && self.few.len() < SCANNED_KEYS {
            let Some(&key) = keys.iter().find(|&&k| is_new(&self.few, k)) else {
                break;
            };
            let found = occurrences(keys, key);
            self.few.push((key, found as i64));
            counted += found;
        }
        if counted < keys.len() {
            // More distinct keys than passes pay for: those not counted yet, then every later batch, hashed.
            for &key in keys.iter().filter(|&&k| is_new(&self.few, k)) {
                *self.many.entry(key).or_insert(0) += 1;
            }
            self.many.extend(self.few.drain(..));
        }
    }

    /// Every key counted, with its count; the counts start again from zero.
    pub(crate) fn take(&mut self) -> impl Iterator<Item = (u64, i64)> {
        std::mem::take(&mut self.few)
            .into_iter()
            .chain(std::mem::take(&mut self.many))
    }

    /// How many distinct keys are held.
    pub(crate) fn len(&self) -> usize {
        self.few.len() + self.many.len()
    }
}

/// How many of `keys` equal `key` (a loop the compiler vectorises).
fn occurrences(keys: &[u64], key: u64) -> usize {
    keys.iter().filter(|&&k| k == key).count()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Float64Array, Int32Array, StringArray};

    use super::*;

    fn labels(values: &[&str]) -> Vec<String> {
        values.iter().map(ToString::to_string).collect()
    }

    fn positions(labels: &[String], array: ArrayRef) -> Vec<Option<f64>> {
        let values = KeyedValues::of(&array).expect("keyable");
        let found = LabelPositions::new(labels, values.kind).positions(&values);
        found.into_iter().map(|p| (!p.is_nan()).then_some(p)).collect()
    }

    #[test]
    fn numbers_are_found_by_the_label_spark_prints_for_them() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(3), None, Some(7), Some(10)]));
        assert_eq!(
            positions(&labels(&["10", "3", "03"]), ints),
            [Some(1.0), None, None, Some(0.0)]
        );
        let doubles: ArrayRef = Arc::new(Float64Array::from(vec![1.0, f64::NAN, 1e7, 2.5]));
        let found = positions(&labels(&["1.0E7", "1.0", "1"]), doubles);
        assert_eq!(found, [Some(1.0), None, Some(0.0), None]);
    }

    #[test]
    fn every_label_is_found_whether_tabled_or_hashed() {
        for count in [0, 1, 4, TABLED_LABELS, TABLED_LABELS + 1, 500] {
            let many: Vec<String> = (0..count).map(|i| (i * 7).to_string()).collect();
            let values: Vec<i32> = (0..count as i32 * 7 + 3).collect();
            let found = positions(&many, Arc::new(Int32Array::from(values.clone())));
            for (value, position) in values.iter().zip(found) {
                let want = (value % 7 == 0 && (*value as usize) < count * 7).then(|| f64::from(value / 7));
                assert_eq!(position, want, "value {value} among {count} labels");
            }
        }
    }

    #[test]
    fn short_strings_are_packed_and_long_ones_are_not() {
        let values: ArrayRef = Arc::new(StringArray::from(vec![Some("s"), Some("b"), None, Some("x"), Some("")]));
        let found = positions(&labels(&["b", "s", "", "a much longer label"]), values);
        assert_eq!(found, [Some(1.0), Some(0.0), None, None, Some(2.0)]);
        let many: Vec<String> = (0..20).map(|i| format!("l{i}")).collect();
        let values: ArrayRef = Arc::new(StringArray::from(vec!["l19", "l3", "l20"]));
        assert_eq!(positions(&many, values), [Some(19.0), Some(3.0), None]);
        let long: ArrayRef = Arc::new(StringArray::from(vec!["short", "eight by"]));
        assert!(KeyedValues::of(&long).is_none());
    }

    #[test]
    fn counts_spill_from_the_short_list_into_the_map() {
        let values: Vec<String> = (0..100).map(|i| format!("v{}", i % 12)).collect();
        let array: ArrayRef = Arc::new(StringArray::from(values));
        let keyed = KeyedValues::of(&array).unwrap();
        let mut counts = KeyCounts::default();
        counts.add(&keyed);
        counts.add(&keyed);
        assert_eq!(counts.len(), 12);
        let mut total: Vec<(String, i64)> = counts.take().map(|(k, c)| (keyed.kind.label(k), c)).collect();
        total.sort();
        assert_eq!(total[0], ("v0".to_string(), 18));
        assert_eq!(total.iter().map(|(_, c)| c).sum::<i64>(), 200);
    }

    #[test]
    fn nulls_and_nan_are_not_counted() {
        let array: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.0),
            None,
            Some(f64::NAN),
            Some(1.0),
            Some(2.0),
        ]));
        let keyed = KeyedValues::of(&array).unwrap();
        let mut counts = KeyCounts::default();
        counts.add(&keyed);
        let mut total: Vec<(String, i64)> = counts.take().map(|(k, c)| (keyed.kind.label(k), c)).collect();
        total.sort();
        assert_eq!(total, [("1.0".to_string(), 2), ("2.0".to_string(), 1)]);
    }
}
