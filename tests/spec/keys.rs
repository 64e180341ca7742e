//! §1: keys.

use super::*;

#[test]
fn key_is_prefix_app_name_operation() {
    let fuse = Fuse::builder("billing")
        .app("punt")
        .operation("charge")
        .build();
    assert_eq!(fuse.key(), "fuse:punt:billing:charge");
    assert_eq!(fuse.name(), "billing");
    assert_eq!(
        Fuse::new("billing-sdk", Config::default()).key(),
        "fuse:billing-sdk"
    );
    assert_eq!(
        Fuse::builder("billing").app("punt").build().key(),
        "fuse:punt:billing"
    );
    assert_eq!(
        Fuse::builder("billing").operation("charge").build().key(),
        "fuse:billing:charge"
    );
}

#[test]
fn key_leaves_out_empty_pieces() {
    let fuse = Fuse::builder("billing").app("").operation("").build();
    assert_eq!(fuse.key(), "fuse:billing");
    let fuse = Fuse::builder("billing").app("").operation("refund").build();
    assert_eq!(fuse.key(), "fuse:billing:refund");
    let fuse = Fuse::builder("billing").app("shop").operation("").build();
    assert_eq!(fuse.key(), "fuse:shop:billing");
    let fuse = Fuse::builder("").app("shop").operation("refund").build();
    assert_eq!(fuse.key(), "fuse:shop:refund");
}

#[test]
fn key_uses_the_configured_prefix() {
    let config = build(Config::builder().key_prefix("cb"));
    let fuse = Fuse::builder("billing")
        .app("punt")
        .operation("charge")
        .config(config.clone())
        .build();
    assert_eq!(fuse.key(), "cb:punt:billing:charge");
    assert_eq!(Fuse::new("billing", config).key(), "cb:billing");
}

#[test]
fn key_pieces_are_used_verbatim() {
    let fuse = Fuse::builder("Billing/API v2")
        .app("My App")
        .operation("charge.Card")
        .build();
    assert_eq!(fuse.key(), "fuse:My App:Billing/API v2:charge.Card");
    assert_eq!(fuse.name(), "Billing/API v2");
}

#[test]
fn open_error_names_the_circuit_and_its_key() {
    let fuse = Fuse::builder("billing")
        .app("punt")
        .operation("charge")
        .build();
    fuse.force_open();
    let err = rejection(&fuse);
    assert_eq!(err.name(), "billing");
    assert_eq!(err.key(), "fuse:punt:billing:charge");
    assert!(
        err.to_string().contains("fuse:punt:billing:charge"),
        "{err}"
    );
}

#[test]
fn control_characters_in_a_piece_are_escaped_so_no_key_holds_one() {
    let fuse = Fuse::builder("bill\x1b]0;pwned\x07")
        .app("sh\0op")
        .operation("a\nb")
        .build();
    assert_eq!(
        fuse.key(),
        "fuse:sh\\u{0}op:bill\\u{1b}]0;pwned\\u{7}:a\\u{a}b"
    );
    assert_eq!(fuse.name(), "bill\\u{1b}]0;pwned\\u{7}");
    assert!(!fuse.key().chars().any(char::is_control));
}

/// A key prefix may hold `:`, as milon/fuse's may: prefix `a:b` with name
/// `c` and prefix `a` with app `b` and name `c` are one key, for every
/// kind of circuit and through settings.
#[test]
fn a_key_prefix_may_hold_a_colon() {
    let config = build(Config::builder().key_prefix("a:b"));
    let prefixed = Fuse::new("c", config.clone());
    let with_app = Fuse::builder("c")
        .app("b")
        .config(build(Config::builder().key_prefix("a")))
        .build();
    assert_eq!(prefixed.key(), "a:b:c");
    assert_eq!(prefixed.key(), with_app.key());
    assert_eq!(
        Fuse::builder("billing")
            .app("shop")
            .operation("charge")
            .config(config)
            .build()
            .key(),
        "a:b:shop:billing:charge"
    );
    for prefix in [":", "fuse:", "laravel:cache:fuse"] {
        let config = build(Config::builder().key_prefix(prefix));
        assert_eq!(
            Fuse::new("billing", config).key(),
            format!("{prefix}:billing")
        );
    }
    assert_eq!(fuse_breaker::key("a:b", None, "c", None), "a:b:c");
}
