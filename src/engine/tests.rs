//! The engine against the reference model, and properties only the engine
//! has (what it writes, and when).

use std::sync::Arc;
use std::time::Duration;

use quanta::{Clock, Mock};

use super::*;
use crate::epoch::Epoch;
use crate::model::{self, Decision, Grant, Head};
use crate::packed::Cursor;
use crate::slot::Slot;
use crate::snapshot::State;
use crate::sync::HEAD_LOAD;
use crate::verdict::Verdict;

/// An engine of its own (its occupant leaked: tests move engines into
/// threads), on a mock clock at zero.
fn engine(config: &Config) -> (Engine<'static>, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let config = crate::config::intern(config.clone());
    let (slot, tag) = Slot::take(config);
    let occupant = Arc::new(Occupant::new(
        slot,
        tag,
        Some(clock),
        false,
        crate::names::Names::new("fuse", None, "test", None),
        crate::events::Events::default(),
        0,
    ));
    slot.occupy(&occupant);
    let occupant: &'static Arc<Occupant> = Box::leak(Box::new(occupant));
    (Engine::new(slot, occupant), mock)
}

fn bits(engine: &Engine) -> (u64, u128) {
    (
        engine.slot.words.head.load(HEAD_LOAD),
        engine.slot.words.phase.raw(),
    )
}

#[test]
fn closed_admission_and_success_write_nothing() {
    let config = Config::default();
    let (engine, _mock) = engine(&config);
    let before = bits(&engine);
    for _ in 0..100 {
        let Decision::Granted(grant) = engine.acquire() else {
            panic!("closed circuit rejected");
        };
        engine.verdict(grant, Verdict::Success, 0);
        engine.verdict(grant, Verdict::Ignore, 0);
    }
    assert_eq!(bits(&engine), before);
}

#[test]
fn open_rejection_writes_nothing_once_stamped() {
    let config = Config::default();
    let (engine, mock) = engine(&config);
    engine.force(model::force_open, crate::transition::Reason::Forced);
    let before = bits(&engine);
    mock.increment(Duration::from_secs(1));
    for _ in 0..10 {
        assert!(matches!(engine.acquire(), Decision::Rejected { .. }));
    }
    assert_eq!(bits(&engine), before);
}

#[test]
fn a_missing_opened_record_is_stamped_by_the_first_reader() {
    let config = Config::default();
    let (engine, mock) = engine(&config);
    // Simulate an opener stalled between its two writes: the word says
    // Open in epoch 1, the record is still empty.
    let head = model::force_open(Head::closed(Epoch::ZERO));
    engine.slot.words.head.store(
        Word::pack(&head, Cursor::default()).bits(),
        std::sync::atomic::Ordering::SeqCst,
    );
    mock.increment(Duration::from_secs(7));
    let Decision::Rejected { retry_after } = engine.acquire() else {
        panic!("an open circuit admitted");
    };
    assert_eq!(
        retry_after,
        config.open_nanos(),
        "the helper's time counts as the opening"
    );
    assert_eq!(engine.snapshot().opened_at, Some(Duration::from_secs(7)));
}

/// A rejection on a clock behind its opening's start (one that stepped
/// back) asks for no more than the opening lasts, whatever the jitter
/// drew; on a clock at or after the start, for what is left of it. The
/// engine reads the start only when its clock may be behind it (further
/// from the end than the shortest opening lasts): openings the jitter
/// shortened by more than the clock stepped back are among the cases.
#[test]
fn a_rejection_behind_its_opening_asks_for_no_more_than_the_opening() {
    let config = Config::builder()
        .open_duration(Duration::from_secs(10))
        .open_jitter(0.5)
        .build()
        .unwrap();
    let second = 1_000_000_000;
    let mut shortened = 0;
    for start in 100..120 {
        let (engine, mock) = engine(&config);
        mock.increment(Duration::from_secs(start));
        engine.force(model::force_open, crate::transition::Reason::Forced);
        let at = start * second;
        let seed = engine.occupant.seed;
        let lasts = crate::recovery::retry_at(&config, 0, at, seed, None).unwrap() - at;
        if lasts <= 9 * second {
            shortened += 1;
        }
        let rejected = |engine: &Engine| match engine.acquire() {
            Decision::Rejected { retry_after } => retry_after,
            other @ Decision::Granted(_) => {
                panic!("start {start}: an open circuit decided {other:?}")
            }
        };
        assert_eq!(rejected(&engine), lasts, "start {start}, at the start");
        mock.decrement(Duration::from_secs(1));
        assert_eq!(rejected(&engine), lasts, "start {start}, 1 s before it");
        mock.increment(Duration::from_secs(1) + Duration::from_nanos(lasts - 1));
        assert_eq!(rejected(&engine), 1, "start {start}, 1 ns before the end");
    }
    assert!(shortened > 0, "no draw shortened an opening by 1 s");
}

/// A helper that stamps a missing opening draws it for the opening's n,
/// which the open word holds: the third opening in a row of a doubling
/// backoff lasts four open durations whoever stamps it.
#[test]
fn a_missing_opening_is_stamped_for_its_place_in_the_row() {
    let config = Config::builder()
        .open_backoff(2.0)
        .max_open_duration(Duration::from_mins(10))
        .build()
        .unwrap();
    let (engine, mock) = engine(&config);
    let head = Head::open(Epoch::new(5), 2);
    engine.set_word(head, Cursor::default());
    mock.increment(Duration::from_secs(1));
    assert_eq!(
        engine.acquire(),
        Decision::Rejected {
            retry_after: 4 * config.open_nanos()
        }
    );
    let snapshot = engine.snapshot();
    assert_eq!(snapshot.openings, 3);
    assert_eq!(snapshot.open_for, Some(4 * config.open_duration()));
    assert_eq!(snapshot.opened_at, Some(Duration::from_secs(1)));
}

/// A half-open epoch whose start is missing (its mover stalled before
/// stamping it): the callers after it neither wait nor stamp it; no probe
/// timeout passes until the mover stamps the start (a stalled mover only
/// delays it), and a failed probe is the next opening in a row after the
/// n of the opening before, which the record still holds.
#[test]
fn a_missing_half_open_start_delays_the_timeout_and_keeps_the_n_before_it() {
    let config = Config::builder()
        .half_open_probes(2)
        .open_backoff(3.0)
        .max_open_duration(Duration::from_hours(1))
        .probe_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let (engine, mock) = engine(&config);
    let open = Head::open(Epoch::new(8), 1);
    engine.set_word(open, Cursor::default());
    // The opening of epoch 8 is stamped (by whoever read it); the move to
    // half-open in epoch 9 is not yet.
    let Decision::Rejected { .. } = engine.acquire() else {
        panic!("open");
    };
    engine.set_word(
        Head {
            inflight: 1,
            ..Head::half_open(Epoch::new(9), 0)
        },
        Cursor::default(),
    );
    let before = engine.slot.words.phase.raw();
    mock.increment(Duration::from_secs(100));
    let Decision::Granted(probe) = engine.acquire() else {
        panic!("a free probe slot");
    };
    mock.increment(Duration::from_secs(1_000));
    assert_eq!(engine.acquire(), Decision::Rejected { retry_after: 0 });
    assert_eq!(
        engine.slot.words.phase.raw(),
        before,
        "no one but the mover stamps"
    );
    engine.verdict(probe, Verdict::Failure, 0);
    let snapshot = engine.snapshot();
    assert_eq!(snapshot.openings, 3);
    assert_eq!(snapshot.open_for, Some(9 * config.open_duration()));
}

#[test]
fn concurrent_failures_reaching_the_threshold_open_the_circuit() {
    for _ in 0..200 {
        let config = Config::builder().failure_threshold(4).build().unwrap();
        let (engine, _mock) = engine(&config);
        let engine = &engine;
        let grants: Vec<Grant> = (0..4)
            .map(|_| match engine.acquire() {
                Decision::Granted(grant) => grant,
                other @ Decision::Rejected { .. } => panic!("a closed circuit decided {other:?}"),
            })
            .collect();
        std::thread::scope(|s| {
            for grant in grants {
                s.spawn(move || engine.verdict(grant, Verdict::Failure, 0));
            }
        });
        assert_eq!(engine.state(), State::Open);
    }
}

#[test]
fn half_open_probes_never_exceed_the_limit_under_threads() {
    let config = Config::builder().half_open_probes(3).build().unwrap();
    let (engine, mock) = engine(&config);
    engine.force(model::force_open, crate::transition::Reason::Forced);
    mock.increment(Duration::from_secs(30));
    let inflight = std::sync::atomic::AtomicU32::new(0);
    let peak = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for i in 0..2_000u32 {
                    if let Decision::Granted(grant) = engine.acquire() {
                        let now = inflight.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        peak.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                        let snap = engine.snapshot();
                        assert!(snap.half_open_inflight <= 3, "{snap:?}");
                        inflight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        engine.verdict(grant, Verdict::Ignore, 0);
                    }
                    if i % 500 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    assert!(peak.into_inner() <= 3);
    let snap = engine.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_open_inflight, 0);
}

/// Moves the state word to a closed epoch `epoch` whose claim counter reads
/// `claims`, without touching a record: as if that many state changes (and
/// claims) had happened with the records left as they are, whatever their
/// age.
fn jump(engine: &Engine, epoch: u32, claims: u32) {
    engine.start_at(Epoch::new(epoch), claims, None);
}

/// Runs `f` on a thread of its own and fails the test if it has not
/// returned after a generous deadline: a retry loop that does not make
/// progress spins forever (the thread is left behind; the test fails).
fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(f()));
    wait.recv_timeout(Duration::from_mins(1))
        .unwrap_or_else(|_| panic!("{what} did not return: the engine retries without progress"))
}

/// Ages past which a stamped record used to be misread: half the epoch
/// range and one more, the whole range (an exact alias) and one more.
const AGES: [u32; 5] = [
    (1 << (Epoch::BITS - 1)) - 1,
    1 << (Epoch::BITS - 1),
    (1 << (Epoch::BITS - 1)) + 1,
    (1 << Epoch::BITS) - 1,
    1,
];

/// Issue 9, scenario 1: a failure slot written in epoch 0, then a failure
/// 2^29 + 1 epochs later (and at the other ages): recorded, in bounded time.
#[test]
fn a_failure_slot_of_any_age_never_blocks_a_failure() {
    for age in AGES {
        let (engine, _mock) = engine(&Config::default());
        let engine = Arc::new(engine);
        let Decision::Granted(grant) = engine.acquire() else {
            panic!("closed circuit rejected");
        };
        engine.verdict(grant, Verdict::Failure, 0);
        jump(&engine, age, 0);
        let shared = engine.clone();
        returns("a failure after an old slot", move || {
            let Decision::Granted(grant) = shared.acquire() else {
                panic!("closed circuit rejected");
            };
            shared.verdict(grant, Verdict::Failure, 0);
        });
        assert_eq!(engine.snapshot().failures.len(), 1, "age {age}");
    }
}

/// Issue 9, scenario 2: `force_open`, the record left 2^29 + 1 epochs
/// behind (and the other ages), `force_open` at 5 s: admission returns, and
/// the snapshot at 6 s says the circuit opened at 5 s. (A record exactly a
/// multiple of 2^30 epochs behind would pass for the new opening; the
/// engine never leaves one that far behind, see the next test.)
#[test]
fn an_opening_record_of_any_age_never_blocks_admission() {
    for age in AGES {
        let (engine, mock) = engine(&Config::default());
        let engine = Arc::new(engine);
        engine.force(model::force_open, crate::transition::Reason::Forced);
        jump(&engine, age, 0);
        mock.increment(Duration::from_secs(5));
        engine.force(model::force_open, crate::transition::Reason::Forced);
        mock.increment(Duration::from_secs(1));
        let shared = engine.clone();
        let admission = returns("admission after an old opening", move || shared.acquire());
        assert_eq!(
            admission,
            Decision::Rejected {
                retry_after: Config::default().open_nanos() - 1_000_000_000
            },
            "age {age}"
        );
        assert_eq!(
            engine.snapshot().opened_at,
            Some(Duration::from_secs(5)),
            "age {age}"
        );
    }
}

/// Opening and half-opening stamp the `phase` record, and so does closing
/// a closed circuit by hand, so the record is never more than one epoch
/// behind the word (closed by probes).
#[test]
fn the_phase_record_keeps_up_with_the_word() {
    let config = Config::builder().half_open_probes(1).build().unwrap();
    let (engine, mock) = engine(&config);
    let stamp_epoch = |engine: &Engine| {
        let bits = engine.slot.words.phase.raw() >> 64;
        Epoch::new(u32::try_from((bits >> 32) & u128::from(u32::MAX)).unwrap())
    };
    let epoch = |engine: &Engine| engine.load().epoch();
    engine.force(model::force_closed, crate::transition::Reason::Forced);
    assert_eq!(stamp_epoch(&engine), epoch(&engine), "force_closed");
    engine.force(model::reset, crate::transition::Reason::Reset);
    assert_eq!(stamp_epoch(&engine), epoch(&engine), "reset");
    engine.force(model::force_open, crate::transition::Reason::Forced);
    assert_eq!(stamp_epoch(&engine), epoch(&engine), "force_open");
    mock.increment(config.open_duration());
    let Decision::Granted(probe) = engine.acquire() else {
        panic!("the cooldown passed");
    };
    assert_eq!(stamp_epoch(&engine), epoch(&engine), "half-open");
    engine.verdict(probe, Verdict::Success, 0);
    assert_eq!(engine.state(), State::Closed);
    assert_eq!(
        stamp_epoch(&engine).next(),
        epoch(&engine),
        "closed by probes"
    );
    engine.force(model::force_closed, crate::transition::Reason::Forced);
    assert_eq!(stamp_epoch(&engine), epoch(&engine), "closed again by hand");
}

/// Issue 9, scenario 3, with no manual call: threshold 2, a 1 ns cooldown,
/// two failures, then about 2^28 cycles of a failing probe (jumped over,
/// the ring untouched), probes that pass, and a failure: recorded.
#[test]
fn failure_slots_left_by_an_old_closed_epoch_never_block_a_failure() {
    let config = Config::builder()
        .failure_threshold(2)
        .open_duration(Duration::from_nanos(1))
        .build()
        .unwrap();
    for age in AGES {
        let (engine, mock) = engine(&config);
        let engine = Arc::new(engine);
        for _ in 0..2 {
            let Decision::Granted(grant) = engine.acquire() else {
                panic!("closed circuit rejected");
            };
            engine.verdict(grant, Verdict::Failure, 0);
        }
        assert_eq!(engine.state(), State::Open);
        // The last failed probe of the cycles reopens the circuit.
        jump(&engine, age, 0);
        engine.force(model::force_open, crate::transition::Reason::Forced);
        mock.increment(Duration::from_nanos(1));
        let shared = engine.clone();
        returns("probes and a failure after old slots", move || {
            for _ in 0..2 {
                let Decision::Granted(grant) = shared.acquire() else {
                    panic!("the cooldown passed: a probe is due");
                };
                shared.verdict(grant, Verdict::Success, 0);
            }
            assert_eq!(shared.state(), State::Closed);
            let Decision::Granted(grant) = shared.acquire() else {
                panic!("closed circuit rejected");
            };
            shared.verdict(grant, Verdict::Failure, 0);
        });
        assert_eq!(engine.snapshot().failures.len(), 1, "age {age}");
    }
}

/// The README's figure for a slot: the words on cache lines of their own
/// (128-byte aligned on `x86_64`) and the occupant pointer.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_slot_is_two_hundred_and_fifty_six_bytes() {
    assert_eq!(std::mem::size_of::<Slot>(), 256);
}

/// A freed slot waits for a circuit of its own configuration: a permit
/// reads the configuration from the slot, so it never changes under one.
#[test]
fn a_slot_is_reused_only_by_a_circuit_of_its_configuration() {
    use crate::fuse::Fuse;
    // Thresholds no other test uses: no other circuit takes these slots.
    let config = |threshold| {
        Config::builder()
            .failure_threshold(threshold)
            .build()
            .unwrap()
    };
    let first = Fuse::new("first", config(77));
    let (slot, tag) = (std::ptr::from_ref(first.slot()), first.tag());
    drop(first);
    let other = Fuse::new("other", config(78));
    assert_ne!(
        std::ptr::from_ref(other.slot()),
        slot,
        "another configuration"
    );
    let again = Fuse::new("again", config(77));
    assert_eq!(
        std::ptr::from_ref(again.slot()),
        slot,
        "the freed slot, reused"
    );
    assert_ne!(again.tag(), tag, "a circuit of its own in the slot");
    assert_eq!(again.slot().config().failure_threshold(), 77);
}

/// A rate configuration with short buckets, for the tests below.
fn rate(minimum: u32, percent: u32, slow: Option<u64>) -> Config {
    let builder = Config::builder()
        .policy(crate::config::Policy::Rate)
        .failure_window(Duration::from_nanos(400))
        .window_buckets(4)
        .minimum_calls(minimum)
        .failure_rate(percent)
        .slow_call_rate(50)
        .open_duration(Duration::from_micros(1))
        .half_open_probes(1);
    match slow {
        Some(nanos) => builder.slow_call_duration(Duration::from_nanos(nanos)),
        None => builder,
    }
    .build()
    .unwrap()
}

#[test]
fn a_rate_circuit_opens_at_its_rate_and_not_before_its_minimum() {
    let config = rate(4, 50, None);
    let (engine, mock) = engine(&config);
    let run = |verdict| {
        let Decision::Granted(grant) = engine.acquire() else {
            panic!("rejected");
        };
        engine.verdict(grant, verdict, 0);
    };
    run(Verdict::Failure);
    run(Verdict::Failure);
    run(Verdict::Failure);
    assert_eq!(engine.state(), State::Closed, "3 calls, below the minimum");
    let snapshot = engine.snapshot();
    assert_eq!((snapshot.calls, snapshot.failed), (3, 3));
    // The buckets of those failures leave the window.
    mock.increment(400);
    run(Verdict::Success);
    run(Verdict::Success);
    run(Verdict::Ignore);
    run(Verdict::Failure);
    assert_eq!(engine.state(), State::Closed, "1 of 3");
    run(Verdict::Failure);
    assert_eq!(engine.state(), State::Open, "2 of 4");
    assert_eq!(
        engine.snapshot().calls,
        0,
        "an open circuit shows no window"
    );
}

#[test]
fn a_rate_circuit_times_its_calls() {
    let config = rate(2, 100, Some(10));
    let (engine, mock) = engine(&config);
    let started = |engine: &Engine| engine.occupant.time.now();
    for _ in 0..2 {
        let Decision::Granted(grant) = engine.acquire() else {
            panic!("rejected");
        };
        let at = started(&engine);
        mock.increment(10);
        engine.verdict(grant, Verdict::Success, at);
    }
    assert_eq!(
        engine.state(),
        State::Open,
        "two slow successes of two calls"
    );
}

proptest::proptest! {
    /// The engine and the reference model agree on every history of one
    /// thread under `rate`, slow calls included.
    #[test]
    fn the_rate_engine_is_the_reference(
        minimum in 1u32..5,
        percent in 1u32..=100,
        timed in proptest::prelude::any::<bool>(),
        steps in proptest::collection::vec((0u8..5, 0u64..150, 0u64..30), 1..120),
    ) {
        let config = rate(minimum, percent, timed.then_some(12));
        let (engine, mock) = engine(&config);
        let mut reference = crate::reference::Reference::starting_at(config.clone(), Epoch::ZERO);
        let mut now = 0;
        for (action, advance, took) in steps {
            mock.increment(advance);
            now += advance;
            if action == 0 {
                engine.force(model::force_open, crate::transition::Reason::Forced);
                reference.force_open(now);
            } else {
                {
                    let decision = engine.acquire();
                    proptest::prop_assert_eq!(decision, reference.acquire(now));
                    if let Decision::Granted(grant) = decision {
                        mock.increment(took);
                        let started = now;
                        now += took;
                        let verdict = [Verdict::Success, Verdict::Failure, Verdict::Ignore, Verdict::Success][usize::from(action - 1)];
                        engine.verdict(grant, verdict, started);
                        let slow = verdict != Verdict::Ignore && crate::policy::is_slow(&config, took);
                        reference.timed_verdict(grant, verdict, slow, now);
                    }
                }
            }
            proptest::prop_assert_eq!(engine.snapshot(), reference.snapshot(now));
        }
    }
}
