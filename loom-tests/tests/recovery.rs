//! Every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of small scenarios on
//! one circuit's recovery (SPEC §10): probe timeouts restarting half-open,
//! a hung probe's late verdict, and one drawn opening for every caller.
//! Through the public API, on a mock clock.
#![cfg(fuse_loom)]

use std::time::Duration;

use fuse_breaker::{Config, Fuse, State};
use loom::sync::Arc;
use loom::thread;

const OPEN: Duration = Duration::from_secs(30);
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// One failure opens for 30 s (doubling, capped at 240 s, jittered by up to
/// half), `probes` probes, which time out after 10 s.
fn config(probes: u32) -> Config {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(probes)
        .open_duration(OPEN)
        .open_backoff(2.0)
        .max_open_duration(OPEN * 8)
        .open_jitter(0.5)
        .probe_timeout(PROBE_TIMEOUT)
        .build()
        .expect("a valid configuration")
}

fn circuit(config: Config) -> (Arc<Fuse>, std::sync::Arc<quanta::Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let fuse = Fuse::builder("loom")
        .config(config)
        .clock(clock)
        .jitter_seed(3)
        .build();
    (Arc::new(fuse), mock)
}

/// A circuit half-open with every one of its `probes` probe slots held by
/// probes that never return, past the probe timeout: the next admission
/// restarts half-open. The hung probes, to end late.
fn hung(probes: u32) -> (Arc<Fuse>, Vec<fuse_breaker::OwnedPermit>) {
    let (fuse, mock) = circuit(config(probes));
    fuse.force_open();
    let open_for = fuse.snapshot().open_for.expect("open");
    mock.increment(open_for);
    let hung = (0..probes)
        .map(|_| fuse.try_acquire_owned().expect("a probe slot"))
        .collect();
    assert!(fuse.try_acquire().is_err(), "every slot is held");
    mock.increment(PROBE_TIMEOUT);
    (fuse, hung)
}

/// 1. Two callers after a probe timeout: exactly one restarts half-open.
///    With two slots, both get probes of the same new half-open epoch, so
///    their two successes close the circuit (two restarts would make the
///    first probe stale and leave it half-open); the hung probes' verdicts
///    after that change nothing.
#[test]
fn one_caller_restarts_half_open_after_a_probe_timeout() {
    loom::model(|| {
        let (fuse, hung) = hung(2);
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let fuse = fuse.clone();
                thread::spawn(move || {
                    let permit = fuse.try_acquire().expect("two slots for two callers");
                    assert!(permit.is_probe());
                    permit.success();
                })
            })
            .collect();
        for caller in callers {
            caller.join().unwrap();
        }
        assert_eq!(fuse.state(), State::Closed);
        for probe in hung {
            probe.failure();
        }
        assert_eq!(fuse.state(), State::Closed);
    });
}

/// 2. A hung probe's late failure racing the restart: either the failure
///    lands first (the circuit re-opens as the second opening in a row, and
///    the caller is rejected by it) or the restart does (the failure is
///    stale, and the caller's probe of the new epoch closes the circuit).
///    Never both, never a probe of a circuit that then reads open.
#[test]
fn a_late_verdict_of_a_hung_probe_races_the_restart() {
    loom::model(|| {
        let (fuse, mut hung) = hung(1);
        let late = hung.pop().expect("one hung probe");
        let failing = thread::spawn(move || late.failure());
        let caller = {
            let fuse = fuse.clone();
            thread::spawn(move || match fuse.try_acquire() {
                Ok(permit) => {
                    assert!(permit.is_probe());
                    permit.success();
                    true
                }
                Err(open) => {
                    assert!(open.retry_after() > Duration::ZERO);
                    false
                }
            })
        };
        failing.join().unwrap();
        let probed = caller.join().unwrap();
        let snapshot = fuse.snapshot();
        if probed {
            assert_eq!(snapshot.state, State::Closed);
        } else {
            assert_eq!(snapshot.state, State::Open);
            assert_eq!(snapshot.openings, 2);
        }
    });
}

/// 3. An opening's duration read by racing rejections: an opener fails at
///    0 s while two readers ask for admission, one at 0 s and one at 1 s (a
///    reader may find the opening before its opener stamped it, and stamp
///    it itself, with its own time and draw). Every rejection counts down
///    to one end, the one the snapshot shows: a reader that used a draw of
///    its own, or overwrote the first stamp, would count down to another.
#[test]
fn racing_rejections_see_one_drawn_opening() {
    loom::model(|| {
        let (fuse, mock) = circuit(config(1));
        let opener = {
            let fuse = fuse.clone();
            thread::spawn(move || fuse.try_acquire().expect("closed").failure())
        };
        let late = {
            let fuse = fuse.clone();
            let mock = mock.clone();
            thread::spawn(move || {
                mock.increment(Duration::from_secs(1));
                fuse.try_acquire().err().map(|open| open.retry_after())
            })
        };
        let early = {
            let fuse = fuse.clone();
            thread::spawn(move || fuse.try_acquire().err().map(|open| open.retry_after()))
        };
        opener.join().unwrap();
        let seen: Vec<Duration> = [late, early]
            .into_iter()
            .filter_map(|reader| reader.join().unwrap())
            .collect();
        let snapshot = fuse.snapshot();
        let end = snapshot.opened_at.expect("open") + snapshot.open_for.expect("open");
        for retry_after in seen {
            assert!(
                retry_after == end || retry_after + Duration::from_secs(1) == end,
                "{retry_after:?} counts down to another end than {end:?}"
            );
        }
        let open = fuse.try_acquire().expect_err("still open");
        assert_eq!(open.retry_after() + Duration::from_secs(1), end);
    });
}
