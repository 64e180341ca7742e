//! One key for both languages: milon/fuse joins the prefix, the app, the
//! name and the operation with `:`, leaving out the empty ones, and its
//! prefix may hold `:` itself.

use super::target::{Circuit, Mode, Target, php_opened, rust_rejects};
use crate::common::runtime;

on_every_store!(a_key_with_app_and_operation_is_one_circuit);
on_every_store!(a_prefix_holding_a_colon_is_one_circuit);

/// PHP opens `circuit`; the Rust side, on the key PHP names, rejects.
fn php_opens_rust_rejects(target: &Target, circuit: &Circuit, key: &str) {
    runtime().block_on(async {
        let what = format!("{:?} {key}", target.kind);
        let fuse = target.rust(circuit, Mode::Strict);
        let mut php = target.php(circuit);
        assert_eq!(php.key(), key, "{what}: milon/fuse's key");
        assert_eq!(fuse.key(), key, "{what}: the crate's key");
        php_opened(&mut php, circuit, 0);
        assert!(
            rust_rejects(&fuse).await,
            "{what}: PHP opened it, Rust admits"
        );
    });
}

fn a_key_with_app_and_operation_is_one_circuit(target: &Target) {
    let mut circuit = Circuit::new(1, 1);
    circuit.app = Some("shop".to_owned());
    circuit.operation = Some("charge".to_owned());
    let key = format!("fuse:shop:{}:charge", circuit.name);
    php_opens_rust_rejects(target, &circuit, &key);
}

fn a_prefix_holding_a_colon_is_one_circuit(target: &Target) {
    let mut circuit = Circuit::new(1, 1);
    "a:b".clone_into(&mut circuit.prefix);
    circuit.app = Some("shop".to_owned());
    circuit.operation = Some("charge".to_owned());
    let key = format!("a:b:shop:{}:charge", circuit.name);
    php_opens_rust_rejects(target, &circuit, &key);

    // Prefix `a:b` and prefix `a` with app `b`: one key (SPEC §2).
    let mut circuit = Circuit::new(1, 1);
    "a:b".clone_into(&mut circuit.prefix);
    let mut app = circuit.clone();
    "a".clone_into(&mut app.prefix);
    app.app = Some("b".to_owned());
    runtime().block_on(async {
        let fuse = target.rust(&app, Mode::Strict);
        let mut php = target.php(&circuit);
        assert_eq!(fuse.key(), php.key(), "{:?}", target.kind);
        php_opened(&mut php, &circuit, 0);
        assert!(rust_rejects(&fuse).await, "{:?}", target.kind);
    });
}
