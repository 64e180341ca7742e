//! A payload as PHP's `serialize()` of milon/fuse's array (Laravel's
//! cache): read and written as the JSON one is, milon/fuse's fields with
//! PHP's types, and a payload in an encoding the store does not read
//! refused, saying why.

use super::*;
use crate::store::Increment;
use crate::store::model::payload::php::{self, Key, Value};

/// The codec of a store that reads and writes PHP's `serialize()` alone.
const PHP: Codec = Codec::new(Encoding::Php);

/// milon/fuse's open array, as PHP's `serialize()` writes it.
const MILON: &[u8] = br#"a:5:{s:5:"state";s:4:"open";s:9:"opened_at";i:1700000000;s:8:"failures";a:2:{i:0;i:1699999990;i:1;i:1700000000;}s:19:"half_open_successes";i:0;s:18:"half_open_inflight";i:0;}"#;

/// The elements of the PHP array `bytes` hold.
fn elements(bytes: &[u8]) -> Vec<(Key, Value)> {
    match php::parse(bytes) {
        Ok(Value::Array(elements)) => elements,
        other => panic!("not an array: {other:?}"),
    }
}

/// The value under the string key `name` in `elements`.
fn field<'a>(elements: &'a [(Key, Value)], name: &str) -> &'a Value {
    let key = Key::name(name);
    &elements.iter().find(|(k, _)| *k == key).unwrap().1
}

proptest! {
    /// What the crate writes as PHP it reads back unchanged, as it reads
    /// the JSON it writes; a store that reads both reads either.
    #[test]
    fn a_php_payload_reads_back_as_the_json_one(stored in stored()) {
        let php = write(&stored, WIDTH, Encoding::Php);
        let json = write(&stored, WIDTH, Encoding::Json);
        let start: &[u8] = b"a:6:{s:5:\"state\";";
        prop_assert!(php.starts_with(start), "{:?}", String::from_utf8_lossy(&php));
        let from_php = read("fuse:billing", &php, PHP, FRESH);
        prop_assert_eq!(&from_php, &read("fuse:billing", &json, JSON, FRESH));
        prop_assert_eq!(&from_php, &Ok(stored));
        let auto = PHP.reading_any();
        prop_assert_eq!(&read("fuse:billing", &json, auto, FRESH), &from_php);
        prop_assert_eq!(&read("fuse:billing", &php, JSON.reading_any(), FRESH), &from_php);
    }

    /// milon/fuse finds its five fields in the crate's PHP payload, with
    /// the types it compares them as: integers for the times and counts,
    /// null `opened_at` while closed, a list of failures; the crate's own
    /// fields as a string under `fuse` (which milon/fuse ignores).
    #[test]
    fn milon_reads_its_five_fields_as_php_integers(stored in stored()) {
        let elements = elements(&write(&stored, WIDTH, Encoding::Php));
        let names: Vec<Key> = elements.iter().map(|(key, _)| key.clone()).collect();
        let expected = ["state", "opened_at", "failures", "half_open_successes", "half_open_inflight", "fuse"];
        prop_assert_eq!(names, expected.map(Key::name).to_vec());
        prop_assert_eq!(field(&elements, "state"), &Value::Str(stored.head.state.as_str().to_owned()));
        let opened_at = if stored.head.state == State::Closed {
            Value::Null
        } else {
            Value::Int(i64::try_from(stored.opened_at / SEC).unwrap())
        };
        prop_assert_eq!(field(&elements, "opened_at"), &opened_at);
        let failures = (0..)
            .zip(stored.failures())
            .map(|(index, at)| (Key::Int(index), Value::Int(i64::try_from(at / SEC).unwrap())))
            .collect();
        prop_assert_eq!(field(&elements, "failures"), &Value::Array(failures));
        prop_assert_eq!(field(&elements, "half_open_successes"), &Value::Int(stored.head.successes.into()));
        prop_assert_eq!(field(&elements, "half_open_inflight"), &Value::Int(stored.head.inflight.into()));
        let Value::Str(own) = field(&elements, "fuse") else {
            return Err(TestCaseError::fail("fuse is not a string"));
        };
        // The crate's JSON `fuse` object, every bit of its numbers kept.
        let json = ours(&stored);
        prop_assert_eq!(&serde_json::from_str::<serde_json::Value>(own).unwrap(), &json["fuse"]);
        prop_assert_eq!(json["fuse"]["generation"].as_u64(), Some(stored.generation));
    }

    /// An increment never applies to a PHP payload (its text starts with
    /// JSON's `{`): a store that writes PHP is not asked for one.
    #[test]
    fn no_increment_applies_to_a_php_payload(stored in stored()) {
        let config = Config::builder().policy(crate::config::Policy::Rate).build().unwrap();
        let width = width(&config);
        let prefix = rate_prefix(stored.generation, stored.epoch, width);
        let php = write(&stored, width, Encoding::Php);
        prop_assert!(!php.starts_with(&prefix));
        let increment = Increment::new(prefix, width / 1_000, config.window_buckets(), 1, std::time::Duration::from_mins(1));
        prop_assert_eq!(increment.apply(&php, std::time::Duration::from_nanos(FRESH.now)), None);
    }

    /// No bytes after `a:` make reading panic, in either codec.
    #[test]
    fn any_serialized_bytes_read_to_a_circuit_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let bytes = [&b"a:"[..], &bytes].concat();
        let _ = read("fuse:billing", &bytes, PHP, FRESH);
        let _ = read("fuse:billing", &bytes, PHP.reading_any(), FRESH);
    }
}

#[test]
fn milon_s_serialized_array_is_read_by_its_five_fields() {
    let stored = read("fuse:billing", MILON, PHP, FRESH).unwrap();
    assert_eq!(stored.head.state, State::Open);
    assert_eq!(stored.opened_at, 1_700_000_000 * SEC);
    assert_eq!((stored.generation, stored.epoch), (0, 0), "unnamed");
    let json = br#"{"state":"open","opened_at":1700000000,"failures":[1699999990,1700000000],"half_open_successes":0,"half_open_inflight":0}"#;
    assert_eq!(Ok(stored), read("fuse:billing", json, JSON, FRESH));

    let closed = br#"a:5:{s:5:"state";s:6:"closed";s:9:"opened_at";N;s:8:"failures";a:2:{i:0;i:1700000003;i:1;i:1700000009;}s:19:"half_open_successes";i:0;s:18:"half_open_inflight";i:0;}"#;
    let stored = read("fuse:billing", closed, PHP, FRESH).unwrap();
    assert_eq!(
        stored.failures(),
        vec![1_700_000_003 * SEC, 1_700_000_009 * SEC]
    );
}

#[test]
fn a_payload_in_an_encoding_the_store_does_not_read_says_so() {
    let err = read("fuse:billing", MILON, JSON, FRESH).unwrap_err();
    assert_eq!(err.key(), "fuse:billing");
    assert_eq!(
        err.to_string(),
        "the payload under fuse:billing is not a circuit: it holds PHP's serialize() of an \
         array (as Laravel's cache keeps milon/fuse's circuits), and this store reads JSON \
         alone (it writes json); to read both, use the `auto` reading (Codec::reading_any)"
    );
    let json = write(&Stored::fresh(7), WIDTH, Encoding::Json);
    let err = read("fuse:billing", &json, PHP, FRESH).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the payload under fuse:billing is not a circuit: it holds JSON (as milon/fuse's \
         DatabaseStore writes it), and this store reads PHP's serialize() alone (it writes \
         php); to read both, use the `auto` reading (Codec::reading_any)"
    );
    // Leading whitespace is still JSON.
    let spaced = [&b" \n"[..], &json].concat();
    assert!(
        read("fuse:billing", &spaced, PHP, FRESH)
            .unwrap_err()
            .to_string()
            .contains("holds JSON")
    );
    assert!(read("fuse:billing", &spaced, PHP.reading_any(), FRESH).is_ok());
}

#[test]
fn bytes_of_neither_encoding_are_read_as_the_store_writes() {
    let err = read("fuse:billing", b"not a circuit", PHP, FRESH).unwrap_err();
    assert!(
        err.to_string()
            .contains("PHP's serialize() format: an unknown type 'n'"),
        "{err}"
    );
    let err = read("fuse:billing", b"not a circuit", JSON, FRESH).unwrap_err();
    assert!(err.to_string().contains("expected ident"), "{err}");
}

#[test]
fn an_unreadable_php_payload_is_an_error_naming_the_key_and_what_was_wrong() {
    let five = |state: &str, opened_at: &str, rest: &str| {
        format!(
            r#"a:5:{{s:5:"state";{state}s:9:"opened_at";{opened_at}s:8:"failures";a:0:{{}}s:19:"half_open_successes";i:0;s:18:"half_open_inflight";i:0;{rest}}}"#
        )
    };
    let with_fuse = |fuse: &str| {
        five(
            r#"s:4:"open";"#,
            "i:1700000000;",
            &format!(r#"s:4:"fuse";{fuse}"#),
        )
        .replace("a:5:", "a:6:")
    };
    for (bytes, expected) in [
        (five(r#"s:4:"ajar";"#, "N;", ""), "unknown state \"ajar\""),
        (five(r#"s:4:"open";"#, "N;", ""), "opened_at is null"),
        (
            five(r#"s:4:"open";"#, "i:-5;", ""),
            "invalid value: integer `-5`",
        ),
        (
            five(r#"s:4:"open";"#, "d:1700000000.5;", ""),
            "invalid type: floating point",
        ),
        (
            five(r#"s:4:"open";"#, "d:INF;", ""),
            "invalid type: string \"INF\"",
        ),
        (
            five(r#"s:4:"open";"#, r#"O:8:"stdClass":0:{}"#, ""),
            "an object (O:)",
        ),
        (five("i:1;", "N;", ""), "invalid type: integer `1`"),
        (with_fuse("a:0:{}"), "fuse is not a string"),
        (with_fuse(r#"s:3:"{x}";"#), "fuse holds no JSON"),
        (
            with_fuse(r#"s:1:"1";"#),
            "invalid type: integer `1`, expected struct Own",
        ),
        (
            r#"a:1:{i:0;s:4:"open";}"#.to_owned(),
            "missing field `state`",
        ),
        ("a:0:{}".to_owned(), "missing field `state`"),
    ] {
        let err = read("fuse:billing", bytes.as_bytes(), PHP, FRESH).unwrap_err();
        assert_eq!(err.key(), "fuse:billing");
        let text = err.to_string();
        assert!(
            text.starts_with("the payload under fuse:billing is not a circuit"),
            "{text}"
        );
        assert!(text.contains(expected), "{bytes}: {text}");
    }
    // A `fuse` of null, as JSON's: the five fields alone; keys milon/fuse
    // does not know (one holding INF) are ignored, as in JSON.
    let null = with_fuse("N;");
    assert_eq!(
        read("fuse:billing", null.as_bytes(), PHP, FRESH)
            .unwrap()
            .generation,
        0
    );
    let extra =
        five(r#"s:4:"open";"#, "i:1700000000;", r#"s:5:"extra";d:INF;"#).replace("a:5:", "a:6:");
    assert!(read("fuse:billing", extra.as_bytes(), PHP, FRESH).is_ok());
}

#[test]
fn a_php_payload_above_the_bound_is_an_error_before_it_is_parsed() {
    let mut bytes = b"a:1:{i:0;s:1048576:\"".to_vec();
    bytes.resize(bytes.len() + (1 << 20), b'x');
    bytes.extend_from_slice(b"\";}");
    let err = read("fuse:billing", &bytes, PHP, FRESH).unwrap_err();
    assert!(
        err.to_string().contains(&format!("{} bytes", bytes.len())),
        "{err}"
    );
}

#[test]
fn a_payload_of_ours_cut_at_any_byte_is_an_error_naming_the_key() {
    let ours = Stored {
        window: counted(vec![1_700_000_001 * SEC, 1_700_000_002 * SEC]),
        ..Stored::fresh(u64::MAX - 1)
    };
    let bytes = write(&ours, WIDTH, Encoding::Php);
    for end in 0..bytes.len() {
        let err = read("fuse:billing", &bytes[..end], PHP, FRESH).unwrap_err();
        assert_eq!(err.key(), "fuse:billing", "{end}");
    }
    let json = write(&ours, WIDTH, Encoding::Json);
    let whole = read("fuse:billing", &bytes, PHP, FRESH);
    assert_eq!(whole, read("fuse:billing", &json, JSON, FRESH));
    assert_eq!(
        whole.unwrap().generation,
        u64::MAX - 1,
        "above i64::MAX, exact"
    );
}
