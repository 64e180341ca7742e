//! Half-open with probes from both languages at once: it closes or opens
//! again exactly as one circuit would, and the probe limit holds for the
//! two together. Each starts from an opening PHP made 31 s ago (open 30 s,
//! 2 probes): the cooldown is over for both.

use fuse_breaker::State;
use fuse_breaker::store::{SharedFuse, SharedPermit};

use super::Php;
use super::target::{Circuit, MODES, Mode, Target, php_opened, rust_rejects};
use super::unix_now;
use crate::common::runtime;

on_every_store!(rust_and_php_probes_succeeding_close_it);
on_every_store!(php_and_rust_probes_succeeding_close_it);
on_every_store!(a_rust_probe_failing_after_a_php_success_opens_it_again);
on_every_store!(a_php_probe_failing_after_a_rust_success_opens_it_again);
on_every_store!(the_probe_limit_holds_for_both_languages);
on_every_store!(a_released_php_probe_frees_its_slot);

/// A circuit with 2 probes whose cooldown PHP's opening has ended, the
/// Rust side in `mode`, and PHP.
fn half_open(target: &Target, mode: Mode) -> (SharedFuse, Php) {
    let circuit = Circuit::new(3, 2);
    let fuse = target.rust(&circuit, mode);
    let mut php = target.php(&circuit);
    php_opened(&mut php, &circuit, circuit.open + 1);
    (fuse, php)
}

/// The Rust side's probe.
async fn rust_probe(fuse: &SharedFuse) -> SharedPermit<'_> {
    let permit = fuse.try_acquire().await.expect("a probe for Rust");
    assert!(permit.is_probe(), "half-open, Rust's permit is a probe");
    permit
}

/// The state both sides see, which must be one.
async fn both_see(fuse: &SharedFuse, php: &mut Php, what: &str) -> State {
    let rust = fuse.state().await.expect("Rust reads the circuit");
    let state = php.state();
    assert_eq!(
        state["state"],
        rust.as_str(),
        "{what}: PHP sees {state}, Rust {rust:?}"
    );
    rust
}

fn rust_and_php_probes_succeeding_close_it(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let (fuse, mut php) = half_open(target, mode);
            let permit = rust_probe(&fuse).await;
            assert!(php.allow(), "{what}: PHP's probe (1 of 2 taken)");
            php.success();
            permit.success().await.expect("recorded");
            // Two probes, two successes: one circuit closes.
            assert_eq!(
                both_see(&fuse, &mut php, &what).await,
                State::Closed,
                "{what}"
            );
        });
    }
}

fn php_and_rust_probes_succeeding_close_it(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let (fuse, mut php) = half_open(target, mode);
            assert!(php.allow(), "{what}: PHP's probe");
            let permit = rust_probe(&fuse).await;
            permit.success().await.expect("recorded");
            php.success();
            assert_eq!(
                both_see(&fuse, &mut php, &what).await,
                State::Closed,
                "{what}"
            );
        });
    }
}

fn a_rust_probe_failing_after_a_php_success_opens_it_again(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let (fuse, mut php) = half_open(target, mode);
            let permit = rust_probe(&fuse).await;
            assert!(php.allow(), "{what}: PHP's probe");
            php.success();
            let before = unix_now();
            permit.failure().await.expect("recorded");
            // A failed probe opens the circuit again, whoever succeeded.
            assert_eq!(
                both_see(&fuse, &mut php, &what).await,
                State::Open,
                "{what}"
            );
            let opened_at = php.state()["opened_at"].as_u64().expect("opened_at");
            assert!(opened_at >= before, "{what}: opened again at {opened_at}");
            assert!(!php.allow(), "{what}: PHP rejects");
            assert!(rust_rejects(&fuse).await, "{what}: Rust rejects");
        });
    }
}

fn a_php_probe_failing_after_a_rust_success_opens_it_again(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let (fuse, mut php) = half_open(target, mode);
            assert!(php.allow(), "{what}: PHP's probe");
            let permit = rust_probe(&fuse).await;
            permit.success().await.expect("recorded");
            php.failure();
            assert_eq!(
                both_see(&fuse, &mut php, &what).await,
                State::Open,
                "{what}"
            );
            assert!(rust_rejects(&fuse).await, "{what}: Rust rejects");
        });
    }
}

fn the_probe_limit_holds_for_both_languages(target: &Target) {
    runtime().block_on(async {
        let what = format!("{:?}", target.kind);
        // Rust first, then PHP: the two slots are taken.
        let (fuse, mut php) = half_open(target, Mode::Strict);
        let _rust = rust_probe(&fuse).await;
        assert!(php.allow(), "{what}: PHP's probe (1 of 2 taken)");
        assert!(!php.allow(), "{what}: a third probe for PHP");
        assert!(rust_rejects(&fuse).await, "{what}: a third probe for Rust");

        // PHP first, then Rust.
        let (fuse, mut php) = half_open(target, Mode::Strict);
        assert!(php.allow(), "{what}: PHP's probe");
        let _rust = rust_probe(&fuse).await;
        assert!(rust_rejects(&fuse).await, "{what}: a third probe for Rust");
        assert!(!php.allow(), "{what}: a third probe for PHP");
    });
}

fn a_released_php_probe_frees_its_slot(target: &Target) {
    runtime().block_on(async {
        let what = format!("{:?}", target.kind);
        let (fuse, mut php) = half_open(target, Mode::Strict);
        let first = rust_probe(&fuse).await;
        assert!(php.allow(), "{what}: PHP's probe");
        // PHP's call ends in an error milon/fuse ignores: its slot is free.
        php.release();
        let second = rust_probe(&fuse).await;
        first.success().await.expect("recorded");
        second.success().await.expect("recorded");
        assert_eq!(
            both_see(&fuse, &mut php, &what).await,
            State::Closed,
            "{what}"
        );
    });
}
