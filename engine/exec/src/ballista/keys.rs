//! The keys derived from the fleet's secret, each an HMAC-SHA256 under it of what the key is for: a
//! cluster-mode job's key, a training stage's job secret, a token's proof; and the comparison of proofs.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The HMAC-SHA256 under `key` of `message`, in hexadecimal.
pub(super) fn hmac_hex(key: &str, message: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(message.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The key of cluster-mode job `job` under the fleet's secret `secret`.
pub(super) fn job_key(secret: &str, job: &str) -> String {
    hmac_hex(secret, &format!("hearth job key v1\n{job}"))
}

/// A training stage's job secret under `key` for the stage's `nonce` (64 hex digits).
pub(super) fn training_key(key: &str, nonce: &str) -> String {
    hmac_hex(key, &format!("hearth training secret v1\n{nonce}"))
}

/// Equality whose time does not depend on where the bytes differ, for comparing secrets and tokens.
///
/// ```
/// use hearth_exec::ballista::equal_in_constant_time;
/// assert!(equal_in_constant_time(b"token", b"token"));
/// assert!(!equal_in_constant_time(b"token", b"tokem"));
/// ```
pub fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && std::hint::black_box(a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y))) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_its_own_hmac_of_the_secret() {
        let secret = "0123456789abcdef0123456789abcdef";
        let job = job_key(secret, "driver-1");
        assert_eq!(job.len(), 64);
        assert_ne!(job, job_key(secret, "driver-2"));
        assert_ne!(job, training_key(secret, "driver-1"), "the purposes never meet");
    }
}
