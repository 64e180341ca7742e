//! The expiry second on milon/fuse's `fuse_circuits` table: its
//! `DatabaseStore` keeps a row while `expires_at >= now` in whole seconds
//! (it expires a row with `expires_at < time()`), so at the second
//! `expires_at` itself PHP still sees the circuit, and the Rust side must
//! too.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::target::{Circuit, Mode, Target};
use crate::common::runtime;

on_every_store!(sql: at_the_expiry_second_both_languages_see_the_row);

/// Tries before giving up on doing the steps within one second of the
/// machine's clock.
const TRIES: u32 = 5;

/// Waits for the start of a second of the machine's clock; returns it.
fn early_in_a_second() -> u64 {
    loop {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970");
        if now.subsec_millis() < 200 {
            return now.as_secs();
        }
        std::thread::sleep(Duration::from_millis(u64::from(1005 - now.subsec_millis())));
    }
}

fn at_the_expiry_second_both_languages_see_the_row(target: &Target) {
    for _ in 0..TRIES {
        if expiry_second(target) {
            return;
        }
    }
    panic!(
        "{:?}: the machine never ran the steps within one second",
        target.kind
    );
}

/// The steps within one second `s`: PHP opens the circuit 2 s before it
/// (window 1 s, open 1 s: the row's time-to-live is 2 s, so it expires at
/// `s`); at `s` PHP sees it, and the Rust side must see it too (open, its
/// cooldown over: a probe), not an absent key (closed: no probe). `false`
/// when the second ended before the Rust side was asked.
fn expiry_second(target: &Target) -> bool {
    let mut circuit = Circuit::new(1, 1);
    circuit.window = 1;
    circuit.open = 1;
    runtime().block_on(async {
        let fuse = target.rust(&circuit, Mode::Strict);
        let mut php = target.php(&circuit);
        let s = early_in_a_second();
        php.pin(s - 2);
        assert!(php.allow());
        php.failure();
        php.pin(s);
        let state = php.state();
        assert_eq!(state["state"], "open", "{:?}: PHP sees its row at its expiry second", target.kind);
        let probe = fuse.try_acquire().await.map(|permit| permit.is_probe());
        if super::unix_now() != s {
            return false;
        }
        assert_eq!(
            probe.ok(),
            Some(true),
            "{:?}: at the second expires_at ({s}) milon/fuse's row is live, the crate read it as absent",
            target.kind
        );
        true
    })
}
