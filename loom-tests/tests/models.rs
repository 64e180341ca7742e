//! Every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of small scenarios on
//! one circuit, through the public API. Each model names the property of
//! SPEC §7 (and the issue that asked for it) it checks.
#![cfg(fuse_loom)]

use std::time::Duration;

use fuse_breaker::{Config, Fuse, State};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::thread;

const OPEN: Duration = Duration::from_secs(30);

fn config(threshold: u32, probes: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .open_duration(OPEN)
        .build()
        .expect("a valid configuration")
}

/// Where a model's circuit starts: fresh, or (for the wrap-around models)
/// in a closed epoch with its claim counter at a given value and its
/// records a given number of epochs behind: `(epoch, claims, age)`.
type Start = Option<(u32, u32, u32)>;

/// Starting points just before the wrap-arounds of the engine's counters
/// (epoch, claim counter), with every record left far behind: past half the
/// epoch range (where a half-range comparison turns) or a whole range less
/// a few epochs. (Less one would stamp a record with the very epoch a
/// model's first change enters: that is the epoch's own stamp, which no
/// circuit writes before its word reaches the epoch, and the records'
/// times are then the model's, by luck or not.)
const WRAPS: [Start; 2] = [
    Some(((1 << 30) - 1, (1 << 17) - 1, (1 << 29) + 1)),
    Some(((1 << 29) - 1, (1 << 16) - 1, (1 << 30) - 8)),
];

/// A circuit on a mock clock at time zero.
fn circuit(config: Config) -> (Arc<Fuse>, std::sync::Arc<quanta::Mock>) {
    circuit_at(config, None)
}

/// A circuit on a mock clock at time zero, started at `start`.
fn circuit_at(config: Config, start: Start) -> (Arc<Fuse>, std::sync::Arc<quanta::Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let fuse = Fuse::builder("loom").config(config).clock(clock).build();
    if let Some((epoch, claims, age)) = start {
        fuse.loom_start(epoch, claims, age);
    }
    (Arc::new(fuse), mock)
}

/// An open circuit whose cooldown has just ended: the next call probes.
fn ready_to_probe(probes: u32) -> Arc<Fuse> {
    ready_to_probe_at(probes, None)
}

/// [`ready_to_probe`] from `start` (`force_open` moves one epoch on).
fn ready_to_probe_at(probes: u32, start: Start) -> Arc<Fuse> {
    let (fuse, mock) = circuit_at(config(1, probes), start);
    fuse.force_open();
    mock.increment(OPEN);
    fuse
}

/// Spins (yielding to loom) until `flag` is set.
fn wait_for(flag: &AtomicBool) {
    while !flag.load(SeqCst) {
        thread::yield_now();
    }
}

/// 1. Exactly one caller wins the open -> half-open move: with two probe
///    slots, two racing callers both get probes of the same half-open
///    epoch, so their two successes close the circuit. (Two moves would
///    make the first probe's success stale and leave it half-open.)
#[test]
fn one_caller_wins_the_move_to_half_open() {
    loom::model(|| two_probes_close_the_circuit(ready_to_probe(2)));
}

/// Two callers race to probe `fuse` (two slots); both probe, and their
/// successes close it.
fn two_probes_close_the_circuit(fuse: Arc<Fuse>) {
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let fuse = fuse.clone();
            thread::spawn(move || {
                let permit = fuse.try_acquire().expect("two slots for two callers");
                assert!(permit.is_probe());
                permit.success();
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(fuse.state(), State::Closed);
}

/// 1'. With one probe slot, of two racing callers exactly one probes; the
///     other is rejected with `retry_after` zero, or, if the probe already
///     closed the circuit, admitted as a closed call.
#[test]
fn one_probe_slot_admits_one_probe() {
    loom::model(|| {
        let fuse = ready_to_probe(1);
        let probes = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (fuse, probes) = (fuse.clone(), probes.clone());
                thread::spawn(move || match fuse.try_acquire() {
                    Ok(permit) => {
                        if permit.is_probe() {
                            probes.fetch_add(1, SeqCst);
                        }
                        permit.success();
                    }
                    Err(open) => assert_eq!(open.retry_after(), Duration::ZERO),
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(probes.load(SeqCst), 1);
        assert_eq!(fuse.state(), State::Closed);
    });
}

/// 2. In-flight probes never exceed `half_open_probes` and never go below
///    zero, whatever the probes end with: success, failure, ignore or a
///    dropped permit. Three threads each admitted and concluded on a
///    half-open circuit, whose admissions read the clock and the phase
///    record (the probe timeout, SPEC §10) and whose failed probe stamps a
///    new opening: every interleaving with at most two preemptions (three
///    take over twenty minutes).
///
/// One test per set of endings, so the two run side by side.
#[test]
fn probes_in_flight_stay_within_bounds_when_one_succeeds() {
    probes_in_flight_stay_within_bounds(["success", "ignore", "drop"]);
}

/// 2, with a failed probe among the three.
#[test]
fn probes_in_flight_stay_within_bounds_when_one_fails() {
    probes_in_flight_stay_within_bounds(["failure", "ignore", "drop"]);
}

/// Three probes on a half-open circuit of two slots, ending as `endings`.
fn probes_in_flight_stay_within_bounds(endings: [&'static str; 3]) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let fuse = ready_to_probe(2);
        let held = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = endings
            .into_iter()
            .map(|ending| {
                let (fuse, held) = (fuse.clone(), held.clone());
                thread::spawn(move || {
                    let Ok(permit) = fuse.try_acquire() else {
                        return;
                    };
                    if permit.is_probe() {
                        let now = held.fetch_add(1, SeqCst) + 1;
                        assert!(now <= 2, "{now} probes held at once");
                        held.fetch_sub(1, SeqCst);
                    }
                    match ending {
                        "success" => permit.success(),
                        "failure" => permit.failure(),
                        "ignore" => permit.ignore(),
                        _ => drop(permit),
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let snap = fuse.snapshot();
        match snap.state {
            State::HalfOpen => {
                assert_eq!(snap.half_open_inflight, 0, "{snap:?}");
                assert!(snap.half_open_successes <= 1, "{snap:?}");
            }
            State::Open | State::Closed => {
                assert_eq!(snap.half_open_inflight, 0, "{snap:?}");
            }
        }
    });
}

/// 3. `failure_threshold` failures of one closed epoch, recorded
///    concurrently inside the window, leave the circuit open when the last
///    verdict returns.
#[test]
fn concurrent_failures_at_the_threshold_open_the_circuit() {
    loom::model(|| failures_at_the_threshold(2, None));
}

/// 3, with three failing threads: every interleaving with at most two
/// preemptions (three take two minutes, most of the loom step's time).
#[test]
fn three_concurrent_failures_at_the_threshold_open_the_circuit() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| failures_at_the_threshold(3, None));
}

/// `threshold` threads each record a counted failure on a circuit started
/// at `start`: the last to return sees it open.
fn failures_at_the_threshold(threshold: u32, start: Start) {
    let (fuse, _mock) = circuit_at(config(threshold, 1), start);
    let finished = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..threshold)
        .map(|_| {
            let (fuse, finished) = (fuse.clone(), finished.clone());
            thread::spawn(move || {
                let permit = fuse.try_acquire().expect("closed until the last failure");
                permit.failure();
                let before = finished.fetch_add(1, SeqCst);
                if before + 1 == threshold as usize {
                    assert_eq!(fuse.state(), State::Open, "the last failure returned");
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(fuse.state(), State::Open);
    assert!(fuse.snapshot().failures.is_empty());
}

/// 4. A success racing failures leaves the circuit as some sequential order
///    of the same verdicts would: with threshold 2 and verdicts F, F, S the
///    orders give Open (F F S, S F F) or Closed with one failure (F S F);
///    never Closed with zero or two failures.
#[test]
fn a_success_racing_failures_matches_a_sequential_order() {
    loom::model(|| {
        let (fuse, _mock) = circuit(config(2, 1));
        let handles: Vec<_> = [false, false, true]
            .into_iter()
            .map(|succeed| {
                let fuse = fuse.clone();
                thread::spawn(move || {
                    let Ok(permit) = fuse.try_acquire() else {
                        return;
                    };
                    if succeed {
                        permit.success();
                    } else {
                        permit.failure();
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let snap = fuse.snapshot();
        match snap.state {
            State::Open => assert!(snap.failures.is_empty()),
            State::Closed => assert_eq!(snap.failures.len(), 1, "{snap:?}"),
            State::HalfOpen => panic!("no cooldown passed: {snap:?}"),
        }
    });
}

/// 5. Verdicts from a past epoch change nothing: a closed success after
///    `force_open`, a counted failure after `force_closed`, a probe failure
///    after `reset`.
#[test]
fn stale_verdicts_change_nothing() {
    type Change = fn(&Fuse);
    let cases: [(&str, Change, State); 3] = [
        ("success", Fuse::force_open, State::Open),
        ("failure", Fuse::force_closed, State::Closed),
        ("probe failure", Fuse::reset, State::Closed),
    ];
    for (verdict, change, expected) in cases {
        loom::model(move || {
            let fuse = if verdict == "probe failure" {
                ready_to_probe(1)
            } else {
                circuit(config(1, 1)).0
            };
            let acquired = Arc::new(AtomicBool::new(false));
            let caller = {
                let (fuse, acquired) = (fuse.clone(), acquired.clone());
                thread::spawn(move || {
                    let permit = fuse.try_acquire().expect("admitted");
                    acquired.store(true, SeqCst);
                    if verdict == "success" {
                        permit.success();
                    } else {
                        permit.failure();
                    }
                })
            };
            let operator = {
                let fuse = fuse.clone();
                thread::spawn(move || {
                    wait_for(&acquired);
                    change(&fuse);
                })
            };
            caller.join().unwrap();
            operator.join().unwrap();
            let snap = fuse.snapshot();
            assert_eq!(snap.state, expected, "{verdict}: {snap:?}");
            assert!(snap.failures.is_empty(), "{verdict}: {snap:?}");
        });
    }
}

/// 6. A closed circuit with no failures is never written by admission or a
///    success (nor by an ignore): the state word and the opened record take
///    no write at all.
#[test]
fn a_closed_circuit_without_failures_is_only_read() {
    loom::model(|| {
        let (fuse, _mock) = circuit(config(2, 1));
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let fuse = fuse.clone();
                thread::spawn(move || {
                    let permit = fuse.try_acquire().expect("closed");
                    if i == 2 {
                        permit.ignore();
                    } else {
                        permit.success();
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(fuse.loom_writes(), 0);
        assert_eq!(fuse.state(), State::Closed);
    });
}

/// 7. A caller that finds the circuit open before its opener stamped the
///    opening time stamps it itself (no thread waits for another): the
///    opening time is then a time at or after the opening, and the
///    rejection's `retry_after` never exceeds the open duration.
#[test]
fn readers_of_a_fresh_opening_never_wait() {
    loom::model(|| a_reader_races_the_opener(None));
}

/// A failure opens a circuit started at `start` (threshold 1) while a
/// reader asks for admission: the reader never waits, and the opening time
/// is the opener's.
fn a_reader_races_the_opener(start: Start) {
    let (fuse, mock) = circuit_at(config(1, 1), start);
    let opener = {
        let fuse = fuse.clone();
        thread::spawn(move || fuse.try_acquire().expect("closed").failure())
    };
    let reader = {
        let fuse = fuse.clone();
        thread::spawn(move || {
            if let Err(open) = fuse.try_acquire() {
                assert!(open.retry_after() <= OPEN);
            }
        })
    };
    opener.join().unwrap();
    reader.join().unwrap();
    mock.increment(Duration::from_secs(1));
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::Open);
    assert_eq!(snap.opened_at, Some(Duration::ZERO));
    let open = fuse.try_acquire().expect_err("open for 30 s");
    assert_eq!(open.retry_after(), OPEN - Duration::from_secs(1));
}

/// 8. Issue 9: across a wrap-around of the epoch and of the claim counter,
///    with failure slots far older than half the epoch range, concurrent
///    failures at the threshold still open the circuit, and every call
///    returns (a retry without progress would exceed loom's bound).
#[test]
fn failures_at_the_threshold_open_the_circuit_across_wrap_arounds() {
    for start in WRAPS {
        loom::model(move || failures_at_the_threshold(2, start));
    }
}

/// 9. Issue 9: an opening whose record is far behind (the opener's epoch
///    wraps to 0) is stamped, by its opener or by a reader, and no reader
///    waits or spins: model 7 at the wrap-arounds.
#[test]
fn readers_of_an_opening_over_an_old_record_never_wait() {
    for start in WRAPS {
        loom::model(move || a_reader_races_the_opener(start));
    }
}

/// 10. Issue 9: the move to half-open that wraps the epoch to 0 (opened in
///     the last epoch of the range, over an old record) has one winner, and
///     its two probes close the circuit: model 1 at the wrap-around.
#[test]
fn one_caller_wins_the_move_to_half_open_across_the_epoch_wrap() {
    for start in WRAPS {
        // `force_open` moves the epoch on, to the last of the range.
        let start = start.map(|(_, claims, age)| ((1 << 30) - 2, claims, age));
        loom::model(move || two_probes_close_the_circuit(ready_to_probe_at(2, start)));
    }
}

/// 11. A caller deciding from an old opening never overwrites a newer one:
///     while one thread is rejected by an open circuit, another opens it
///     again; the newer opening keeps its time. (A record that does not
///     match the caller's word is overwritten only once the word is seen
///     unchanged after the record was read; with a weaker load of the
///     record, the old word could still be seen after a newer record.)
#[test]
fn an_old_opening_never_overwrites_a_newer_one() {
    loom::model(|| {
        let (fuse, mock) = circuit(config(1, 1));
        fuse.force_open();
        mock.increment(Duration::from_secs(1));
        let rejected = {
            let fuse = fuse.clone();
            thread::spawn(move || {
                let open = fuse.try_acquire().expect_err("open for 30 s");
                assert!(open.retry_after() <= OPEN);
            })
        };
        let reopener = {
            let fuse = fuse.clone();
            thread::spawn(move || fuse.force_open())
        };
        rejected.join().unwrap();
        reopener.join().unwrap();
        mock.increment(Duration::from_secs(1));
        assert_eq!(fuse.snapshot().opened_at, Some(Duration::from_secs(1)));
        let open = fuse.try_acquire().expect_err("reopened at 1 s");
        assert_eq!(open.retry_after(), OPEN - Duration::from_secs(1));
    });
}

/// 12. The sequence lock a cached shared circuit keeps its quiet permit in
///     (`sync::Words4`, one writer at a time, readers without a lock):
///     racing a writer's two writes, a reading is `None` or the words of
///     one write, never a mix, and a later reading never goes back to an
///     earlier write. Fails with either fence of the lock removed, or
///     with its last store relaxed.
#[test]
fn a_sequence_lock_never_mixes_two_writes() {
    loom::model(|| {
        let cell = Arc::new(fuse_breaker::LoomWords4::default());
        let writer = {
            let cell = cell.clone();
            thread::spawn(move || {
                cell.write([1, 2, 3, 4]);
                cell.write([5, 6, 7, 8]);
            })
        };
        let whole = |words: [u64; 4]| {
            assert!(
                [[0, 0, 0, 0], [1, 2, 3, 4], [5, 6, 7, 8]].contains(&words),
                "words of two writes: {words:?}"
            );
            words[0]
        };
        let first = cell.read().map(whole);
        let second = cell.read().map(whole);
        if let (Some(first), Some(second)) = (first, second) {
            assert!(second >= first, "went back: {first} then {second}");
        }
        writer.join().unwrap();
        assert_eq!(cell.read(), Some([5, 6, 7, 8]));
    });
}
