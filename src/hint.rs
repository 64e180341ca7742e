//! The servers' hints of when to come back (SPEC §10), as the tower layer
//! and the reqwest middleware read them from the headers of a call that
//! failed with a counted failure, and how a permit is ended with one.
//!
//! - HTTP `Retry-After` (RFC 9110 §10.2.3): delay-seconds (decimal digits)
//!   or an HTTP date in any of the three forms a recipient must read
//!   (IMF-fixdate, and the obsolete RFC 850 and asctime forms). A date is
//!   read against the wall clock: the hint is the time from now to that
//!   date, zero once it has passed.
//! - gRPC `grpc-retry-pushback-ms`: milliseconds (decimal digits). gRPC's
//!   retry design reads a negative value as "do not retry this call": that
//!   says nothing of when the server will be back, so it is no hint (and
//!   not an error).
//!
//! Huge numbers saturate; the opening is capped at `max_open_duration`
//! anyway. Optional whitespace around a value is allowed. Anything else (a
//! sign, a fraction, a unit, an empty value, bytes that are not ASCII,
//! several values of one header, a date that does not parse) is a
//! malformed hint: ignored, and [reported](malformed) against the circuit.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderName};

use crate::permit::OwnedPermit;
use crate::verdict::Verdict;

/// The header of an HTTP `Retry-After`.
pub(crate) const RETRY_AFTER: &str = "retry-after";

/// The metadata key of gRPC's retry pushback, in milliseconds.
pub(crate) const RETRY_PUSHBACK_MS: &str = "grpc-retry-pushback-ms";

/// The name [`RETRY_PUSHBACK_MS`] is looked up by (made once: a name given
/// as a string is parsed at each lookup).
#[cfg(feature = "tonic")]
const PUSHBACK: HeaderName = HeaderName::from_static(RETRY_PUSHBACK_MS);

/// What a response's headers said about when to come back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) enum Hint {
    /// Nothing: no such header (or gRPC's "do not retry").
    #[default]
    None,
    /// Come back after this long.
    After(Duration),
    /// The header named could not be read: ignored, and reported.
    Malformed(&'static str),
}

impl Hint {
    /// The hint of the `Retry-After` of `headers`, a date read against the
    /// wall clock now.
    pub(crate) fn retry_after(headers: &HeaderMap) -> Hint {
        match single(headers, &http::header::RETRY_AFTER) {
            Ok(None) => Hint::None,
            Ok(Some(value)) => retry_after_value(value, SystemTime::now),
            Err(()) => Hint::Malformed(RETRY_AFTER),
        }
    }

    /// The hint of the `grpc-retry-pushback-ms` of `metadata`.
    #[cfg(feature = "tonic")]
    pub(crate) fn retry_pushback(metadata: &HeaderMap) -> Hint {
        match single(metadata, &PUSHBACK) {
            Ok(None) => Hint::None,
            Ok(Some(value)) => pushback_value(value),
            Err(()) => Hint::Malformed(RETRY_PUSHBACK_MS),
        }
    }

    /// How long to stay away, when the server said so readably.
    #[cfg(feature = "tower")]
    #[inline]
    pub(crate) const fn after(self) -> Option<Duration> {
        match self {
            Hint::After(after) => Some(after),
            Hint::None | Hint::Malformed(_) => None,
        }
    }
}

/// The one value of the header `name` in `headers`: `Ok(None)` without
/// one, `Err` with several.
fn single<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a [u8]>, ()> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(value), None) => Ok(Some(value.as_bytes())),
        (Some(_), Some(_)) => Err(()),
    }
}

/// The number that `bytes`, one or more decimal digits and nothing else,
/// spell, saturating at `u64::MAX`.
fn decimal(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(bytes.iter().fold(0u64, |n, &digit| {
        n.saturating_mul(10).saturating_add(u64::from(digit - b'0'))
    }))
}

/// The hint of one `Retry-After` value; `now` (the wall clock) is read
/// only for a date.
fn retry_after_value(value: &[u8], now: impl FnOnce() -> SystemTime) -> Hint {
    let value = value.trim_ascii();
    if let Some(seconds) = decimal(value) {
        return Hint::After(Duration::from_secs(seconds));
    }
    let date = std::str::from_utf8(value)
        .ok()
        .and_then(|text| httpdate::parse_http_date(text).ok());
    match date {
        Some(date) => Hint::After(date.duration_since(now()).unwrap_or(Duration::ZERO)),
        None => Hint::Malformed(RETRY_AFTER),
    }
}

/// The hint of one `grpc-retry-pushback-ms` value.
#[cfg_attr(not(feature = "tonic"), allow(dead_code))]
fn pushback_value(value: &[u8]) -> Hint {
    let value = value.trim_ascii();
    match value.split_first() {
        // "Do not retry": no hint of when to come back.
        Some((b'-', digits)) if decimal(digits).is_some() => Hint::None,
        _ => match decimal(value) {
            Some(millis) => Hint::After(Duration::from_millis(millis)),
            None => Hint::Malformed(RETRY_PUSHBACK_MS),
        },
    }
}

/// Ends `permit` with `verdict` and the call's `hint`: a counted failure
/// with a hint goes to [`OwnedPermit::failure_retry_after`], which honours
/// it if this verdict opens the circuit; a malformed hint is reported
/// against the permit's circuit and otherwise ignored.
#[inline]
pub(crate) fn conclude(permit: OwnedPermit, verdict: Verdict, hint: Hint) {
    match (verdict, hint) {
        (Verdict::Failure, Hint::After(after)) => permit.failure_retry_after(after),
        (_, Hint::Malformed(header)) => {
            permit.with_key(|key| malformed(key, header));
            permit.conclude(verdict);
        }
        _ => permit.conclude(verdict),
    }
}

/// Reports a hint of the circuit `key` that could not be read from
/// `header`: the `fuse_hints_malformed_total` counter (feature `metrics`)
/// and a DEBUG event (feature `tracing`).
#[cold]
#[inline(never)]
pub(crate) fn malformed(key: &str, header: &'static str) {
    #[cfg(feature = "metrics")]
    crate::telemetry::hint_malformed(key, header);
    #[cfg(feature = "tracing")]
    crate::trace::hint_malformed(key, header);
    #[cfg(not(any(feature = "metrics", feature = "tracing")))]
    let _ = (key, header);
}

#[cfg(test)]
mod tests;
