use super::*;

#[test]
fn control_characters_are_escaped() {
    assert_eq!(printable("fuse:shop:billing"), "fuse:shop:billing");
    assert_eq!(printable("a\u{1b}]0;pwned\u{7}"), "a\\x1b]0;pwned\\x07");
    assert_eq!(printable("\u{1b}[2J\u{9b}\u{7f}"), "\\x1b[2J\\u{9b}\\x7f");
    assert_eq!(printable("x\\x1b\t\r\n"), "x\\\\x1b\\t\\r\\n");
    assert_eq!(printable("abc\u{202e}fed"), "abc\\u{202e}fed");
    assert_eq!(printable("é→✓"), "é→✓");
    assert_eq!(
        printable_bytes(b"fuse:\xff\xfe\x1b"),
        "fuse:\\xff\\xfe\\x1b"
    );
    assert_eq!(printable_bytes("é".as_bytes()), "é");
}

#[test]
fn json_keeps_its_meaning() {
    let json = serde_json::json!({"key": "a\u{9b}2J\u{202e}\u{1b}"}).to_string();
    let safe = json_safe(&json);
    assert!(!safe.chars().any(hidden), "{safe}");
    let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
    assert_eq!(back["key"], "a\u{9b}2J\u{202e}\u{1b}");
}
