//! The parser and the writer of PHP's `serialize()` subset: every type,
//! what is refused and why, and hostile input (truncated, huge declared
//! sizes, deep nesting, trailing bytes, random and mutated bytes) an error,
//! never a panic.

use proptest::prelude::*;

use crate::store::model::payload::php::{Key, MAX_DEPTH, Value, parse, write};

/// milon/fuse's open array, as PHP's `serialize()` writes it.
const MILON: &[u8] = br#"a:5:{s:5:"state";s:4:"open";s:9:"opened_at";i:1700000000;s:8:"failures";a:2:{i:0;i:1699999990;i:1;i:1700000000;}s:19:"half_open_successes";i:0;s:18:"half_open_inflight";i:0;}"#;

fn text(text: &str) -> Value {
    Value::Str(text.to_owned())
}

/// The error `bytes` are, as text.
fn refused(bytes: &[u8]) -> String {
    parse(bytes).unwrap_err().to_string()
}

#[test]
fn every_type_of_the_subset_parses() {
    for (bytes, expected) in [
        (&b"N;"[..], Value::Null),
        (b"b:0;", Value::Bool(false)),
        (b"b:1;", Value::Bool(true)),
        (b"i:0;", Value::Int(0)),
        (b"i:-42;", Value::Int(-42)),
        (b"i:+7;", Value::Int(7)),
        (b"i:9223372036854775807;", Value::Int(i64::MAX)),
        (b"i:-9223372036854775808;", Value::Int(i64::MIN)),
        (b"d:0.5;", Value::Float(0.5)),
        (b"d:-1.5E+25;", Value::Float(-1.5e25)),
        (b"d:1.;", Value::Float(1.0)),
        (b"d:.25;", Value::Float(0.25)),
        (b"d:3;", Value::Float(3.0)),
        (b"d:2e-3;", Value::Float(0.002)),
        (b"d:INF;", Value::Float(f64::INFINITY)),
        (b"d:-INF;", Value::Float(f64::NEG_INFINITY)),
        (b"s:0:\"\";", text("")),
        // A byte length: "é" is two bytes; quotes and semicolons inside.
        (
            "s:9:\"h\u{e9}\";\"lo;\";".as_bytes(),
            text("h\u{e9}\";\"lo;"),
        ),
        (b"a:0:{}", Value::Array(Vec::new())),
        (
            b"a:2:{i:0;s:1:\"a\";s:1:\"k\";a:1:{i:-1;N;}}",
            Value::Array(vec![
                (Key::Int(0), text("a")),
                (
                    Key::name("k"),
                    Value::Array(vec![(Key::Int(-1), Value::Null)]),
                ),
            ]),
        ),
    ] {
        assert_eq!(
            parse(bytes),
            Ok(expected),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
    assert!(matches!(parse(b"d:NAN;"), Ok(Value::Float(nan)) if nan.is_nan()));
    let Ok(Value::Array(milon)) = parse(MILON) else {
        panic!("milon/fuse's array")
    };
    assert_eq!(milon.len(), 5);
    assert_eq!(
        milon[1],
        (Key::name("opened_at"), Value::Int(1_700_000_000))
    );
}

#[test]
fn objects_references_and_other_types_are_refused_by_name() {
    for (bytes, named) in [
        (&br#"O:8:"stdClass":0:{}"#[..], "an object (O:)"),
        (br#"C:3:"Foo":0:{}"#, "a custom-serialized object (C:)"),
        (b"r:1;", "a reference (r:)"),
        (b"R:1;", "a reference (R:)"),
        (br#"E:7:"Foo:Bar";"#, "an enum case (E:)"),
        (br#"S:1:"\61";"#, "an escaped string (S:)"),
        (b"x:1;", "an unknown type 'x'"),
        (b"\x00", "an unknown type (byte 0x00)"),
    ] {
        let err = refused(bytes);
        assert!(err.contains(named), "{err}");
        assert!(err.contains("refuses"), "{err}");
    }
    // Inside an array too, where it is.
    let err = refused(br#"a:1:{s:1:"o";O:8:"stdClass":0:{}}"#);
    assert!(
        err.contains("an object (O:)") && err.ends_with("at byte 13"),
        "{err}"
    );
    let err = refused(b"a:1:{i:0;R:1;}");
    assert!(err.contains("a reference (R:)"), "{err}");
}

#[test]
fn malformed_values_are_errors_saying_what_was_wrong() {
    for (bytes, expected) in [
        (&b""[..], "expected a value, found the end"),
        (b"i:99999999999999999999;", "beyond 64 bits"),
        (b"i:-9223372036854775809;", "beyond 64 bits"),
        (b"i:;", "expected a digit"),
        (b"i:1", "expected ';', found the end"),
        (b"i:1x", "expected ';', found 'x'"),
        (b"b:2;", "neither 0 nor 1"),
        (b"d:inf;", "the float \"inf\""),
        (b"d:infinity;", "the float"),
        (b"d:1e;", "the float \"1e\""),
        (b"d:.;", "the float \".\""),
        (b"d:1.5.5;", "the float"),
        (b"d:0x10;", "the float"),
        (b"N:", "expected ';'"),
        (b"s:3:\"ab\";", "expected '\"', found ';'"),
        (b"s:1:\"ab\";", "expected '\"', found 'b'"),
        (b"s:1:'a';", "expected '\"'"),
        (b"a:1:{N;N;}", "an array key that is null (N;)"),
        (b"a:1:{d:1;N;}", "an array key that is a float (d:)"),
        (b"a:1:{a:0:{}N;}", "an array key that is an array (a:)"),
        (b"a:2:{i:0;N;}", "an array count of 2 beyond"),
        (b"a:1:{i:0;N;i:1;N;}", "expected '}', found 'i'"),
        (b"a:1:{i:0;N;", "expected '}', found the end"),
        (b"a:-1:{}", "expected a digit"),
        (b"N;N;", "2 bytes after the value"),
        (b"i:1; ", "1 bytes after the value"),
        (b"a:0:{};", "1 bytes after the value"),
    ] {
        let err = refused(bytes);
        assert!(
            err.starts_with("PHP's serialize() format: ") && err.contains(expected),
            "{}: {err}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn a_string_that_is_not_utf8_is_refused() {
    let err = refused(b"s:3:\"a\xff\xfe\";");
    assert!(
        err.contains("not UTF-8") && err.ends_with("at byte 6"),
        "{err}"
    );
    let err = refused(b"a:1:{s:2:\"\xc3\x28\";N;}");
    assert!(err.contains("not UTF-8"), "{err}");
}

#[test]
fn a_payload_cut_at_any_byte_is_an_error() {
    for end in 0..MILON.len() {
        let err = parse(&MILON[..end]).unwrap_err().to_string();
        assert!(
            err.contains("the end") || err.contains("beyond") || err.contains("the float"),
            "{end}: {err}"
        );
    }
    assert!(parse(MILON).is_ok());
}

#[test]
fn a_declared_size_beyond_the_input_is_an_error_before_anything_is_sized_by_it() {
    // 2^62 elements or bytes: sized by, this would abort the test.
    for bytes in [
        &b"a:4611686018427387904:{i:0;N;}"[..],
        b"s:4611686018427387904:\"x\";",
        b"a:99999999999999999999999999:{}",
        b"s:99999999999999999999999999:\"\";",
        b"s:6:\"abc\";",
    ] {
        let err = refused(bytes);
        assert!(
            err.contains("beyond the") && err.contains("bytes left"),
            "{}: {err}",
            String::from_utf8_lossy(bytes)
        );
    }
    // Each element takes 6 bytes at least: 3 elements cannot fit in 17.
    let err = refused(b"a:3:{i:0;N;i:1;N;}");
    assert!(err.contains("an array count of 3 beyond"), "{err}");
    assert!(parse(b"a:2:{i:0;N;i:1;N;}").is_ok());
}

#[test]
fn arrays_nest_no_deeper_than_the_bound() {
    let nested = |depth: usize| {
        let mut bytes = b"a:1:{i:0;".repeat(depth - 1);
        bytes.extend_from_slice(b"a:0:{}");
        bytes.extend_from_slice(&b"}".repeat(depth - 1));
        bytes
    };
    assert!(parse(&nested(MAX_DEPTH)).is_ok());
    let err = refused(&nested(MAX_DEPTH + 1));
    assert!(
        err.contains(&format!("nested deeper than {MAX_DEPTH}")),
        "{err}"
    );
    // A bomb of a million levels: an error, the stack untouched.
    let err = refused(&nested(1_000_000));
    assert!(err.contains("nested deeper"), "{err}");
}

/// A value of the subset (floats finite: NaN is not equal to itself).
fn value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![any::<i64>().prop_map(Key::Int), ".{0,8}".prop_map(Key::Str)];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (prop::num::f64::NORMAL
            | prop::num::f64::SUBNORMAL
            | prop::num::f64::ZERO
            | prop::num::f64::INFINITE)
            .prop_map(Value::Float),
        ".{0,12}".prop_map(Value::Str),
    ];
    leaf.prop_recursive(4, 32, 6, move |inner| {
        prop::collection::vec((key.clone(), inner), 0..6).prop_map(Value::Array)
    })
}

/// Bytes that parse, with a few changes: bytes replaced, cut out or put in.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let edits = prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<u8>()), 1..6);
    (value(), edits).prop_map(|(value, edits)| {
        let mut bytes = Vec::new();
        write(&value, &mut bytes);
        for (at, edit, byte) in edits {
            let at = at.index(bytes.len() + 1);
            match edit {
                0 if at < bytes.len() => bytes[at] = byte,
                1 if at < bytes.len() => drop(bytes.remove(at)),
                _ => bytes.insert(at, byte),
            }
        }
        bytes
    })
}

proptest! {
    /// What the writer writes the parser reads back as it was.
    #[test]
    fn a_written_value_reads_back(value in value()) {
        let mut bytes = Vec::new();
        write(&value, &mut bytes);
        prop_assert_eq!(parse(&bytes), Ok(value));
    }

    /// No bytes make the parser panic.
    #[test]
    fn any_bytes_parse_to_a_value_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse(&bytes);
    }

    /// Nor do bytes close to a valid value.
    #[test]
    fn mutated_values_parse_to_a_value_or_an_error(bytes in mutated()) {
        let _ = parse(&bytes);
    }
}

#[test]
fn nan_is_written_as_php_spells_it() {
    let mut bytes = Vec::new();
    write(
        &Value::Array(vec![
            (Key::Int(0), Value::Float(f64::NAN)),
            (Key::Int(1), Value::Float(f64::NEG_INFINITY)),
            (Key::Int(2), Value::Float(1.0)),
        ]),
        &mut bytes,
    );
    assert_eq!(bytes, b"a:3:{i:0;d:NAN;i:1;d:-INF;i:2;d:1.0;}");
}
