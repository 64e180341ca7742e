//! SPEC.md §6, the timeline every engine must reproduce, with the default
//! configuration (threshold 8, window 60 s, open 30 s, 2 probes), and the
//! scenarios of milon/fuse, on a mock clock.

use std::cell::Cell;
use std::io::{self, ErrorKind};
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::{Config, Error, Fuse, OpenError, State};
use quanta::{Clock, Mock};

mod common;
use common::{NS, just_before, secs, set_time};

fn defaults(name: &str) -> (Fuse, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    (Fuse::builder(name).clock(clock).build(), mock)
}

fn timeout() -> io::Error {
    io::Error::new(ErrorKind::TimedOut, "operation timed out")
}

/// Counts the protected calls that actually run.
#[derive(Default)]
struct Dependency {
    calls: Cell<u32>,
}

impl Dependency {
    fn down(&self) -> Result<(), io::Error> {
        self.calls.set(self.calls.get() + 1);
        Err(timeout())
    }

    #[allow(clippy::unnecessary_wraps)] // the shape of every protected call
    fn up(&self) -> Result<&'static str, io::Error> {
        self.calls.set(self.calls.get() + 1);
        Ok("ok")
    }

    fn calls(&self) -> u32 {
        self.calls.get()
    }
}

fn expect_inner<T: std::fmt::Debug>(out: Result<T, Error<io::Error>>) -> io::Error {
    match out {
        Err(Error::Inner(err)) => err,
        other => panic!("expected the call's error, got {other:?}"),
    }
}

fn expect_open<T: std::fmt::Debug>(out: Result<T, Error<io::Error>>) -> OpenError {
    match out {
        Err(Error::Open(err)) => err,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn timeline_of_spec_section_6() {
    let (fuse, mock) = defaults("timeline");
    let dep = Dependency::default();
    assert_eq!(fuse.config(), &Config::default());

    // 1. Seven counted failures in a minute leave the circuit closed; the
    //    eighth opens it.
    for i in 0..7 {
        set_time(&mock, secs(i * 8)); // 0 s .. 48 s
        expect_inner(fuse.run(|| dep.down()));
        assert_eq!(fuse.state(), State::Closed, "after {} failures", i + 1);
    }
    assert_eq!(fuse.snapshot().failures.len(), 7);
    set_time(&mock, secs(59));
    expect_inner(fuse.run(|| dep.down()));
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot().opened_at, Some(secs(59)));
    assert!(fuse.snapshot().failures.is_empty());
    assert_eq!(dep.calls(), 8);

    // 2. For the next 30 s every call is rejected and the protected call
    //    never runs.
    for t in [
        secs(59),
        secs(60),
        secs(75),
        secs(88),
        just_before(secs(89)),
    ] {
        set_time(&mock, t);
        let err = expect_open(fuse.run(|| dep.up()));
        assert_eq!(Some(err.retry_after()), secs(89).checked_sub(t));
        expect_open(fuse.run(|| dep.down()));
    }
    assert_eq!(dep.calls(), 8, "no call ran while open");
    assert_eq!(fuse.state(), State::Open);

    // 3. The first call at or after 30 s moves the circuit to half-open and
    //    runs as a probe; a second probe may run at the same time; a third
    //    is rejected.
    set_time(&mock, secs(89));
    let third_rejected = Cell::new(false);
    let out = fuse.run(|| {
        assert_eq!(fuse.state(), State::HalfOpen);
        assert_eq!(fuse.snapshot().half_open_inflight, 1);
        let second = fuse.run(|| {
            assert_eq!(fuse.snapshot().half_open_inflight, 2);
            let third = fuse.run(|| dep.up());
            assert_eq!(expect_open(third).retry_after(), Duration::ZERO);
            third_rejected.set(true);
            dep.up()
        });
        assert_eq!(second.ok(), Some("ok"));
        // 4. (first half) one successful probe does not close it yet.
        assert_eq!(fuse.state(), State::HalfOpen);
        assert_eq!(fuse.snapshot().half_open_successes, 1);
        dep.up()
    });
    assert!(third_rejected.get());
    assert_eq!(out.ok(), Some("ok"));
    assert_eq!(dep.calls(), 10, "two probes ran, the third did not");

    // 4. Two successful probes close the circuit and clear the failure list.
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::Closed);
    assert!(snap.failures.is_empty());
    assert_eq!(snap.opened_at, None);

    // 5. One counted failure during a probe opens the circuit again and the
    //    30 s cooldown starts over.
    set_time(&mock, secs(100));
    for _ in 0..8 {
        expect_inner(fuse.run(|| dep.down()));
    }
    assert_eq!(fuse.snapshot().opened_at, Some(secs(100)));
    set_time(&mock, secs(130));
    let held = fuse
        .try_acquire()
        .expect("the first call after 30 s probes");
    assert!(held.is_probe());
    set_time(&mock, secs(131));
    expect_inner(fuse.run(|| dep.down()));
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot().opened_at, Some(secs(131)));
    held.success();
    assert_eq!(
        fuse.state(),
        State::Open,
        "the other probe's success is stale"
    );
    let calls = dep.calls();
    set_time(&mock, just_before(secs(161)));
    assert_eq!(expect_open(fuse.run(|| dep.up())).retry_after(), NS);
    assert_eq!(dep.calls(), calls);
    set_time(&mock, secs(161));
    assert_eq!(fuse.run(|| dep.up()).ok(), Some("ok"));
    assert_eq!(fuse.run(|| dep.up()).ok(), Some("ok"));
    assert_eq!(fuse.state(), State::Closed);

    // 6. A success while closed clears the failure list: a few blips
    //    followed by one good call leave nothing in the window.
    for t in [170, 171, 172] {
        set_time(&mock, secs(t));
        expect_inner(fuse.run(|| dep.down()));
    }
    assert_eq!(
        fuse.snapshot().failures,
        vec![secs(170), secs(171), secs(172)]
    );
    set_time(&mock, secs(173));
    assert_eq!(fuse.run(|| dep.up()).ok(), Some("ok"));
    assert!(fuse.snapshot().failures.is_empty());
    // The blips do not count any more: seven more failures stay closed.
    for _ in 0..7 {
        expect_inner(fuse.run(|| dep.down()));
    }
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn milon_trip_at_threshold() {
    let (fuse, mock) = defaults("trip");
    for i in 0..7 {
        set_time(&mock, secs(i));
        expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    }
    assert_eq!(fuse.state(), State::Closed);
    set_time(&mock, secs(7));
    expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot().opened_at, Some(secs(7)));
    assert_eq!(
        expect_open(fuse.run(|| Ok::<_, io::Error>(()))).retry_after(),
        secs(30)
    );
}

#[test]
fn milon_failures_age_out_of_the_window() {
    let (fuse, mock) = defaults("age-out");
    for i in 0..7 {
        set_time(&mock, secs(i));
        expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    }
    // At 61 s the failure at 0 s has aged out: six remain, plus this one.
    set_time(&mock, secs(61));
    expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().failures.len(), 7);
    assert_eq!(fuse.snapshot().failures[0], secs(1));
    // One more inside the window opens it.
    expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    assert_eq!(fuse.state(), State::Open);

    // Seven at once, then a long pause: the eighth alone is all that counts.
    let (fuse, mock) = defaults("age-out-2");
    for _ in 0..7 {
        expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    }
    set_time(&mock, secs(600));
    expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().failures, vec![secs(600)]);
}

#[test]
fn milon_inclusive_window_edge() {
    let (fuse, mock) = defaults("edge-in");
    set_time(&mock, secs(10));
    for _ in 0..7 {
        expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    }
    set_time(&mock, secs(70));
    expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    assert_eq!(
        fuse.state(),
        State::Open,
        "failures exactly 60 s old still count"
    );

    let (fuse, mock) = defaults("edge-out");
    set_time(&mock, secs(10));
    for _ in 0..7 {
        expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    }
    set_time(&mock, secs(70) + NS);
    expect_inner(fuse.run(|| Err::<(), _>(timeout())));
    assert_eq!(
        fuse.state(),
        State::Closed,
        "60 s + 1 ns old failures do not"
    );
    assert_eq!(fuse.snapshot().failures, vec![secs(70) + NS]);
}

#[test]
fn milon_cooldown_edge() {
    let (fuse, mock) = defaults("cooldown");
    let dep = Dependency::default();
    set_time(&mock, secs(3));
    for _ in 0..8 {
        expect_inner(fuse.run(|| dep.down()));
    }
    set_time(&mock, just_before(secs(33))); // 29.999999999 s after opening
    let err = expect_open(fuse.run(|| dep.up()));
    assert_eq!(err.retry_after(), NS);
    assert_eq!(dep.calls(), 8);
    assert_eq!(fuse.state(), State::Open);
    set_time(&mock, secs(33)); // exactly 30 s
    let probe = fuse
        .try_acquire()
        .expect("30 s after opening, a call probes");
    assert!(probe.is_probe());
    assert_eq!(fuse.state(), State::HalfOpen);
    probe.success();
}

#[test]
fn milon_probe_limit() {
    let (fuse, mock) = defaults("probe-limit");
    fuse.force_open();
    set_time(&mock, secs(30));
    let p1 = fuse.try_acquire().expect("first probe");
    let p2 = fuse.try_acquire().expect("second probe");
    assert!(p1.is_probe() && p2.is_probe());
    let err = fuse.try_acquire().expect_err("a third probe is rejected");
    assert_eq!(err.retry_after(), Duration::ZERO);
    p1.ignore();
    let p3 = fuse
        .try_acquire()
        .expect("a released slot admits another probe");
    assert!(p3.is_probe());
    assert_eq!(
        fuse.try_acquire().unwrap_err().retry_after(),
        Duration::ZERO
    );
    p2.success();
    assert_eq!(fuse.state(), State::HalfOpen, "one success of two");
    p3.success();
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn milon_force_and_reset() {
    let (fuse, mock) = defaults("force");
    let dep = Dependency::default();
    set_time(&mock, secs(5));
    fuse.force_open();
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot().opened_at, Some(secs(5)));
    assert_eq!(expect_open(fuse.run(|| dep.up())).retry_after(), secs(30));
    assert_eq!(dep.calls(), 0);

    fuse.force_closed();
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.run(|| dep.up()).ok(), Some("ok"));
    for _ in 0..3 {
        expect_inner(fuse.run(|| dep.down()));
    }
    fuse.force_closed();
    assert!(fuse.snapshot().failures.is_empty());

    for _ in 0..5 {
        expect_inner(fuse.run(|| dep.down()));
    }
    fuse.force_open();
    fuse.reset();
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::Closed);
    assert!(snap.failures.is_empty());
    assert_eq!(snap.opened_at, None);
    for _ in 0..7 {
        expect_inner(fuse.run(|| dep.down()));
    }
    assert_eq!(
        fuse.state(),
        State::Closed,
        "reset forgot the earlier failures"
    );
}

#[test]
fn milon_keys_with_app_and_operation() {
    let (clock, _mock) = Clock::mock();
    let fuse = Fuse::builder("billing")
        .app("punt")
        .operation("charge")
        .clock(clock)
        .build();
    assert_eq!(fuse.key(), "fuse:punt:billing:charge");
    fuse.force_open();
    let err = expect_open(fuse.run(|| Ok::<_, io::Error>(())));
    assert_eq!(err.key(), "fuse:punt:billing:charge");
    assert_eq!(err.name(), "billing");
    assert_eq!(
        Fuse::new("billing-sdk", Config::default()).key(),
        "fuse:billing-sdk"
    );
}

#[test]
fn milon_two_operations_of_one_dependency_trip_separately() {
    let (clock, mock) = Clock::mock();
    let charge = Fuse::builder("billing")
        .operation("charge")
        .clock(clock.clone())
        .build();
    let refund = Fuse::builder("billing")
        .operation("refund")
        .clock(clock)
        .build();
    assert_ne!(charge.key(), refund.key());
    set_time(&mock, secs(1));
    for _ in 0..8 {
        expect_inner(charge.run(|| Err::<(), _>(timeout())));
    }
    assert_eq!(charge.state(), State::Open);
    assert_eq!(refund.state(), State::Closed);
    assert!(refund.snapshot().failures.is_empty());
    assert_eq!(
        refund.run(|| Ok::<_, io::Error>("refunded")).ok(),
        Some("refunded")
    );
    expect_open(charge.run(|| Ok::<_, io::Error>(())));

    // And the other way round: refund's failures leave charge's count alone.
    charge.force_closed();
    for _ in 0..7 {
        expect_inner(refund.run(|| Err::<(), _>(timeout())));
    }
    expect_inner(charge.run(|| Err::<(), _>(timeout())));
    assert_eq!(charge.snapshot().failures.len(), 1);
    assert_eq!(refund.snapshot().failures.len(), 7);
    assert_eq!(charge.state(), State::Closed);
    assert_eq!(refund.state(), State::Closed);
}
