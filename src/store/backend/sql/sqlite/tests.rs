use super::*;

#[test]
fn a_cursor_is_the_key_s_bytes_in_hex() {
    assert_eq!(cursor_of(b"fuse:a\xff"), "667573653a61ff");
    assert_eq!(
        bytes_of("667573653a61ff").as_deref(),
        Some(&b"fuse:a\xff"[..])
    );
    assert_eq!(bytes_of(&cursor_of(b"")), Some(Vec::new()));
    for bad in ["6", "zz", "66\u{e9}", "+1", "-1"] {
        assert_eq!(bytes_of(bad), None, "{bad:?}");
    }
}
