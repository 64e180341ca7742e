use super::*;

#[test]
fn only_plain_identifiers_are_tables() {
    assert_eq!(
        Table::new("fuse_circuits").unwrap().to_string(),
        "\"fuse_circuits\""
    );
    assert!(Table::new("_t2").is_ok());
    for bad in [
        "",
        "2fuse",
        "fuse circuits",
        "fuse\"; DROP TABLE users; --",
        "fuse-circuits",
        "schéma",
        &"t".repeat(64),
    ] {
        let err = Table::new(bad).unwrap_err();
        assert!(err.contains("not a table name"), "{bad:?}: {err}");
    }
}
