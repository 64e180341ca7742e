//! Every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of small scenarios on
//! one circuit's graded admission (SPEC §11): the throttle's share in use
//! recomputed while another thread admits, a share of an ended epoch, the
//! ramp-up's start racing a relapse, and the ramp's end racing the word's
//! other writers. Through the public API, on a mock clock.
//!
//! Under loom every draw is one half of the `u32` range (loom cannot
//! replay a thread's random draws): a share to shed above one half sheds
//! every call, one at or below it admits every call. The configurations
//! are chosen so: a throttle whose formula crosses one half, and a ramp
//! from 60 % (at its start, 40 % shed: every call admitted).
#![cfg(fuse_loom)]

use std::time::Duration;

use fuse_breaker::events::Transition;
use fuse_breaker::{Config, Fuse, Grading, OwnedPermit, State};
use loom::sync::Arc;
use loom::thread;

const OPEN: Duration = Duration::from_secs(30);
const RAMP: Duration = Duration::from_secs(100);
/// The throttle's window: one bucket of 100 ns (every model's time but
/// the ramp's stays in it).
const WIDTH: Duration = Duration::from_nanos(100);

/// A circuit on a mock clock at time zero.
fn circuit(config: Config) -> (Arc<Fuse>, std::sync::Arc<quanta::Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let fuse = Fuse::builder("loom").config(config).clock(clock).build();
    (Arc::new(fuse), mock)
}

/// A `count` circuit that does not trip here (8 failures), throttling
/// with K = 1 from the first request, at most 90 %, over a window of one
/// bucket (the fewest cells each refresh of the share reads).
fn throttling() -> Config {
    Config::builder()
        .failure_threshold(8)
        .failure_window(WIDTH)
        .window_buckets(1)
        .minimum_calls(1)
        .throttle_k(1.0)
        .max_throttle(90)
        .build()
        .expect("a valid configuration")
}

/// A throttling circuit whose window holds 4 requests and 1 accept (a
/// success, then 3 failures: the formula says (4 - 1) / 5 = 60 %), but
/// whose share in use is still the one its first request computed, none
/// (1 - 1 = 0): every call is admitted until a thread's first request
/// recomputes it. With one permit of that closed epoch held, whose failure
/// will be that request (5 requests, 1 accept: 4 / 6 shed).
fn throttled_but_not_yet() -> (Arc<Fuse>, OwnedPermit) {
    let (fuse, _mock) = circuit(throttling());
    fuse.try_acquire().expect("nothing shed yet").success();
    for _ in 0..3 {
        fuse.try_acquire()
            .expect("the share is not recomputed")
            .failure();
    }
    let late = fuse
        .try_acquire_owned()
        .expect("the share is not recomputed");
    let shown = fuse.snapshot();
    assert_eq!((shown.requests, shown.accepts), (4, 1), "{shown:?}");
    assert_eq!(shown.graded_by, None, "{shown:?}");
    (fuse, late)
}

/// One failure opens for 30 s, doubling (capped at 240 s), without jitter;
/// one probe; a probe that closes the circuit starts a ramp of 100 s from
/// 60 % (40 % shed at its start: under loom every call is admitted then,
/// and none is shed once the ramp is over).
fn ramping(threshold: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(1)
        .open_duration(OPEN)
        .open_backoff(2.0)
        .max_open_duration(OPEN * 8)
        .ramp_up(RAMP)
        .ramp_up_floor(60)
        .build()
        .expect("a valid configuration")
}

/// A ramping circuit half-open after its second opening in a row (n = 1,
/// 60 s), its one probe slot held by the probe returned.
fn probing() -> (Arc<Fuse>, OwnedPermit) {
    let (fuse, mock) = circuit(ramping(1));
    fuse.force_open();
    mock.increment(OPEN);
    fuse.try_acquire().expect("the first probe").failure();
    mock.increment(OPEN * 2);
    let probe = fuse.try_acquire_owned().expect("the second probe");
    assert!(probe.is_probe());
    assert_eq!(fuse.snapshot().openings, 2);
    (fuse, probe)
}

/// A ramping circuit closed by its probe at 30 s, and a closed permit
/// admitted at the ramp's start, then the clock moved to the ramp's end:
/// the next admission finds the ramp over (and ends it in the word).
fn ramped(threshold: u32) -> (Arc<Fuse>, std::sync::Arc<quanta::Mock>, OwnedPermit) {
    let (fuse, mock) = circuit(ramping(threshold));
    fuse.force_open();
    mock.increment(OPEN);
    fuse.try_acquire().expect("the probe").success();
    let permit = fuse
        .try_acquire_owned()
        .expect("60 % admitted at the ramp's start");
    assert!(!permit.is_probe());
    assert_eq!(fuse.snapshot().graded_by, Some(Grading::RampUp));
    mock.increment(RAMP);
    (fuse, mock, permit)
}

/// The `openings` of every transition to `Open` from now on, as the
/// listeners are told them (a plain mutex: listeners run outside the
/// modelled atomics, and it is read after the threads are joined).
fn openings_told(fuse: &Fuse) -> std::sync::Arc<std::sync::Mutex<Vec<u32>>> {
    let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = told.clone();
    fuse.on_transition(move |transition: &Transition| {
        if transition.to == State::Open {
            record.lock().unwrap().push(transition.openings);
        }
    });
    told
}

/// 1. A request that recomputes the throttle's share racing an admission:
///    a failure, its thread's first request (4 / 6 shed, or 5 / 7 with the
///    other's), against an admission that finds the old share (none: it is
///    admitted) or the new one (it is throttled, which is one more request,
///    also its thread's first: it recomputes the share too). Whichever it
///    found, the window then counts every request once (each throttled
///    call and each verdict), the share in use is a recomputed one, and
///    the admission wrote neither the state word nor a record: the only
///    write there is the failure's claim.
#[test]
fn an_admission_finds_the_old_or_the_new_share() {
    loom::model(|| {
        let (fuse, late) = throttled_but_not_yet();
        let writes = fuse.loom_writes();
        let failing = thread::spawn(move || late.failure());
        let admitting = {
            let fuse = fuse.clone();
            thread::spawn(move || match fuse.try_acquire() {
                Ok(permit) => {
                    assert!(!permit.is_probe());
                    // Neither a request nor an accept.
                    permit.ignore();
                    0
                }
                Err(shed) => {
                    assert_eq!(shed.throttled(), Some(Grading::Throttle), "{shed}");
                    assert_eq!(shed.retry_after(), Duration::ZERO);
                    1
                }
            })
        };
        failing.join().unwrap();
        let throttled = admitting.join().unwrap();
        let shown = fuse.snapshot();
        assert_eq!(shown.state, State::Closed);
        assert_eq!(shown.failures.len(), 4, "{shown:?}");
        assert_eq!(
            (shown.requests, shown.accepts),
            (5 + throttled, 1),
            "{shown:?}"
        );
        assert_eq!(shown.graded_by, Some(Grading::Throttle), "{shown:?}");
        assert!(
            shown.admission.to_f64() < 0.5,
            "a share not recomputed: {shown:?}"
        );
        assert_eq!(fuse.loom_writes() - writes, 1, "only the failure's claim");
        let shed = fuse
            .try_acquire()
            .expect_err("the new share sheds every call");
        assert_eq!(shed.throttled(), Some(Grading::Throttle));
    });
}

/// 2. A share stored for an epoch that has ended is never used by the
///    next: a failure of the old closed epoch (its thread's first request:
///    4 / 6 shed, stored with its epoch, before or after the circuit moved
///    on, or not at all once the failure is stale) races `force_closed`
///    and an admission of the new epoch, which is granted (nothing of the
///    new epoch has recomputed its share); the new epoch's window and
///    share are empty.
#[test]
fn a_share_of_an_ended_epoch_is_never_used() {
    loom::model(|| {
        let (fuse, late) = throttled_but_not_yet();
        let failing = thread::spawn(move || late.failure());
        let closing = {
            let fuse = fuse.clone();
            thread::spawn(move || {
                fuse.force_closed();
                fuse.try_acquire()
                    .expect("a new epoch sheds nothing")
                    .ignore();
            })
        };
        failing.join().unwrap();
        closing.join().unwrap();
        let shown = fuse.snapshot();
        assert_eq!(shown.state, State::Closed);
        assert!(shown.failures.is_empty(), "{shown:?}");
        assert_eq!((shown.requests, shown.accepts), (0, 0), "{shown:?}");
        assert_eq!(shown.graded_by, None, "{shown:?}");
        fuse.try_acquire().expect("nothing shed").ignore();
    });
}

/// 3. The ramp's start racing a relapse: a probe's success closes the
///    circuit after its second opening in a row (n = 1) into a ramping
///    epoch, and only then stamps when it closed, with that n; a caller
///    admitted in the new epoch fails at once, before or after the stamp
///    (before, it takes the n from the half-open epoch's record, and the
///    ramp's start as its own time). Either way the circuit opens exactly
///    once, as the next opening in a row (the third: 120 s), never as a
///    first one, nor as the second (60 s: the n of a reading that found
///    neither stamp, say two loads of the record with the closer's stamp
///    between them).
#[test]
fn a_relapse_at_the_ramp_s_start_is_the_next_opening_in_a_row() {
    loom::model(|| {
        let (fuse, probe) = probing();
        let told = openings_told(&fuse);
        let closer = thread::spawn(move || probe.success());
        let relapsing = {
            let fuse = fuse.clone();
            thread::spawn(move || {
                while fuse.state() != State::Closed {
                    thread::yield_now();
                }
                let permit = fuse
                    .try_acquire()
                    .expect("60 % admitted at the ramp's start");
                assert!(!permit.is_probe());
                permit.failure();
            })
        };
        closer.join().unwrap();
        relapsing.join().unwrap();
        let shown = fuse.snapshot();
        assert_eq!(shown.state, State::Open);
        assert_eq!(shown.openings, 3, "the opening after n = 1: {shown:?}");
        assert_eq!(shown.open_for, Some(OPEN * 4), "{shown:?}");
        assert_eq!(*told.lock().unwrap(), [3], "one opening, the third");
    });
}

/// 4. The ramp's end racing a failure on the same closed word: the first
///    admission after the ramp clears the ramp from the word (a
///    compare-and-swap) while a failure of a permit admitted during the
///    ramp writes the word too. Threshold 2: the failure claims a slot,
///    neither write is lost (one failure recorded, the ramp ended once:
///    two writes), and the next failure opens the circuit as a first
///    opening. Threshold 1: the failure trips, before or after the ramp is
///    ended, as a first opening (the relapse is after the ramp).
#[test]
fn the_ramp_s_end_races_a_failure_on_the_same_word() {
    for threshold in [2, 1] {
        loom::model(move || {
            let (fuse, _mock, permit) = ramped(threshold);
            let writes = fuse.loom_writes();
            let failing = thread::spawn(move || permit.failure());
            let admitting = {
                let fuse = fuse.clone();
                thread::spawn(move || match fuse.try_acquire() {
                    Ok(permit) => {
                        assert!(!permit.is_probe());
                        permit.ignore();
                    }
                    Err(open) => {
                        assert_eq!(threshold, 1, "{open}");
                        assert_eq!(open.throttled(), None, "{open}");
                        assert_eq!(open.retry_after(), OPEN, "a first opening");
                    }
                })
            };
            failing.join().unwrap();
            admitting.join().unwrap();
            if threshold == 2 {
                let shown = fuse.snapshot();
                assert_eq!(shown.state, State::Closed);
                assert_eq!(shown.failures.len(), 1, "{shown:?}");
                assert_eq!((shown.graded_by, shown.admission.to_f64()), (None, 1.0));
                assert_eq!(fuse.loom_writes() - writes, 2, "a claim and the ramp's end");
                let permit = fuse.try_acquire().expect("the ramp is over");
                assert_eq!(fuse.loom_writes() - writes, 2, "nothing left to end");
                permit.failure();
            }
            let shown = fuse.snapshot();
            assert_eq!(shown.state, State::Open);
            assert_eq!(shown.openings, 1, "a first opening: {shown:?}");
            assert_eq!(shown.open_for, Some(OPEN), "{shown:?}");
        });
    }
}

/// 5. The ramp is ended only in its own epoch: an admission that found the
///    ramp over is held back before it clears the ramp from the word while
///    the circuit relapses (a first opening: the ramp is over), cools down,
///    probes and closes into a new ramping epoch. The clearing then finds
///    another epoch and leaves its ramp alone: the circuit ends closed,
///    ramping from its start. (Whoever takes the probe, the admission or
///    the relapsing thread, closes the circuit.)
#[test]
fn a_ramp_is_ended_only_in_its_own_epoch() {
    loom::model(|| {
        let (fuse, mock, permit) = ramped(1);
        let told = openings_told(&fuse);
        let relapsing = {
            let fuse = fuse.clone();
            thread::spawn(move || {
                permit.failure();
                mock.increment(OPEN);
                if let Ok(permit) = fuse.try_acquire() {
                    permit.success();
                }
            })
        };
        let admitting = {
            let fuse = fuse.clone();
            thread::spawn(move || {
                if let Ok(permit) = fuse.try_acquire() {
                    permit.success();
                }
            })
        };
        relapsing.join().unwrap();
        admitting.join().unwrap();
        assert_eq!(*told.lock().unwrap(), [1], "one opening, a first one");
        let shown = fuse.snapshot();
        assert_eq!(shown.state, State::Closed, "{shown:?}");
        assert_eq!(shown.graded_by, Some(Grading::RampUp), "{shown:?}");
        assert!((shown.admission.to_f64() - 0.6).abs() < 1e-6, "{shown:?}");
    });
}
