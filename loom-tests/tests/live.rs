//! Every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of a running
//! circuit's settings replaced while other threads admit and give
//! verdicts (SPEC §12): a smaller threshold racing a failure, a ring's
//! growth for a larger one racing a failure, and more probes racing an
//! admission. Through the public API, on a mock clock.
#![cfg(fuse_loom)]

use std::time::Duration;

use fuse_breaker::{Config, Fuse, State};
use loom::sync::Arc;
use loom::thread;

/// A `count` circuit of `threshold` failures in 60 s, open 30 s, with
/// `probes` probes.
fn config(threshold: u32, probes: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .failure_window(Duration::from_secs(60))
        .open_duration(Duration::from_secs(30))
        .half_open_probes(probes)
        .build()
        .expect("a valid configuration")
}

/// A circuit of `config` on a mock clock at 1 s.
fn circuit(config: Config) -> (Arc<Fuse>, std::sync::Arc<quanta::Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    mock.increment(Duration::from_secs(1));
    let fuse = Fuse::builder("loom").config(config).clock(clock).build();
    (Arc::new(fuse), mock)
}

/// Threshold 3 with one failure; a failure races the threshold's drop to
/// 2. Before it: two failures under 3, then one kept (the new threshold
/// less one). After it: the second failure makes the new threshold and
/// opens. Never two failures kept under 2, nor a lost failure.
#[test]
fn a_smaller_threshold_racing_a_failure() {
    loom::model(|| {
        let (fuse, _mock) = circuit(config(3, 1));
        fuse.try_acquire().expect("closed").failure();
        let failing = fuse.clone();
        let failure = thread::spawn(move || failing.try_acquire().expect("closed").failure());
        fuse.reconfigure(config(2, 1)).expect("in place");
        failure.join().expect("no panic");
        let shown = fuse.snapshot();
        match shown.state {
            State::Open => {}
            State::Closed => assert_eq!(shown.failures.len(), 1, "{shown:?}"),
            State::HalfOpen => panic!("{shown:?}"),
        }
        if shown.state == State::Closed {
            fuse.try_acquire().expect("closed").failure();
            assert_eq!(fuse.state(), State::Open, "the next failure makes 2");
        }
    });
}

/// Threshold 2 (a ring of 2) with one failure; a failure races a raise to
/// 3, which grows the ring. Before it: the second failure opens. After it:
/// two failures kept, both found in the grown ring, and a third opens.
#[test]
fn a_growing_ring_racing_a_failure() {
    loom::model(|| {
        let (fuse, _mock) = circuit(config(2, 1));
        fuse.try_acquire().expect("closed").failure();
        let failing = fuse.clone();
        let failure = thread::spawn(move || failing.try_acquire().expect("closed").failure());
        fuse.reconfigure(config(3, 1)).expect("in place");
        failure.join().expect("no panic");
        let shown = fuse.snapshot();
        match shown.state {
            State::Open => {}
            State::Closed => {
                assert_eq!(shown.failures.len(), 2, "{shown:?}");
                fuse.try_acquire().expect("closed").failure();
                assert_eq!(fuse.state(), State::Open, "the third opens");
            }
            State::HalfOpen => panic!("{shown:?}"),
        }
    });
}

/// Threshold 2 (a ring of 2), no failure yet; a failure that does not
/// trip races a raise to 3, whose growth flips the ring twice. However
/// they interleave, the failure is kept and found (a failure that read the
/// word before the growth never claims on the grown ring with its time in
/// the old one), and two more open the circuit.
#[test]
fn a_failure_straddling_a_whole_growth() {
    loom::model(|| {
        let (fuse, _mock) = circuit(config(2, 1));
        let failing = fuse.clone();
        let failure = thread::spawn(move || failing.try_acquire().expect("closed").failure());
        fuse.reconfigure(config(3, 1)).expect("in place");
        failure.join().expect("no panic");
        let shown = fuse.snapshot();
        assert_eq!(
            (shown.state, shown.failures.len()),
            (State::Closed, 1),
            "{shown:?}"
        );
        fuse.try_acquire().expect("closed").failure();
        assert_eq!(fuse.state(), State::Closed, "two of three");
        fuse.try_acquire().expect("closed").failure();
        assert_eq!(fuse.state(), State::Open, "three of three");
    });
}

/// Half-open with its one probe in flight; an admission races a raise to
/// two probes: it is a second probe only if it comes after the raise.
/// Either way the first probe's success, after the raise, is one of two,
/// and a second probe's success closes the circuit.
#[test]
fn more_probes_racing_an_admission() {
    loom::model(|| {
        let (fuse, mock) = circuit(config(1, 1));
        fuse.try_acquire().expect("closed").failure();
        mock.increment(Duration::from_secs(30));
        let first = fuse.try_acquire_owned().expect("the first probe");
        let admitting = fuse.clone();
        let second = thread::spawn(move || admitting.try_acquire_owned().ok());
        fuse.reconfigure(config(1, 2)).expect("in place");
        let second = second.join().expect("no panic");
        assert_eq!(fuse.state(), State::HalfOpen);
        first.success();
        assert_eq!(fuse.state(), State::HalfOpen, "one success of two");
        match second {
            Some(probe) => probe.success(),
            None => fuse.try_acquire().expect("a probe slot is free").success(),
        }
        assert_eq!(fuse.state(), State::Closed, "two successes of two");
    });
}

/// A `rate` circuit: 50 % of at least `minimum` calls in 60 s.
fn rate(minimum: u32) -> Config {
    Config::builder()
        .policy(fuse_breaker::config::Policy::Rate)
        .failure_window(Duration::from_secs(60))
        .minimum_calls(minimum)
        .failure_rate(50)
        .open_duration(Duration::from_secs(30))
        .build()
        .expect("a valid configuration")
}

/// `count` threshold 2 with one failure; a failure races a change to
/// `rate` (at least 2 calls). Before it: the second failure opens under
/// `count`. After it: the failure is the new window's one call, and the
/// circuit stays closed until a second call. Never closed with the
/// failure lost.
#[test]
fn a_new_policy_racing_a_failure() {
    loom::model(|| {
        let (fuse, _mock) = circuit(config(2, 1));
        fuse.try_acquire().expect("closed").failure();
        let failing = fuse.clone();
        let failure = thread::spawn(move || failing.try_acquire().expect("closed").failure());
        fuse.reconfigure(rate(2)).expect("in place");
        failure.join().expect("no panic");
        let shown = fuse.snapshot();
        match shown.state {
            State::Open => {}
            State::Closed => {
                assert_eq!((shown.calls, shown.failed), (1, 1), "{shown:?}");
                fuse.try_acquire().expect("closed").failure();
                assert_eq!(fuse.state(), State::Open, "2 of 2 failed");
            }
            State::HalfOpen => panic!("{shown:?}"),
        }
    });
}

/// `rate` with one failed call of at least 2; a failure races a change to
/// `count` threshold 2. Before it: 2 of 2 failed opens under `rate`.
/// After it: one failure of the new count window, and the next opens.
#[test]
fn a_count_policy_racing_a_rated_failure() {
    loom::model(|| {
        let (fuse, _mock) = circuit(rate(2));
        fuse.try_acquire().expect("closed").failure();
        let failing = fuse.clone();
        let failure = thread::spawn(move || failing.try_acquire().expect("closed").failure());
        fuse.reconfigure(config(2, 1)).expect("in place");
        failure.join().expect("no panic");
        let shown = fuse.snapshot();
        match shown.state {
            State::Open => {}
            State::Closed => {
                assert_eq!(shown.failures.len(), 1, "{shown:?}");
                fuse.try_acquire().expect("closed").failure();
                assert_eq!(fuse.state(), State::Open, "the second failure");
            }
            State::HalfOpen => panic!("{shown:?}"),
        }
    });
}
