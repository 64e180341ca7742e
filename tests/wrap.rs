//! The wrap-around scenarios through the public API alone, the long way:
//! half a billion state changes and more, with no test hook, so that the
//! engine's records really are left that far behind. Each scenario ends
//! with a call that used to spin forever; here it returns and the circuit
//! says what the rules say.
//!
//! Ignored by default (each takes some seconds in release, minutes in a
//! debug build); CI runs them in release:
//!
//! ```sh
//! cargo test --release --test wrap -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use fuse_breaker::{Config, Fuse, State};
use quanta::Mock;

mod common;

/// Half the epoch range, where a half-range comparison of epochs turns.
const HALF: u64 = 1 << 29;
/// The whole epoch range: a record this many epochs old has the stamp of
/// the current epoch.
const WHOLE: u64 = 1 << 30;

fn circuit(config: Config) -> (Fuse, std::sync::Arc<Mock>) {
    common::circuit("wrap", config)
}

fn force_closed_times(fuse: &Fuse, times: u64) {
    let started = Instant::now();
    for _ in 0..times {
        fuse.force_closed();
    }
    println!("{times} force_closed in {:?}", started.elapsed());
}

/// A failure slot written in epoch 0, then 2^29 + 1 `force_closed`: the
/// next failure is recorded.
#[test]
#[ignore = "half a billion state changes; run in release with --ignored"]
fn a_failure_after_half_the_epoch_range_is_recorded() {
    let (fuse, _mock) = circuit(Config::default());
    fuse.try_acquire().unwrap().failure();
    force_closed_times(&fuse, HALF + 1);
    fuse.try_acquire().unwrap().failure();
    assert_eq!(fuse.snapshot().failures.len(), 1);
}

/// `force_open` at 0 s, `closings` times `force_closed`, `force_open` at
/// 5 s: at 6 s admission returns, rejected for 29 s more, and the snapshot
/// says the circuit opened at 5 s.
fn reopen_after(closings: u64) {
    let (fuse, mock) = circuit(Config::default());
    fuse.force_open();
    force_closed_times(&fuse, closings);
    mock.increment(Duration::from_secs(5));
    fuse.force_open();
    mock.increment(Duration::from_secs(1));
    let open = fuse.try_acquire().expect_err("open for 30 s");
    assert_eq!(open.retry_after(), Duration::from_secs(29));
    assert_eq!(fuse.snapshot().opened_at, Some(Duration::from_secs(5)));
}

/// The opening record left 2^29 + 1 epochs behind.
#[test]
#[ignore = "half a billion state changes; run in release with --ignored"]
fn an_opening_after_half_the_epoch_range_is_its_own() {
    reopen_after(HALF + 1);
}

/// Exactly 2^30 - 1 closings, so that the second opening gets the epoch of
/// the first again: it is still an opening of its own.
#[test]
#[ignore = "a billion state changes; run in release with --ignored"]
fn an_opening_a_whole_epoch_range_later_is_its_own() {
    reopen_after(WHOLE - 1);
}

/// No manual call: threshold 2, a 1 ns cooldown, two failures, 2^28 + 1
/// cycles of "1 ns passes, the probe fails", two probes that pass, then a
/// failure: it is recorded.
#[test]
#[ignore = "half a billion state changes; run in release with --ignored"]
fn a_failure_after_a_long_outage_is_recorded() {
    let config = Config::builder()
        .failure_threshold(2)
        .open_duration(Duration::from_nanos(1))
        .build()
        .unwrap();
    let (fuse, mock) = circuit(config);
    fuse.try_acquire().unwrap().failure();
    fuse.try_acquire().unwrap().failure();
    let started = Instant::now();
    for _ in 0..=(HALF / 2) {
        mock.increment(1);
        let probe = fuse.try_acquire().expect("the cooldown passed");
        assert!(probe.is_probe());
        probe.failure();
    }
    println!("{} failed probes in {:?}", HALF / 2 + 1, started.elapsed());
    mock.increment(1);
    let first = fuse.try_acquire().expect("a probe");
    let second = fuse.try_acquire().expect("a second probe");
    first.success();
    second.success();
    assert_eq!(fuse.state(), State::Closed);
    fuse.try_acquire().unwrap().failure();
    assert_eq!(fuse.snapshot().failures.len(), 1);
}
