use super::*;

#[test]
fn keys_leave_out_empty_pieces() {
    assert_eq!(key("fuse", None, "billing-sdk", None), "fuse:billing-sdk");
    assert_eq!(
        key("fuse", Some("punt"), "billing", Some("charge")),
        "fuse:punt:billing:charge"
    );
    assert_eq!(key("fuse", Some(""), "billing", Some("")), "fuse:billing");
    assert_eq!(key("p", None, "n", Some("op")), "p:n:op");
    assert_eq!(key("p", Some("a b"), "n/x", None), "p:a b:n/x");
}

#[test]
fn control_characters_are_escaped_in_every_piece() {
    let names = Names::new(
        "fu\0se",
        Some("sh\x1bop"),
        "bill\x1b]0;pwned\x07",
        Some("a\nb"),
    );
    assert_eq!(
        names.key(),
        "fu\\u{0}se:sh\\u{1b}op:bill\\u{1b}]0;pwned\\u{7}:a\\u{a}b"
    );
    assert_eq!(names.name(), "bill\\u{1b}]0;pwned\\u{7}");
    assert_eq!(names.operation(), Some("a\\u{a}b"));
    assert!(!names.key().chars().any(char::is_control));
    assert!(matches!(printable("caf\u{e9}"), Cow::Borrowed(_)));
}

#[test]
fn names_find_the_name_and_operation_in_the_key() {
    let names = Names::new("fuse", Some("shop"), "api:v2", Some("get:/x"));
    assert_eq!(names.key(), "fuse:shop:api:v2:get:/x");
    assert_eq!(names.name(), "api:v2");
    assert_eq!(names.operation(), Some("get:/x"));
    let bare = Names::new("fuse", None, "", Some(""));
    assert_eq!(
        (bare.key(), bare.name(), bare.operation()),
        ("fuse", "", None)
    );
}

#[test]
fn a_label_names_its_circuit_after_the_circuit_is_gone() {
    for name in ["billing", "é".repeat(21).as_str(), "x".repeat(500).as_str()] {
        let names = Names::new("fuse", None, name, None);
        let label = names.label().clone();
        drop(names);
        assert_eq!(label.key(), format!("fuse:{name}"));
        assert_eq!(label.name(), name);
    }
    assert_eq!(std::mem::size_of::<Label>(), 16);
}

#[test]
fn a_key_is_interned_once_and_the_budget_bounds_interning() {
    let text = |key: &str, name: (usize, usize)| {
        Arc::new(Text {
            key: key.into(),
            name,
        })
    };
    let billing = text("fuse:billing", (5, 12));
    let mut interner = Interner::new(2 * billing.footprint());
    let (Label::Interned(first), Label::Interned(again)) = (
        interner.label(&billing),
        interner.label(&text("fuse:billing", (5, 12))),
    ) else {
        panic!("a key within the budget is interned");
    };
    assert!(std::ptr::eq(first, again), "one copy per key");
    assert_eq!(interner.bytes, billing.footprint());
    // The same key with another name range is another label.
    let other = interner.label(&text("fuse:billing", (0, 4)));
    assert!(matches!(other, Label::Interned(_)));
    assert_eq!(other.name(), "fuse");
    // The budget is spent: a new key is shared, not interned.
    let late = text("fuse:ledger", (5, 11));
    let shared = interner.label(&late);
    assert!(matches!(&shared, Label::Shared(text) if Arc::ptr_eq(text, &late)));
    assert_eq!((shared.key(), shared.name()), ("fuse:ledger", "ledger"));
    assert_eq!(interner.keys.len(), 2);
    assert_eq!(interner.bytes, 2 * billing.footprint());
}
