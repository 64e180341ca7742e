//! A Redis URL's parameters of the store's own, read strictly.

use super::*;

fn options(url: &str) -> (String, StoreOptions) {
    split(url).unwrap_or_else(|err| panic!("{url}: {err}"))
}

#[test]
fn the_store_s_parameters_are_taken_out_of_the_url() {
    let (rest, given) = options(
        "redis://127.0.0.1:6379/1?payload=laravel&laravel_redis_prefix=shop_database_\
         &laravel_cache_prefix=shop%3Acache_&payload_read=auto",
    );
    assert_eq!(rest, "redis://127.0.0.1:6379/1");
    assert_eq!(given.payload, Some(PayloadKind::Laravel));
    assert_eq!(given.payload_read, Some(PayloadRead::Auto));
    assert_eq!(
        given.laravel_redis_prefix.as_deref(),
        Some("shop_database_")
    );
    assert_eq!(given.laravel_cache_prefix.as_deref(), Some("shop:cache_"));

    let (rest, given) = options("redis://127.0.0.1:6379/1");
    assert_eq!(
        (rest.as_str(), given),
        ("redis://127.0.0.1:6379/1", StoreOptions::default())
    );
    // Empty prefixes are Laravel's too.
    let (_, given) =
        options("redis://h:1/1?payload=laravel&laravel_redis_prefix=&laravel_cache_prefix");
    assert_eq!(given.laravel_redis_prefix.as_deref(), Some(""));
    assert_eq!(given.laravel_cache_prefix.as_deref(), Some(""));
}

#[test]
fn the_redis_crate_s_parameters_are_left_for_it() {
    assert_eq!(
        options("redis://h:1/2?protocol=resp3&payload=php").0,
        "redis://h:1/2?protocol=resp3"
    );
    assert_eq!(
        options("redis+unix:///run/r.sock?db=1&payload=laravel&pass=hunter2").0,
        "redis+unix:///run/r.sock?db=1&pass=hunter2"
    );
    assert_eq!(
        options("rediss://h:1/1?payload=json#insecure").0,
        "rediss://h:1/1#insecure"
    );
}

#[test]
fn a_cluster_and_sentinel_take_the_store_s_parameters_alone() {
    let (rest, given) = options("redis+cluster://h:1,h:2?payload=laravel");
    assert_eq!(rest, "redis+cluster://h:1,h:2");
    assert_eq!(given.payload, Some(PayloadKind::Laravel));
    let (rest, _) = options("redis+sentinel://app:p?w@s1:26379/fuse/1?payload=laravel");
    assert_eq!(rest, "redis+sentinel://app:p?w@s1:26379/fuse/1");
    for url in [
        "redis+cluster://h:1?protocol=resp3",
        "redis+sentinel://s:1/fuse?db=2",
    ] {
        let err = split(url).unwrap_err();
        assert!(err.contains("is not one of the store's"), "{url}: {err}");
        assert!(!err.contains("redis crate"), "{url}: {err}");
    }
}

#[test]
fn a_wrong_parameter_is_named_and_no_secret_is_quoted() {
    for (url, says) in [
        (
            "redis://h:1/1?payload=xml",
            "payload=\"xml\" is none of the payloads",
        ),
        (
            "redis://h:1/1?payload_read=any",
            "payload_read=\"any\" is none of",
        ),
        (
            "redis://h:1/1?payload=php&payload=json",
            "payload is given twice",
        ),
        (
            "redis://h:1/1?laravel_cache_prefix=a&laravel_cache_prefix=b",
            "laravel_cache_prefix is given twice",
        ),
        (
            "redis://h:1/1?paylod=laravel",
            "\"paylod\" is not one of the store's",
        ),
        ("redis://h:1/1?db=2", "\"db\" is not one of the store's"),
        (
            "redis://h:1/1?laravel_cache_prefix=a@b",
            "laravel_cache_prefix is on the wrong side of an `@`",
        ),
        (
            "redis+unix:///run/r.sock?pass=p@ss&payload=laravel",
            "payload is on the wrong side of an `@`",
        ),
    ] {
        let err = split(url).unwrap_err();
        assert!(err.contains(says), "{url}: {err}");
    }
    let err = split("redis://u:hunter2@h:1/1?secret=hunter2").unwrap_err();
    assert!(err.contains("\"secret\""), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn a_password_may_hold_what_starts_a_query() {
    let (rest, given) = options("redis://:hun?ter2@h:1/1?payload=laravel");
    assert_eq!(rest, "redis://:hun?ter2@h:1/1");
    assert_eq!(given.payload, Some(PayloadKind::Laravel));
    let (rest, given) = options("redis://:hun?ter2@h:1/1");
    assert_eq!(
        (rest.as_str(), given),
        ("redis://:hun?ter2@h:1/1", StoreOptions::default())
    );
}

#[test]
fn an_ambiguous_url_names_nothing_it_holds() {
    // A `?` before the last `@`: what follows that `@` may be a password's.
    for (url, hidden) in [
        ("redis+unix:///run/r.sock?pass=@?Secretive99", "Secretive99"),
        ("redis://:pa?ss@h:1/1?Secretive99=1", "Secretive99"),
        ("redis://:pa?ss@h:1/1?payload=Secretive99", "Secretive99"),
        (
            "redis://:pa?ss@h:1/1?payload_read=Secretive99",
            "Secretive99",
        ),
    ] {
        let err = split(url).unwrap_err();
        assert!(
            err.contains("is not one of") || err.contains("is none of"),
            "{url}: {err}"
        );
        assert!(!err.contains(hidden), "{url}: {err}");
    }
    // Unambiguous, a wrong name is named.
    let err = split("redis+unix:///run/r.sock?pass=p%40ss&Wrong=1").unwrap_err();
    assert!(err.contains("\"Wrong\""), "{err}");
}

use std::fmt::Write as _;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

    /// Whatever a URL's query holds (any character, percent-encoded or
    /// not, any name), reading it never panics, and a refusal never quotes
    /// a value: a value another setting's name was given (a password put
    /// in the wrong place) is not printed.
    #[test]
    fn no_query_panics_or_has_its_values_printed(
        pairs in proptest::collection::vec(
            ("[a-z_]{0,24}", "\\PC{0,30}", proptest::bool::ANY),
            0..6,
        ),
    ) {
        let mut query = String::new();
        let mut values = Vec::new();
        for (name, value, encoded) in &pairs {
            let value = if *encoded {
                value.bytes().fold(String::new(), |mut text, b| {
                    let _ = write!(text, "%{b:02X}");
                    text
                })
            } else {
                value.replace(['&', '#'], "")
            };
            if !query.is_empty() {
                query.push('&');
            }
            let _ = write!(query, "{name}={value}");
            values.push(value);
        }
        let url = format!("redis://127.0.0.1:6379/1?{query}");
        if let Err(err) = split(&url) {
            for value in values.iter().filter(|value| value.chars().count() >= 8) {
                let known = ["laravel", "written", "json", "php", "auto", "resp3", "resp2"];
                if known.iter().any(|word| value.contains(word)) {
                    continue;
                }
                proptest::prop_assert!(!err.contains(value.as_str()), "{err} quotes {value}");
            }
        }
    }
}
