//! Permits that end without a verdict (SPEC.md §3, §4): panics, dropped
//! permits, dropped or never-polled futures; and the probe limit under
//! contention (§7).

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll};
use std::time::Duration;

use fuse_breaker::{Error, Fuse, Snapshot, State};
use quanta::Mock;

mod common;
use common::secs;

fn circuit(threshold: u32, probes: u32) -> (Fuse, Arc<Mock>) {
    common::circuit("cancel", common::config(threshold, probes))
}

/// Opens the circuit now and moves the clock past the cooldown, so that
/// the next call probes.
fn ready_to_probe(fuse: &Fuse, mock: &Mock) {
    fuse.force_open();
    mock.increment(fuse.config().open_duration());
}

/// Opens the circuit and takes one probe, so that it reads half-open.
fn half_open(fuse: &Fuse, mock: &Mock) {
    ready_to_probe(fuse, mock);
    fuse.try_acquire().expect("the first call probes").ignore();
    assert_eq!(fuse.state(), State::HalfOpen);
    assert_eq!(fuse.snapshot().half_open_inflight, 0);
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<not a string>")
}

fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    fut.poll(&mut cx)
}

/// Pending on its first poll, ready with its value on the next.
struct YieldOnce<T> {
    value: Option<T>,
    yielded: bool,
}

impl<T> YieldOnce<T> {
    fn new(value: T) -> Self {
        YieldOnce {
            value: Some(value),
            yielded: false,
        }
    }
}

impl<T: Unpin> Future for YieldOnce<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if self.yielded {
            Poll::Ready(self.value.take().expect("polled after completion"))
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// A future that must never be polled.
struct MustNotPoll;

impl Future for MustNotPoll {
    type Output = Result<(), io::Error>;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        panic!("the inner future was polled")
    }
}

// -------------------------------------------------------------------- panics

#[test]
fn panic_in_run_while_closed_is_an_ignore_verdict_and_propagates() {
    let (fuse, _mock) = circuit(1, 2);
    let out = catch_unwind(AssertUnwindSafe(|| {
        fuse.run(|| -> Result<(), io::Error> { panic!("boom while closed") })
    }));
    let payload = out.expect_err("the panic must propagate");
    assert_eq!(panic_message(&*payload), "boom while closed");
    // Not a failure: threshold 1 would have opened the circuit.
    assert_eq!(fuse.state(), State::Closed);
    assert!(fuse.snapshot().failures.is_empty());

    // Not a success either: an earlier failure is still there.
    let (fuse, mock) = circuit(2, 2);
    mock.increment(secs(3));
    fuse.try_acquire().unwrap().failure();
    let out = catch_unwind(AssertUnwindSafe(|| {
        fuse.run(|| -> Result<(), io::Error> { panic!("boom") })
    }));
    assert!(out.is_err());
    assert_eq!(fuse.snapshot().failures, vec![secs(3)]);
}

#[test]
fn panic_in_a_probe_releases_the_slot() {
    let (fuse, mock) = circuit(1, 1);
    ready_to_probe(&fuse, &mock);
    let out = catch_unwind(AssertUnwindSafe(|| {
        fuse.run(|| -> Result<(), io::Error> {
            assert_eq!(fuse.snapshot().half_open_inflight, 1);
            panic!("boom in a probe")
        })
    }));
    let payload = out.expect_err("the panic must propagate");
    assert_eq!(panic_message(&*payload), "boom in a probe");
    let snap = fuse.snapshot();
    assert_eq!(
        snap.state,
        State::HalfOpen,
        "a panic neither closes nor reopens"
    );
    assert_eq!(snap.half_open_inflight, 0);
    assert_eq!(snap.half_open_successes, 0);
    let probe = fuse.try_acquire().expect("the slot was released");
    assert!(probe.is_probe());
    probe.success();
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn panic_in_a_probe_does_not_count_as_a_success() {
    let (fuse, mock) = circuit(1, 2);
    ready_to_probe(&fuse, &mock);
    fuse.try_acquire().unwrap().success();
    let before = fuse.snapshot();
    assert_eq!(before.half_open_successes, 1);
    let out = catch_unwind(AssertUnwindSafe(|| {
        fuse.run(|| -> Result<(), io::Error> { panic!("boom") })
    }));
    assert!(out.is_err());
    assert_eq!(
        fuse.snapshot(),
        before,
        "one success of two, nothing in flight"
    );
}

// ------------------------------------------------------------ dropped permits

#[test]
fn permit_dropped_without_a_verdict_releases_its_probe_slot() {
    let (fuse, mock) = circuit(1, 2);
    ready_to_probe(&fuse, &mock);
    let p1 = fuse.try_acquire().unwrap();
    let p2 = fuse.try_acquire().unwrap();
    assert!(fuse.try_acquire().is_err());
    drop(p1);
    let snap = fuse.snapshot();
    assert_eq!((snap.state, snap.half_open_inflight), (State::HalfOpen, 1));
    assert_eq!(snap.half_open_successes, 0);
    let p3 = fuse
        .try_acquire()
        .expect("the dropped permit's slot is free");
    assert!(p3.is_probe());
    drop((p2, p3));
    assert_eq!(fuse.snapshot().half_open_inflight, 0);
    assert_eq!(fuse.state(), State::HalfOpen);
}

#[test]
fn closed_permit_dropped_without_a_verdict_changes_nothing() {
    let (fuse, mock) = circuit(2, 2);
    mock.increment(secs(1));
    fuse.try_acquire().unwrap().failure();
    let before = fuse.snapshot();
    for _ in 0..5 {
        drop(fuse.try_acquire().unwrap());
    }
    assert_eq!(fuse.snapshot(), before);
}

// ------------------------------------------------------------------- futures

#[test]
fn run_async_never_polled_takes_no_permit() {
    let (fuse, mock) = circuit(1, 1);
    half_open(&fuse, &mock);
    let polled = Cell::new(false);
    let call = fuse.run_async(async {
        polled.set(true);
        Ok::<_, io::Error>(())
    });
    assert_eq!(fuse.snapshot().half_open_inflight, 0, "built, not admitted");
    // The only slot is still free while the future exists.
    let probe = fuse
        .try_acquire()
        .expect("a never-polled future holds no slot");
    probe.ignore();
    drop(call);
    assert!(!polled.get());
    assert_eq!(fuse.snapshot().half_open_inflight, 0);
    assert_eq!(fuse.state(), State::HalfOpen);
}

#[test]
fn run_async_never_polled_does_not_move_an_open_circuit() {
    let (fuse, mock) = circuit(1, 1);
    ready_to_probe(&fuse, &mock);
    let before = fuse.snapshot();
    let call = fuse.run_async(MustNotPoll);
    assert_eq!(
        fuse.snapshot(),
        before,
        "still open: admission waits for a poll"
    );
    drop(call);
    assert_eq!(fuse.snapshot(), before);
    assert_eq!(fuse.state(), State::Open);
}

#[test]
fn run_async_dropped_while_pending_releases_its_slot() {
    let (fuse, mock) = circuit(1, 1);
    ready_to_probe(&fuse, &mock);
    let mut call = Box::pin(fuse.run_async(futures::future::pending::<Result<(), io::Error>>()));
    assert!(poll_once(call.as_mut()).is_pending());
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen, "admitted on its first poll");
    assert_eq!(snap.half_open_inflight, 1);
    assert_eq!(
        fuse.try_acquire().unwrap_err().retry_after(),
        Duration::ZERO
    );
    drop(call);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_open_inflight, 0);
    assert_eq!(snap.half_open_successes, 0);
    let probe = fuse
        .try_acquire()
        .expect("the dropped future's slot is free");
    assert!(probe.is_probe());
    probe.ignore();
}

#[test]
fn run_async_dropped_after_a_pending_poll_is_an_ignore_verdict() {
    let (fuse, mock) = circuit(1, 1);
    half_open(&fuse, &mock);
    let mut call = Box::pin(fuse.run_async(YieldOnce::new(Ok::<_, io::Error>(()))));
    assert!(poll_once(call.as_mut()).is_pending());
    assert_eq!(fuse.snapshot().half_open_inflight, 1);
    drop(call);
    assert_eq!(
        fuse.state(),
        State::HalfOpen,
        "not a success, not a failure"
    );
    assert_eq!(fuse.snapshot().half_open_inflight, 0);

    // While closed, a dropped call neither clears nor records a failure.
    let (fuse, mock) = circuit(2, 1);
    mock.increment(secs(2));
    fuse.try_acquire().unwrap().failure();
    let before = fuse.snapshot();
    let mut call = Box::pin(fuse.run_async(YieldOnce::new(Err::<(), _>(io::Error::from(
        io::ErrorKind::TimedOut,
    )))));
    assert!(poll_once(call.as_mut()).is_pending());
    drop(call);
    assert_eq!(fuse.snapshot(), before);
}

#[test]
fn run_async_resumed_after_a_pending_poll_records_its_verdict() {
    let (fuse, mock) = circuit(1, 1);
    half_open(&fuse, &mock);
    let mut call = Box::pin(fuse.run_async(YieldOnce::new(Ok::<_, io::Error>(7))));
    assert!(poll_once(call.as_mut()).is_pending());
    assert_eq!(fuse.snapshot().half_open_inflight, 1);
    match poll_once(call.as_mut()) {
        Poll::Ready(out) => assert_eq!(out.ok(), Some(7)),
        Poll::Pending => panic!("the second poll completes"),
    }
    assert_eq!(fuse.state(), State::Closed, "the probe succeeded");
}

#[test]
fn run_async_on_an_open_circuit_does_not_poll_the_inner_future() {
    let (fuse, mock) = circuit(1, 1);
    fuse.force_open();
    mock.increment(secs(10));
    let out = futures::executor::block_on(fuse.run_async(MustNotPoll));
    match out {
        Err(Error::Open(err)) => assert_eq!(err.retry_after(), secs(20)),
        other => panic!("expected a rejection, got {other:?}"),
    }
    // Rejected on the very first poll.
    let mut call = Box::pin(fuse.run_async(MustNotPoll));
    assert!(matches!(
        poll_once(call.as_mut()),
        Poll::Ready(Err(Error::Open(_)))
    ));

    // Half-open and full: rejected too, with retry_after 0.
    mock.increment(secs(20));
    let probe = fuse.try_acquire().expect("the cooldown is over");
    let out = futures::executor::block_on(fuse.run_async(MustNotPoll));
    match out {
        Err(Error::Open(err)) => assert_eq!(err.retry_after(), Duration::ZERO),
        other => panic!("expected a rejection, got {other:?}"),
    }
    probe.ignore();
}

// ----------------------------------------------------------------- contention

const THREADS: usize = 8;
const ITERATIONS: usize = 5_000;

fn assert_probe_bound(snap: &Snapshot, probes: u32) {
    assert!(
        snap.half_open_inflight <= probes,
        "{} probes in flight, at most {probes} allowed: {snap:?}",
        snap.half_open_inflight
    );
}

/// Decrements the count of running workers when dropped (also on a panic).
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn half_open_inflight_never_exceeds_probes_under_contention() {
    const PROBES: u32 = 3;
    let (fuse, mock) = circuit(1, PROBES);
    half_open(&fuse, &mock);
    let held = AtomicU32::new(0);
    let granted = AtomicUsize::new(0);
    let start = Barrier::new(THREADS + 1);
    let running = AtomicUsize::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (fuse, held, granted, start, running) = (&fuse, &held, &granted, &start, &running);
            s.spawn(move || {
                // Counts this worker out even if one of its assertions
                // fails, so that the watcher never spins forever.
                let _done = Finished(running);
                start.wait();
                for i in 0..ITERATIONS {
                    match fuse.try_acquire() {
                        Ok(permit) => {
                            assert!(permit.is_probe());
                            granted.fetch_add(1, Ordering::Relaxed);
                            let now_held = held.fetch_add(1, Ordering::SeqCst) + 1;
                            assert!(now_held <= PROBES, "{now_held} permits held at once");
                            assert_probe_bound(&fuse.snapshot(), PROBES);
                            held.fetch_sub(1, Ordering::SeqCst);
                            if (t + i) % 2 == 0 {
                                permit.ignore();
                            } else {
                                drop(permit);
                            }
                        }
                        Err(err) => assert_eq!(err.retry_after(), Duration::ZERO),
                    }
                }
            });
        }
        // A reader that only watches.
        s.spawn(|| {
            start.wait();
            while running.load(Ordering::SeqCst) > 0 {
                let snap = fuse.snapshot();
                assert_eq!(snap.state, State::HalfOpen);
                assert_probe_bound(&snap, PROBES);
            }
        });
    });
    assert!(granted.load(Ordering::Relaxed) > 0);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_open_inflight, 0);
    assert_eq!(snap.half_open_successes, 0);
}

#[test]
fn probe_bound_holds_while_the_circuit_cycles_under_contention() {
    const PROBES: u32 = 2;
    let (fuse, mock) = circuit(2, PROBES);
    let start = Barrier::new(THREADS);
    let probes = AtomicUsize::new(0);
    let reopened = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (fuse, mock, start, probes, reopened) = (&fuse, &mock, &start, &probes, &reopened);
            s.spawn(move || {
                start.wait();
                for i in 0..ITERATIONS {
                    if t == 0 && i % 16 == 0 {
                        mock.increment(secs(30));
                    }
                    if let Ok(permit) = fuse.try_acquire() {
                        assert_probe_bound(&fuse.snapshot(), PROBES);
                        if permit.is_probe() {
                            probes.fetch_add(1, Ordering::Relaxed);
                        }
                        match (permit.is_probe(), (t + i) % 4) {
                            (true, 0) | (false, 1) => permit.success(),
                            (true, 1) | (false, 0 | 2) => permit.failure(),
                            (_, 2) => permit.ignore(),
                            _ => drop(permit),
                        }
                    }
                    let snap = fuse.snapshot();
                    assert_probe_bound(&snap, PROBES);
                    if snap.state == State::Open {
                        reopened.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert!(
        probes.load(Ordering::Relaxed) > 0,
        "the circuit never probed"
    );
    assert!(
        reopened.load(Ordering::Relaxed) > 0,
        "the circuit never opened"
    );
    // Every permit has ended: nothing can be in flight.
    let snap = fuse.snapshot();
    assert_eq!(snap.half_open_inflight, 0, "{snap:?}");
    assert!(snap.half_open_successes < PROBES, "{snap:?}");
}

#[test]
fn concurrent_failures_reaching_the_threshold_open_the_circuit() {
    const THRESHOLD: u32 = 8;
    let (fuse, _mock) = circuit(THRESHOLD, 2);
    for round in 0..200 {
        let acquired = Barrier::new(THRESHOLD as usize);
        let returned = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..THRESHOLD {
                s.spawn(|| {
                    let permit = fuse.try_acquire();
                    // Wait whatever happened, so a failure cannot hang the others.
                    acquired.wait();
                    permit.expect("a closed circuit admits").failure();
                    if returned.fetch_add(1, Ordering::SeqCst) + 1 == THRESHOLD {
                        // Every one of the verdicts has returned.
                        assert_eq!(fuse.state(), State::Open, "round {round}");
                    }
                });
            }
        });
        assert_eq!(fuse.state(), State::Open, "round {round}");
        fuse.force_closed();
    }
}

// ------------------------------------------------ every await point, in turn

/// An inner future with several await points: pending `pauses` times, then
/// ready with `value`.
async fn with_pauses<T: Unpin>(pauses: usize, value: T) -> T {
    for _ in 0..pauses {
        YieldOnce::new(()).await;
    }
    value
}

/// A probe whose future is dropped after each possible number of polls
/// (0 = never polled, up to the last await point before it finishes)
/// releases exactly what it held: the probe slot is free again, nothing
/// else moved; and the one that runs to the end records its verdict.
#[test]
fn a_probe_future_dropped_at_every_await_point_releases_exactly_its_slot() {
    const PAUSES: usize = 4;
    for polls in 0..=PAUSES + 1 {
        let (fuse, mock) = circuit(1, 1);
        half_open(&fuse, &mock);
        let before = fuse.snapshot();
        let mut call = Box::pin(fuse.run_async(with_pauses(
            PAUSES,
            Err::<(), _>(io::Error::from(io::ErrorKind::TimedOut)),
        )));
        let mut finished = false;
        for poll in 0..polls {
            match poll_once(call.as_mut()) {
                Poll::Pending => {
                    let snap = fuse.snapshot();
                    assert_eq!(
                        snap.half_open_inflight, 1,
                        "holding the slot after poll {poll}"
                    );
                    assert!(fuse.try_acquire().is_err(), "the only slot is taken");
                }
                Poll::Ready(out) => {
                    assert!(matches!(out, Err(Error::Inner(_))));
                    finished = true;
                }
            }
        }
        drop(call);
        let snap = fuse.snapshot();
        if finished {
            assert_eq!(snap.state, State::Open, "the probe's timeout reopened it");
        } else {
            assert_eq!(snap, before, "dropped after {polls} polls");
        }
    }
}

/// The same on a closed circuit: a call dropped at any await point changes
/// nothing, not even the failure list.
#[test]
fn a_closed_call_dropped_at_every_await_point_changes_nothing() {
    const PAUSES: usize = 3;
    for polls in 0..=PAUSES {
        let (fuse, _mock) = circuit(2, 1);
        fuse.try_acquire().expect("closed").failure();
        let before = fuse.snapshot();
        let mut call = Box::pin(fuse.run_async(with_pauses(PAUSES, Ok::<_, io::Error>(7))));
        for _ in 0..polls {
            assert!(poll_once(call.as_mut()).is_pending());
        }
        drop(call);
        assert_eq!(fuse.snapshot(), before, "dropped after {polls} polls");
    }
}
