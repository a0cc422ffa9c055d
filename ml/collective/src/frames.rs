//! What guards a link's frames once its handshake has succeeded: an AES-256-GMAC tag over each frame, or
//! AES-256-GCM encryption of it, under keys derived from the handshake for that connection and each direction,
//! with the frame's number as the nonce. A frame that was altered, injected, replayed, dropped or reordered in
//! transit fails to open; no (key, nonce) pair is ever used twice, as every connection has keys of its own and
//! the count only grows (2⁶⁴ frames would take longer than any job runs). AWS-LC's vectorised AES and GHASH
//! keep the tag to a small part of a frame's cost (GMAC runs at about 20 GB/s on one core).

use std::io;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};

/// Bytes of the tag that ends every frame.
pub(crate) const TAG_LEN: usize = 16;

/// How a job's links protect their frames once the handshake has proved the job secret.
///
/// Both ends of every link must agree; a link between ends that do not is refused in the handshake.
///
/// ```
/// use hearth_collective::{FrameProtection, JobSecret};
/// let secret = JobSecret::generate().with_protection(FrameProtection::Integrity);
/// assert_eq!(secret.protection(), FrameProtection::Integrity);
/// assert_eq!(JobSecret::generate().protection(), FrameProtection::Encryption);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameProtection {
    /// Every frame carries a 128-bit AES-GMAC tag; the data travels as it is — an explicit choice for links
    /// on a network whose every user is trusted, faster at large sizes (see benches/results/2026-11-27-allreduce.md).
    Integrity,
    /// Every frame is encrypted and authenticated with AES-256-GCM (the default), as Spark's
    /// `spark.network.crypto.enabled`: gradients, weights and checkpoints never cross a network in clear.
    #[default]
    Encryption,
}

/// Its name in settings: `integrity` or `encryption`, as serde writes it.
impl std::fmt::Display for FrameProtection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Integrity => "integrity",
            Self::Encryption => "encryption",
        })
    }
}

impl FrameProtection {
    /// The byte the handshake carries for this protection.
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Integrity => 1,
            Self::Encryption => 2,
        }
    }

    /// What a handshake byte says, for an error message.
    pub(crate) fn describe(code: u8) -> &'static str {
        match code {
            1 => "checks the integrity of its frames",
            2 => "encrypts its frames",
            _ => "protects its frames in an unknown way",
        }
    }
}

/// The key of one direction of a link, how it is used, and the number of frames that went that way.
struct Direction {
    key: LessSafeKey,
    encrypts: bool,
    frames: u64,
}

impl Direction {
    fn new(protection: FrameProtection, key: [u8; 32]) -> io::Result<Self> {
        let key = UnboundKey::new(&AES_256_GCM, &key).map_err(|_| io::Error::other("AES-256 key setup"))?;
        Ok(Self {
            key: LessSafeKey::new(key),
            encrypts: protection == FrameProtection::Encryption,
            frames: 0,
        })
    }

    /// The next frame's nonce: its number.
    fn next_nonce(&mut self) -> Nonce {
        let mut nonce = [0u8; 12];
        nonce[4..].copy_from_slice(&self.frames.to_le_bytes());
        self.frames += 1;
        Nonce::assume_unique_for_key(nonce)
    }
}

/// The sending half of a link's keys.
pub(crate) struct Sealer(Direction);

/// The receiving half of a link's keys.
pub(crate) struct Opener(Direction);

/// Both halves of a link's keys, as one end of it holds them.
pub(crate) struct FrameKeys {
    pub seal: Sealer,
    pub open: Opener,
}

impl FrameKeys {
    /// The keys of one end: `sending` protects what it sends, `receiving` what it receives.
    pub(crate) fn new(protection: FrameProtection, sending: [u8; 32], receiving: [u8; 32]) -> io::Result<Self> {
        Ok(Self {
            seal: Sealer(Direction::new(protection, sending)?),
            open: Opener(Direction::new(protection, receiving)?),
        })
    }
}

impl Sealer {
    /// Whether sealing rewrites a frame's bytes (which must then be a copy, not the caller's data).
    pub(crate) fn encrypts(&self) -> bool {
        self.0.encrypts
    }

    /// Seals the next frame: its first `clear` bytes (e.g. a length sent ahead) are authenticated as they are,
    /// the rest is encrypted in place when the link encrypts and left as it is otherwise. Returns the tag that
    /// follows it.
    pub(crate) fn seal(&mut self, frame: &mut [u8], clear: usize) -> io::Result<[u8; TAG_LEN]> {
        let nonce = self.0.next_nonce();
        let len = frame.len();
        let sealed = if self.0.encrypts {
            let (clear, body) = frame.split_at_mut(clear);
            self.0.key.seal_in_place_separate_tag(nonce, Aad::from(clear), body)
        } else {
            self.0.key.seal_in_place_separate_tag(nonce, Aad::from(frame), &mut [])
        };
        let tag = sealed.map_err(|_| io::Error::other(format!("cannot seal a frame of {len} bytes")))?;
        let mut bytes = [0u8; TAG_LEN];
        bytes.copy_from_slice(tag.as_ref());
        Ok(bytes)
    }
}

impl Opener {
    /// Opens the next frame in place (decrypting all but its first `clear` bytes when the link encrypts); an
    /// `InvalidData` error if it is not the frame the peer sealed next.
    pub(crate) fn open(&mut self, frame: &mut [u8], clear: usize, tag: &[u8; TAG_LEN]) -> io::Result<()> {
        let nonce = self.0.next_nonce();
        let opened = if self.0.encrypts {
            let (clear, body) = frame.split_at_mut(clear);
            self.0
                .key
                .open_in_place_separate_tag(nonce, Aad::from(clear), tag, body)
                .map(|_| ())
        } else {
            self.0
                .key
                .open_in_place_separate_tag(nonce, Aad::from(&*frame), tag, &mut [])
                .map(|_| ())
        };
        opened.map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "sent frame #{} that fails its integrity check: altered, injected or out of order in transit",
                    self.0.frames
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(protection: FrameProtection) -> (Sealer, Opener) {
        let keys = FrameKeys::new(protection, [7; 32], [9; 32]).unwrap();
        let other = FrameKeys::new(protection, [9; 32], [7; 32]).unwrap();
        (keys.seal, other.open)
    }

    #[test]
    fn frames_open_in_order_and_fail_when_altered_or_replayed() {
        for protection in [FrameProtection::Integrity, FrameProtection::Encryption] {
            let (mut sealer, mut opener) = pair(protection);
            let plain = b"gradients".to_vec();
            let mut first = plain.clone();
            let tag = sealer.seal(&mut first, 3).unwrap();
            assert_eq!(first[3..] != plain[3..], sealer.encrypts(), "{protection:?}");
            assert_eq!(first[..3], plain[..3], "the clear part is sent as it is");
            let mut received = first.clone();
            opener.open(&mut received, 3, &tag).unwrap();
            assert_eq!(received, plain);

            let mut second = plain.clone();
            let tag = sealer.seal(&mut second, 3).unwrap();
            let mut flipped = second.clone();
            flipped[1] ^= 0x10;
            let error = opener.open(&mut flipped, 3, &tag).unwrap_err();
            assert!(
                error.to_string().contains("frame #2 that fails its integrity check"),
                "{error}"
            );

            let (mut sealer, mut opener) = pair(protection);
            let mut frame = plain.clone();
            let tag = sealer.seal(&mut frame, 0).unwrap();
            opener.open(&mut frame.clone(), 0, &tag).unwrap();
            assert!(opener.open(&mut frame, 0, &tag).is_err(), "a replayed frame opens");
        }
    }
}
