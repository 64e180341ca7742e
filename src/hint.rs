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
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    /// 1994-11-06 08:49:37 UTC, RFC 9110's example date.
    fn example() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(784_111_777)
    }

    /// The hint of `value` at `now`.
    fn at(value: &[u8], now: SystemTime) -> Hint {
        retry_after_value(value, || now)
    }

    fn secs(s: u64) -> Hint {
        Hint::After(Duration::from_secs(s))
    }

    #[test]
    fn delay_seconds_are_the_hint() {
        for (value, hint) in [
            (&b"120"[..], secs(120)),
            (b"0", secs(0)),
            (b"007", secs(7)),
            (b" 30\t", secs(30)),
            (b"99999999999999999999999999", secs(u64::MAX)),
            (b"18446744073709551615", secs(u64::MAX)),
            (b"18446744073709551616", secs(u64::MAX)),
        ] {
            assert_eq!(at(value, example()), hint, "{value:?}");
        }
    }

    #[test]
    fn each_form_of_http_date_is_read_against_now() {
        let before = example() - Duration::from_secs(90);
        for value in [
            &b"Sun, 06 Nov 1994 08:49:37 GMT"[..],
            b"Sunday, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov  6 08:49:37 1994",
            b"  Sun, 06 Nov 1994 08:49:37 GMT ",
        ] {
            assert_eq!(at(value, before), secs(90), "{value:?}");
            // The date has come, or passed: come back now.
            assert_eq!(at(value, example()), secs(0), "{value:?}");
            let later = example() + Duration::from_hours(1);
            assert_eq!(at(value, later), secs(0), "{value:?}");
        }
        // A fraction of a second before the date.
        let just = example() - Duration::from_millis(250);
        assert_eq!(
            at(b"Sun, 06 Nov 1994 08:49:37 GMT", just),
            Hint::After(Duration::from_millis(250))
        );
        // The last date the forms can spell, read at the epoch.
        assert_eq!(
            at(b"Fri, 31 Dec 9999 23:59:59 GMT", UNIX_EPOCH),
            secs(253_402_300_799)
        );
    }

    #[test]
    fn anything_else_is_malformed() {
        for value in [
            &b""[..],
            b"   ",
            b"+5",
            b"-1",
            b"1.5",
            b"1e3",
            b"120s",
            b"12 0",
            b"0x10",
            b"soon",
            b"\xff\xfe",
            "１２０".as_bytes(),
            // Dates that do not parse: a wrong weekday, a time zone, a day
            // that does not exist, before 1970, a two-digit year in the
            // fixdate form, ISO 8601.
            b"Mon, 06 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Nov 1994 08:49:37 UTC",
            b"Thu, 31 Feb 2000 00:00:00 GMT",
            b"Thu, 01 Jan 1960 00:00:00 GMT",
            b"Sun, 06 Nov 94 08:49:37 GMT",
            b"1994-11-06T08:49:37Z",
            b"Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:38 GMT",
        ] {
            assert_eq!(
                at(value, example()),
                Hint::Malformed(RETRY_AFTER),
                "{value:?}"
            );
        }
    }

    #[test]
    fn the_wall_clock_is_read_only_for_a_date() {
        let hint = retry_after_value(b"5", || unreachable!("no date, no clock"));
        assert_eq!(hint, secs(5));
        let hint = retry_after_value(b"soon", || unreachable!("no date, no clock"));
        assert_eq!(hint, Hint::Malformed(RETRY_AFTER));
    }

    #[test]
    fn pushback_is_milliseconds_and_negative_is_no_hint() {
        let ms = |ms| Hint::After(Duration::from_millis(ms));
        for (value, hint) in [
            (&b"1500"[..], ms(1500)),
            (b"0", ms(0)),
            (b" 250 ", ms(250)),
            (b"99999999999999999999999999", ms(u64::MAX)),
            (b"-1", Hint::None),
            (b"-0", Hint::None),
            (b"-99999999999999999999999999", Hint::None),
            (b"", Hint::Malformed(RETRY_PUSHBACK_MS)),
            (b"-", Hint::Malformed(RETRY_PUSHBACK_MS)),
            (b"--1", Hint::Malformed(RETRY_PUSHBACK_MS)),
            (b"+1", Hint::Malformed(RETRY_PUSHBACK_MS)),
            (b"1.5", Hint::Malformed(RETRY_PUSHBACK_MS)),
            (b"soon", Hint::Malformed(RETRY_PUSHBACK_MS)),
            (b"\x80", Hint::Malformed(RETRY_PUSHBACK_MS)),
        ] {
            assert_eq!(pushback_value(value), hint, "{value:?}");
        }
    }

    fn headers(entries: &[(&'static str, &'static [u8])]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in entries {
            headers.append(*name, http::HeaderValue::from_bytes(value).unwrap());
        }
        headers
    }

    #[test]
    fn a_header_is_read_once_and_several_values_are_malformed() {
        assert_eq!(Hint::retry_after(&headers(&[])), Hint::None);
        assert_eq!(
            Hint::retry_after(&headers(&[("retry-after", b"120")])),
            secs(120)
        );
        assert_eq!(
            Hint::retry_after(&headers(&[("Retry-After", b"120")])),
            secs(120)
        );
        assert_eq!(
            Hint::retry_after(&headers(&[
                ("retry-after", b"120"),
                ("retry-after", b"120")
            ])),
            Hint::Malformed(RETRY_AFTER)
        );
        // A date long past, against the real wall clock.
        assert_eq!(
            Hint::retry_after(&headers(&[(
                "retry-after",
                b"Sun, 06 Nov 1994 08:49:37 GMT"
            )])),
            secs(0)
        );
        assert_eq!(
            Hint::retry_after(&headers(&[("retry-after", b"\xff")])),
            Hint::Malformed(RETRY_AFTER)
        );
    }

    #[cfg(feature = "tonic")]
    #[test]
    fn pushback_metadata_is_read_once() {
        let key = RETRY_PUSHBACK_MS;
        assert_eq!(Hint::retry_pushback(&headers(&[])), Hint::None);
        assert_eq!(
            Hint::retry_pushback(&headers(&[(key, b"20")])),
            Hint::After(Duration::from_millis(20))
        );
        assert_eq!(
            Hint::retry_pushback(&headers(&[(key, b"20"), (key, b"30")])),
            Hint::Malformed(RETRY_PUSHBACK_MS)
        );
        // The other header is not read.
        assert_eq!(
            Hint::retry_pushback(&headers(&[("retry-after", b"20")])),
            Hint::None
        );
    }

    #[cfg(feature = "tower")]
    #[test]
    fn only_a_readable_hint_says_how_long() {
        assert_eq!(secs(3).after(), Some(Duration::from_secs(3)));
        assert_eq!(Hint::None.after(), None);
        assert_eq!(Hint::Malformed(RETRY_AFTER).after(), None);
    }
}
