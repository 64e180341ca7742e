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
