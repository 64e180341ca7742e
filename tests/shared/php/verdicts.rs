//! Closed-state failures from both languages count as one circuit's, and
//! no verdict of either side is lost where the crate alone would keep it:
//! a Rust permit granted before PHP wrote the key still counts; and what
//! the Rust side writes keeps milon/fuse's own rules working.

use fuse_breaker::State;

use super::target::{Circuit, MODES, Target, rust_rejects};
use crate::common::runtime;

on_every_store!(failures_from_both_languages_open_it_at_the_threshold);
on_every_store!(a_rust_failure_granted_before_a_php_write_counts);
on_every_store!(a_rust_failure_granted_before_php_s_first_write_counts);
on_every_store!(a_late_php_failure_keeps_a_rust_opening_open);

fn failures_from_both_languages_open_it_at_the_threshold(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let circuit = Circuit::new(3, 2);
            let fuse = target.rust(&circuit, mode);
            let mut php = target.php(&circuit);

            let permit = fuse.try_acquire().await.expect("closed");
            permit.failure().await.expect("recorded");
            assert!(php.allow(), "{what}: one failure, PHP admits");
            php.failure();
            assert_eq!(
                php.state()["failures"].as_array().map(Vec::len),
                Some(2),
                "{what}: PHP counts Rust's failure and its own"
            );
            let permit = fuse.try_acquire().await.expect("two failures, Rust admits");
            permit.failure().await.expect("recorded");

            let state = php.state();
            assert_eq!(state["state"], "open", "{what}: three failures: {state}");
            assert_eq!(fuse.state().await.expect("read"), State::Open, "{what}");
            assert!(!php.allow(), "{what}: PHP rejects");
            assert!(rust_rejects(&fuse).await, "{what}: Rust rejects");
        });
    }
}

fn a_rust_failure_granted_before_a_php_write_counts(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let circuit = Circuit::new(3, 2);
            let fuse = target.rust(&circuit, mode);
            let mut php = target.php(&circuit);

            let first = fuse.try_acquire().await.expect("closed");
            first.failure().await.expect("recorded");
            // Granted on the payload Rust wrote; PHP then writes the key
            // (its read-modify-write keeps only milon/fuse's five fields)
            // while this call still runs.
            let late = fuse.try_acquire().await.expect("closed");
            assert!(php.allow());
            php.failure();
            late.failure().await.expect("recorded");

            // Three failures reported, three counted: as two Rust
            // processes would have it.
            let state = php.state();
            assert_eq!(
                state["state"], "open",
                "{what}: a Rust failure granted before PHP's write was lost: {state}"
            );
            assert!(rust_rejects(&fuse).await, "{what}: Rust rejects");
        });
    }
}

fn a_rust_failure_granted_before_php_s_first_write_counts(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let circuit = Circuit::new(2, 2);
            let fuse = target.rust(&circuit, mode);
            let mut php = target.php(&circuit);

            // Granted while the key is absent; PHP writes it first.
            let permit = fuse.try_acquire().await.expect("closed");
            assert!(php.allow());
            php.failure();
            permit.failure().await.expect("recorded");

            let state = php.state();
            assert_eq!(
                state["state"], "open",
                "{what}: PHP's failure and Rust's make two: {state}"
            );
            assert!(rust_rejects(&fuse).await, "{what}: Rust rejects");
        });
    }
}

fn a_late_php_failure_keeps_a_rust_opening_open(target: &Target) {
    for mode in MODES {
        runtime().block_on(async {
            let what = format!("{:?} {mode:?}", target.kind);
            let circuit = Circuit::new(3, 2);
            let fuse = target.rust(&circuit, mode);
            let mut php = target.php(&circuit);
            // PHP's call is admitted while closed, and runs long.
            assert!(php.allow());
            for _ in 0..3 {
                let permit = fuse.try_acquire().await.expect("closed");
                permit.failure().await.expect("recorded");
            }
            // milon/fuse opens with the failures that opened it in
            // `failures`, and a failure recorded while open counts them:
            // with them the late failure keeps it open (its rule re-opens
            // it), without them it writes a closed circuit.
            let state = php.state();
            assert_eq!(
                state["failures"].as_array().map(Vec::len),
                Some(3),
                "{what}: the opening's failures, as milon/fuse keeps them: {state}"
            );
            php.failure();
            let state = php.state();
            assert_eq!(
                state["state"], "open",
                "{what}: PHP's late failure closed Rust's opening: {state}"
            );
            assert!(rust_rejects(&fuse).await, "{what}: Rust rejects");
        });
    }
}
