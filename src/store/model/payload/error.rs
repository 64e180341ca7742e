//! [`PayloadError`]: a payload that could not be read, naming its key.

use std::fmt;

/// The payload under `key` is `bytes` long, above [`PayloadError::MAX_BYTES`].
pub(crate) fn too_large(key: &str, bytes: u64) -> PayloadError {
    PayloadError::new(
        key,
        format_args!(
            "the payload is {bytes} bytes, above the {} this crate reads",
            PayloadError::MAX_BYTES
        ),
    )
}

/// A payload that could not be read: the key, and what was wrong with it.
///
/// Besides JSON (or PHP's `serialize()`) that is not a circuit, or a
/// payload in an encoding the store does not read (see
/// [`Codec`](super::Codec)), a payload is unreadable when it is
/// larger than [`MAX_BYTES`](Self::MAX_BYTES) (the Redis and SQL stores
/// find that out on the server and never fetch it), or when one of its
/// times is in the future of the store's clock: an `opened_at`, a failure
/// or the start of a half-open epoch more than a minute after the store's
/// time, or a probe's lease ending more than
/// [`MAX_DURATION`](crate::config::MAX_DURATION) after it; or when its opening
/// cannot be one (SPEC §10): an end before the opening or more than
/// `MAX_DURATION` after it, or an `openings` count of 0 (an opening counts
/// itself) or above `u32::MAX`. The error names the key and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the payload under {key} is not a circuit: {reason}")]
pub struct PayloadError {
    key: String,
    reason: String,
}

impl PayloadError {
    /// The largest payload this crate reads, in bytes (1 MiB): several
    /// times the largest it writes (4,095 failures below the highest
    /// threshold, or 4,096 probe leases, take under 256 KiB).
    ///
    /// ```
    /// use fuse_breaker::store::PayloadError;
    /// assert_eq!(PayloadError::MAX_BYTES, 1 << 20);
    /// ```
    pub const MAX_BYTES: usize = 1 << 20;

    pub(crate) fn new(key: &str, reason: impl fmt::Display) -> Self {
        PayloadError {
            key: key.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// The key whose payload could not be read.
    ///
    /// ```
    /// # use fuse_breaker::store::PayloadError;
    /// # fn show(err: &PayloadError) {
    /// eprintln!("{} holds no circuit", err.key());
    /// # }
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }
}
