//! An opening made by one language stops the other's calls: PHP opens and
//! the Rust side rejects without calling (at once in strict mode, within
//! its staleness in cached mode); the Rust side opens and PHP rejects.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fuse_breaker::store::Error;

use super::target::{Circuit, MODES, Mode, STALENESS, Target, php_opened, rust_rejects};
use super::unix_now;
use crate::common::runtime;

on_every_store!(php_opens_and_rust_rejects_without_calling);
on_every_store!(rust_opens_and_php_rejects);
on_every_store!(a_php_opening_reaches_a_cached_circuit_within_its_staleness);

fn php_opens_and_rust_rejects_without_calling(target: &Target) {
    runtime().block_on(async {
        let circuit = Circuit::new(3, 2);
        let fuse = target.rust(&circuit, Mode::Strict);
        let mut php = target.php(&circuit);
        php_opened(&mut php, &circuit, 0);

        let called = AtomicBool::new(false);
        let out = fuse
            .run_async(async {
                // Ordering: one thread; SeqCst for plainness.
                called.store(true, Ordering::SeqCst);
                Ok::<(), std::io::Error>(())
            })
            .await;
        let Err(Error::Refused(refusal)) = out else {
            panic!(
                "{:?}: PHP opened the circuit, Rust ran the call",
                target.kind
            );
        };
        let open = refusal
            .open_error()
            .unwrap_or_else(|| panic!("{:?}: refused, not as open: {refusal}", target.kind));
        assert!(!called.load(Ordering::SeqCst), "the call did not run");
        // Opened at PHP's second, open 30 s: at most 30 s to wait.
        let retry = open.retry_after();
        assert!(
            retry <= Duration::from_secs(30) && retry > Duration::from_secs(20),
            "{:?}: retry after {retry:?}",
            target.kind
        );
        assert_eq!(php.state_name(), "open", "PHP's opening stands");
    });
}

fn rust_opens_and_php_rejects(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let circuit = Circuit::new(3, 2);
            let fuse = target.rust(&circuit, mode);
            let mut php = target.php(&circuit);
            assert!(php.allow(), "closed, PHP admits");

            let before = unix_now();
            for _ in 0..3 {
                let permit = fuse.try_acquire().await.expect("closed");
                permit.failure().await.expect("recorded");
            }
            let after = unix_now();
            assert!(
                !php.allow(),
                "{:?} {mode:?}: Rust opened, PHP admitted",
                target.kind
            );
            let state = php.state();
            assert_eq!(
                state["state"], "open",
                "{:?} {mode:?}: {state}",
                target.kind
            );
            let opened_at = state["opened_at"].as_u64().expect("opened_at");
            assert!(
                (before..=after).contains(&opened_at),
                "{:?} {mode:?}: opened at {opened_at}, between {before} and {after}",
                target.kind
            );
            assert!(rust_rejects(&fuse).await, "and Rust rejects");
        });
    }
}

fn a_php_opening_reaches_a_cached_circuit_within_its_staleness(target: &Target) {
    runtime().block_on(async {
        let circuit = Circuit::new(2, 1);
        let fuse = target.rust(&circuit, Mode::Cached(STALENESS));
        let mut php = target.php(&circuit);
        // The mirror: closed and quiet.
        let permit = fuse.try_acquire().await.expect("closed");
        permit.success().await.expect("recorded");

        php_opened(&mut php, &circuit, 0);
        // PHP announces nothing: the mirror is read again once stale.
        tokio::time::sleep(STALENESS + Duration::from_millis(100)).await;
        assert!(
            rust_rejects(&fuse).await,
            "{:?}: PHP opened the circuit over {STALENESS:?} ago, the cached side admits",
            target.kind
        );
    });
}
