//! Listeners are user code: whatever one does inside a transition (panic,
//! block for a while, call back into its circuit), no probe slot is lost,
//! and a panic reaches the call that made the transition after the
//! transition is in place.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak, mpsc};
use std::time::Duration;

use fuse_breaker::{Config, Error, Fuse, State, events::Reason, events::Transition};
use quanta::{Clock, Mock};

mod common;
use common::secs;

/// A circuit (threshold 1, open 30 s, `probes` probe slots) on a mock
/// clock, with `listener` registered; the listener gets a weak reference to
/// the circuit, to call back into it.
fn circuit(
    probes: u32,
    listener: impl Fn(&Weak<Fuse>, &Transition) + Send + Sync + 'static,
) -> (Arc<Fuse>, Arc<Mock>) {
    let (fuse, mock) = common::circuit("listeners", common::config(1, probes));
    let fuse = Arc::new(fuse);
    let weak = Arc::downgrade(&fuse);
    fuse.on_transition(move |t: &Transition| listener(&weak, t));
    (fuse, mock)
}

/// Opens the circuit and lets its cooldown pass: the next call probes.
fn due_for_a_probe(fuse: &Fuse, mock: &Mock) {
    fuse.force_open();
    mock.increment(secs(30));
}

fn panic_on(reason: Reason) -> impl Fn(&Weak<Fuse>, &Transition) + Send + Sync + 'static {
    move |_, t| {
        assert_ne!(t.reason, reason, "listener panics on {reason}");
    }
}

/// Issue 9, scenario 2: with one probe slot and a listener that panics on
/// `CooldownEnded`, the admission that moves the circuit to half-open
/// panics, and the probe it took is released: the next call probes.
#[test]
fn a_listener_panicking_on_cooldown_ended_does_not_leak_the_probe_slot() {
    let (fuse, mock) = circuit(1, panic_on(Reason::CooldownEnded));
    due_for_a_probe(&fuse, &mock);
    let panicked = catch_unwind(AssertUnwindSafe(|| fuse.try_acquire().map(drop)));
    assert!(panicked.is_err(), "the listener's panic reaches the caller");
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen, "the transition happened");
    assert_eq!(snap.half_open_inflight, 0, "the probe slot was released");
    let probe = fuse
        .try_acquire()
        .expect("the slot is free for the next call");
    assert!(probe.is_probe());
    probe.success();
    assert_eq!(fuse.state(), State::Closed);
}

/// The same through `run` and `run_async`: the protected call never runs,
/// the panic propagates, the slot is free.
#[test]
fn a_listener_panicking_inside_run_does_not_leak_the_probe_slot() {
    let (fuse, mock) = circuit(1, panic_on(Reason::CooldownEnded));
    due_for_a_probe(&fuse, &mock);
    let ran = AtomicUsize::new(0);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        fuse.run(|| {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(())
        })
    }));
    assert!(panicked.is_err());
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(fuse.snapshot().half_open_inflight, 0);

    let (fuse, mock) = circuit(1, panic_on(Reason::CooldownEnded));
    due_for_a_probe(&fuse, &mock);
    let call = fuse.run_async(async { Ok::<_, std::io::Error>(()) });
    let panicked = catch_unwind(AssertUnwindSafe(|| futures::executor::block_on(call)));
    assert!(panicked.is_err());
    assert_eq!(fuse.snapshot().half_open_inflight, 0);
    assert!(fuse.try_acquire().expect("free slot").is_probe());
}

/// A listener that panics on a verdict's transition: the verdict is in
/// place (the circuit opened, or closed) and nothing is held.
#[test]
fn a_listener_panicking_on_a_verdict_leaves_the_transition_in_place() {
    let (fuse, _mock) = circuit(1, panic_on(Reason::ThresholdReached));
    let permit = fuse.try_acquire().expect("closed");
    assert!(catch_unwind(AssertUnwindSafe(|| permit.failure())).is_err());
    assert_eq!(fuse.state(), State::Open);

    let (fuse, mock) = circuit(1, panic_on(Reason::ProbesPassed));
    due_for_a_probe(&fuse, &mock);
    let probe = fuse.try_acquire().expect("a probe");
    assert!(catch_unwind(AssertUnwindSafe(|| probe.success())).is_err());
    assert_eq!(fuse.state(), State::Closed);

    let (fuse, _mock) = circuit(1, panic_on(Reason::Forced));
    assert!(catch_unwind(AssertUnwindSafe(|| fuse.force_open())).is_err());
    assert_eq!(fuse.state(), State::Open);
}

/// A panicking listener of a registry releases the slot too, and the
/// listeners after it in the list miss that one transition only.
#[test]
fn a_panicking_registry_listener_does_not_leak_and_later_listeners_go_on() {
    let (clock, mock) = Clock::mock();
    let registry = fuse_breaker::Registry::builder()
        .defaults(Config::builder().half_open_probes(1).build().unwrap())
        .clock(clock)
        .build()
        .unwrap();
    registry.on_transition(|t: &Transition| {
        assert_ne!(t.reason, Reason::CooldownEnded, "first listener panics");
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    registry.on_transition(move |t: &Transition| log.lock().unwrap().push(t.reason));
    let fuse = registry.get("billing");
    due_for_a_probe(&fuse, &mock);
    assert!(catch_unwind(AssertUnwindSafe(|| fuse.try_acquire().map(drop))).is_err());
    let probe = fuse.try_acquire().expect("the slot was released");
    probe.success();
    assert_eq!(
        *seen.lock().unwrap(),
        [Reason::Forced, Reason::ProbesPassed],
        "the second listener missed only the transition the first panicked on"
    );
}

/// A listener that calls back into its circuit: a nested admission while
/// the only probe is taken is rejected with `retry_after` zero, snapshots
/// and new listeners work, and a `force_closed` from inside makes the
/// outer probe stale without losing anything.
#[test]
fn a_listener_may_call_back_into_its_circuit() {
    let nested = Arc::new(Mutex::new(Vec::new()));
    let log = nested.clone();
    let (fuse, mock) = circuit(1, move |weak, t| {
        let Some(fuse) = weak.upgrade() else { return };
        if t.reason == Reason::CooldownEnded {
            let snap = fuse.snapshot();
            let again = fuse.try_acquire().map(|permit| permit.is_probe());
            log.lock()
                .unwrap()
                .push((snap.half_open_inflight, again.map_err(|e| e.retry_after())));
            fuse.on_transition(|_: &Transition| {});
        }
    });
    due_for_a_probe(&fuse, &mock);
    let probe = fuse.try_acquire().expect("the outer call probes");
    assert_eq!(*nested.lock().unwrap(), [(1, Err(Duration::ZERO))]);
    probe.success();
    assert_eq!(fuse.state(), State::Closed);

    let (fuse, mock) = circuit(1, |weak, t| {
        if t.reason == Reason::CooldownEnded {
            weak.upgrade().expect("alive").force_closed();
        }
    });
    due_for_a_probe(&fuse, &mock);
    let probe = fuse.try_acquire().expect("the outer call probes");
    assert_eq!(
        fuse.state(),
        State::Closed,
        "closed from inside the listener"
    );
    probe.failure();
    assert_eq!(fuse.state(), State::Closed, "the outer probe is stale");
    assert!(fuse.snapshot().failures.is_empty());
}

/// A listener that blocks holds no lock: while it waits inside the
/// transition, another thread's calls on the same circuit return (the
/// probe slot is the listener's caller's, so they are rejected).
#[test]
fn a_blocking_listener_blocks_no_other_caller() {
    let (release, wait) = mpsc::channel::<()>();
    let wait = Mutex::new(wait);
    let (fuse, mock) = circuit(1, move |_, t| {
        if t.reason == Reason::CooldownEnded {
            // Wait for the other thread, but never forever.
            let _ = wait.lock().unwrap().recv_timeout(Duration::from_mins(1));
        }
    });
    due_for_a_probe(&fuse, &mock);
    std::thread::scope(|s| {
        let outer = s.spawn(|| fuse.try_acquire().expect("a probe").success());
        let other = s.spawn(|| {
            // Until the outer call is inside its listener, this call may
            // itself be the one that probes, and block there; so it runs
            // once the circuit is half-open.
            while fuse.state() != State::HalfOpen {
                std::thread::yield_now();
            }
            let rejected = fuse.try_acquire().map(drop);
            let snap = fuse.snapshot();
            release.send(()).expect("the listener waits");
            (
                rejected.map_err(|e| e.retry_after()),
                snap.half_open_inflight,
            )
        });
        assert_eq!(other.join().unwrap(), (Err(Duration::ZERO), 1));
        outer.join().unwrap();
    });
    assert_eq!(fuse.state(), State::Closed);
}

/// `run_async` and `Error` still behave as before with a listener that
/// panics on something else.
#[test]
fn a_listener_that_does_not_panic_changes_nothing() {
    let (fuse, _mock) = circuit(1, panic_on(Reason::ProbeFailed));
    let result = fuse.run(|| Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut)));
    assert!(matches!(result, Err(Error::Inner(_))));
    assert_eq!(fuse.state(), State::Open);
}
