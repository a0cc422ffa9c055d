//! Evaluation states as bytes: how a partial state travels between the partial and final halves of an
//! aggregate. A state is a sequence of little-endian `f64`s; the reader names the state when bytes are cut
//! short.

/// Why bytes are not a state.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{state} state: {message}")]
pub struct StateDecodeError {
    /// The kind of state being read.
    pub state: &'static str,
    /// What is wrong with the bytes.
    pub message: String,
}

/// Appends values to a state's bytes.
pub(crate) fn put(bytes: &mut Vec<u8>, values: &[f64]) {
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
}

/// Reads a state's values back, checking they come in whole records of `record` values.
pub(crate) fn values(state: &'static str, bytes: &[u8], record: usize) -> Result<Vec<f64>, StateDecodeError> {
    if !bytes.len().is_multiple_of(8) || !(bytes.len() / 8).is_multiple_of(record.max(1)) {
        return Err(StateDecodeError {
            state,
            message: format!("{} bytes are not whole records of {record} numbers", bytes.len()),
        });
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .collect())
}
