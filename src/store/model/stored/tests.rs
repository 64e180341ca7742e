use super::*;
use crate::oracle::{Admit, Oracle, Outcome};
use proptest::prelude::*;
use std::time::Duration;

mod foreign;
mod oracle;

const SEC: u64 = 1_000_000_000;

const MICRO: u64 = 1_000;

fn config(threshold: u32, probes: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .failure_window(Duration::from_mins(1))
        .open_duration(Duration::from_secs(30))
        .build()
        .expect("a valid configuration")
}

/// SPEC §10's settings over `config(threshold, probes)`: the backoff, the
/// longest opening, the jitter (fractions) and the probe timeout
/// (seconds).
#[derive(Clone, Copy, Debug)]
struct Recovery {
    backoff: f64,
    max_open: u64,
    jitter: f64,
    probe_timeout: u64,
}

fn recovery() -> impl Strategy<Value = Recovery> {
    (
        prop_oneof![Just(1.0), Just(1.5), Just(2.0), Just(3.25)],
        prop_oneof![Just(30u64), Just(45), Just(100), Just(240)],
        prop_oneof![Just(0.0), Just(0.25), Just(0.5), Just(0.999_999)],
        prop_oneof![Just(5u64), Just(30), Just(90)],
    )
        .prop_map(|(backoff, max_open, jitter, probe_timeout)| Recovery {
            backoff,
            max_open,
            jitter,
            probe_timeout,
        })
}

fn recovering(threshold: u32, probes: u32, recovery: Recovery) -> Config {
    config(threshold, probes)
        .to_builder()
        .open_backoff(recovery.backoff)
        .max_open_duration(Duration::from_secs(recovery.max_open))
        .open_jitter(recovery.jitter)
        .probe_timeout(Duration::from_secs(recovery.probe_timeout))
        .build()
        .expect("a valid configuration")
}

/// A lease no history here outlives: the store then behaves as one
/// in-process circuit.
const FOREVER: u64 = u64::MAX / 4;

fn at(now: u64, lease: u64, lease_id: u64) -> At {
    At {
        now,
        lease,
        lease_id,
        generation: 1000 + lease_id,
        draw: 0,
        throttle: None,
    }
}

fn granted(entry: Entry) -> Ticket {
    match entry {
        Entry::Granted(ticket) => ticket,
        other @ Entry::Rejected { .. } => panic!("not granted: {other:?}"),
    }
}

/// `nanos` rounded up to a whole microsecond, where a store keeps the end
/// of an opening (see [`Stored::phase`]).
fn up_to_micros(nanos: u64) -> u64 {
    nanos.div_ceil(MICRO) * MICRO
}

/// The oracle's snapshot as a store keeps it: the opening's end on the
/// first whole microsecond at or after the oracle's (its start is a store
/// time, a whole microsecond), and no slow calls by verdict.
fn as_stored(mut snapshot: Snapshot) -> Snapshot {
    snapshot.open_for = snapshot
        .open_for
        .map(|d| Duration::from_nanos(up_to_micros(u64::try_from(d.as_nanos()).unwrap())));
    // A store keeps slow calls, not their verdicts.
    snapshot.slow_failed = None;
    snapshot
}

/// The oracle's snapshot with the newest `threshold` of its failures: a
/// circuit the quorum holds closed keeps counting past the threshold, and
/// its window keeps only as many (the rule asks no more of it).
fn newest_failures(mut snapshot: Snapshot, threshold: u32) -> Snapshot {
    let extra = snapshot.failures.len().saturating_sub(threshold as usize);
    snapshot.failures.drain(..extra);
    snapshot
}

fn outcome(verdict: Verdict) -> Outcome {
    match verdict {
        Verdict::Success => Outcome::Success,
        Verdict::Failure => Outcome::Failure,
        Verdict::Ignore => Outcome::Ignore,
    }
}

/// The generation of the stored circuits of the property test, and the
/// seed of its oracle: the stored model draws an opening's `u` from the
/// key's generation.
const GENERATION: u64 = 7;

/// A store's circuit that is open and cooled down, its probe granted at
/// `now` under lease `id`.
fn probing(config: &Config, now: u64, lease: u64) -> (Stored, Ticket) {
    let mut stored = Stored::fresh(1);
    stored.force_open(config, now - 30 * SEC, 1);
    let (entry, changed) = stored.acquire(config, at(now, lease, 11));
    assert!(changed, "the move to half-open is written");
    (stored, granted(entry))
}

#[test]
fn a_probe_whose_lease_ends_frees_its_slot_and_its_late_verdict_is_stale() {
    let config = config(1, 1);
    let now = 1_700_000_000 * SEC;
    let (mut stored, probe) = probing(&config, now, 5 * SEC);
    assert!(probe.is_probe());
    assert_eq!(
        stored.acquire(&config, at(now + SEC, 5 * SEC, 12)).0,
        Entry::Rejected { retry_after: 0 },
        "the one slot is taken"
    );
    // The lease ends: the slot is free again, for a new probe.
    let (entry, changed) = stored.acquire(&config, at(now + 5 * SEC, 5 * SEC, 13));
    assert!(changed);
    let second = granted(entry);
    assert_eq!(second.lease, Some(13));
    // The first probe's verdict comes too late: nothing changes.
    let before = stored.clone();
    assert!(!stored.verdict(&config, &probe, Verdict::Failure, now + 6 * SEC));
    assert_eq!(stored, before);
    // The second one's counts.
    assert!(stored.verdict(&config, &second, Verdict::Success, now + 6 * SEC));
    assert_eq!(stored.state(), State::Closed);
}

#[test]
fn an_expired_lease_is_an_ignore_verdict_whoever_looks_next() {
    let config = config(1, 2);
    let now = 1_700_000_000 * SEC;
    let (mut stored, first) = probing(&config, now, 5 * SEC);
    let second = granted(stored.acquire(&config, at(now + SEC, 5 * SEC, 12)).0);
    assert_eq!(stored.head.inflight, 2);
    // The second probe's verdict is where the first one's ended lease is
    // noticed: an ignore, then the success.
    assert!(stored.verdict(&config, &second, Verdict::Success, now + 5 * SEC + 1));
    assert_eq!((stored.head.successes, stored.head.inflight), (1, 0));
    assert!(stored.leases.is_empty());
    assert_eq!(stored.state(), State::HalfOpen, "one success of two");
    // The first probe's success is stale: it does not close the circuit.
    assert!(!stored.verdict(&config, &first, Verdict::Success, now + 6 * SEC));
    assert_eq!(stored.state(), State::HalfOpen);
    let third = granted(stored.acquire(&config, at(now + 6 * SEC, 5 * SEC, 13)).0);
    assert!(stored.verdict(&config, &third, Verdict::Success, now + 6 * SEC));
    assert_eq!(stored.state(), State::Closed);
}

#[test]
fn nothing_changes_for_a_closed_success_without_failures_an_ignore_or_a_stale_verdict() {
    let config = config(3, 1);
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(9);
    let (entry, changed) = stored.acquire(&config, at(now, SEC, 1));
    assert!(!changed, "a closed admission writes nothing");
    let ticket = granted(entry);
    assert!(!stored.verdict(&config, &ticket, Verdict::Success, now));
    assert!(!stored.verdict(&config, &ticket, Verdict::Ignore, now));
    assert!(stored.verdict(&config, &ticket, Verdict::Failure, now));
    assert!(
        stored.verdict(&config, &ticket, Verdict::Success, now),
        "clears a failure"
    );
    let stale = Ticket {
        generation: 8,
        ..ticket
    };
    assert!(!stored.verdict(&config, &stale, Verdict::Failure, now));
    assert!(stored.failures().is_empty());
}

#[test]
fn a_permit_of_another_generation_is_stale() {
    let config = config(1, 1);
    let now = 1_700_000_000 * SEC;
    let mut old = Stored::fresh(1);
    let ticket = granted(old.acquire(&config, at(now, SEC, 1)).0);
    // The key expired and was created again: same epoch, new generation.
    let mut again = Stored::fresh(2);
    assert!(!again.verdict(&config, &ticket, Verdict::Failure, now));
    assert_eq!(again.state(), State::Closed);
}

#[test]
fn epochs_count_past_the_engine_s_thirty_bits() {
    let config = config(1, 1);
    let mut stored = Stored::fresh(3);
    stored.epoch = (1 << 30) - 1;
    stored.force_open(&config, SEC, 3);
    assert_eq!(stored.epoch, 1 << 30);
    stored.force_closed(&config);
    assert_eq!(stored.epoch, (1 << 30) + 1);
    let ticket = granted(stored.acquire(&config, at(2 * SEC, SEC, 1)).0);
    assert_eq!(ticket.epoch, (1 << 30) + 1);
}

#[test]
fn a_closed_permit_of_an_absent_key_counts_in_the_generation_its_first_write_names() {
    let config = config(2, 1);
    let now = 1_700_000_000 * SEC;
    let mut absent = Stored::absent();
    let (entry, changed) = absent.acquire(&config, at(now, SEC, 1));
    assert!(!changed, "nothing written for a closed admission");
    let early = granted(entry);
    assert_eq!(early.generation, 0);
    // Another process's failure created the key, naming its generation.
    let mut created = Stored::absent();
    let other = granted(created.acquire(&config, at(now, SEC, 2)).0);
    assert!(created.verdict(&config, &other, Verdict::Failure, now));
    created.generation = 77;
    // The early permit's failure is the second one: the circuit opens.
    assert!(created.verdict(&config, &early, Verdict::Failure, now + 1));
    assert_eq!(created.state(), State::Open);
}

#[test]
fn after_a_reset_no_earlier_permit_counts() {
    let config = config(1, 1);
    let now = 1_700_000_000 * SEC;
    let early = granted(Stored::absent().acquire(&config, at(now, SEC, 1)).0);
    let mut stored = Stored::fresh(5);
    let before = granted(stored.acquire(&config, at(now, SEC, 2)).0);
    let mut stored = Stored::reset(6);
    for ticket in [early, before] {
        assert!(!stored.verdict(&config, &ticket, Verdict::Failure, now));
    }
    assert_eq!(stored.state(), State::Closed);
}

#[test]
fn the_admission_that_first_writes_a_key_names_its_generation_in_its_permit() {
    let config = config(1, 1);
    let now = 1_700_000_000 * SEC;
    // As read from a payload milon/fuse wrote: open, no generation.
    let mut stored = Stored::absent();
    stored.force_open(&config, now - 30 * SEC, 0);
    stored.generation = 0;
    let (entry, changed) = stored.acquire(&config, at(now, SEC, 5));
    assert!(changed);
    let probe = granted(entry);
    assert_eq!(probe.generation, 1005);
    assert_eq!(stored.generation, 1005);
    assert!(stored.verdict(&config, &probe, Verdict::Success, now));
    assert_eq!(stored.state(), State::Closed);
}

#[test]
fn no_more_failures_are_kept_than_the_threshold_needs() {
    let config = config(3, 1);
    let now = 1_700_000_000 * SEC;
    // Another writer's list, longer than this threshold needs (all in the
    // window, oldest first).
    let mut stored = Stored {
        window: counted((0..50).map(|i| now - (50 - i) * SEC).collect()),
        ..Stored::fresh(7)
    };
    let newest = stored.failures()[47..].to_vec();
    // An admission that changes nothing writes nothing, and keeps only
    // what the rules can use.
    let (entry, changed) = stored.acquire(&config, at(now, SEC, 1));
    assert!(!changed);
    assert_eq!(stored.failures(), newest);
    // The next failure opens, as it would have with the whole list.
    stored.verdict(&config, &granted(entry), Verdict::Failure, now);
    assert_eq!(stored.state(), State::Open);
}

/// Open 1 s, doubling up to 5 s, no jitter, probe timeout 10 s; `probes`
/// probes.
fn doubling(threshold: u32, probes: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .open_duration(Duration::from_secs(1))
        .open_backoff(2.0)
        .max_open_duration(Duration::from_secs(5))
        .probe_timeout(Duration::from_secs(10))
        .build()
        .expect("a valid configuration")
}

/// Lets `stored`'s opening end at its `retry_at` and fails the probe
/// granted then; the time of the failure.
fn fail_the_probe(stored: &mut Stored, config: &Config, id: u64) -> u64 {
    let now = stored.phase;
    let probe = granted(stored.acquire(config, at(now, FOREVER, id)).0);
    assert!(probe.is_probe());
    assert!(stored.verdict(config, &probe, Verdict::Failure, now));
    now
}

/// The opening `stored` is in: how long it lasts (seconds) and its n + 1.
fn opening(stored: &Stored, config: &Config) -> (u64, u32) {
    let snapshot = stored.snapshot(config, stored.opened_at);
    let open_for = snapshot.open_for.expect("open").as_nanos();
    (u64::try_from(open_for).unwrap() / SEC, snapshot.openings)
}

#[test]
fn the_nth_opening_in_a_row_lasts_the_backoff_s_duration_up_to_the_cap() {
    let config = doubling(1, 1);
    let mut stored = Stored::fresh(3);
    stored.force_open(&config, 1_700_000_000 * SEC, 0);
    let mut openings = vec![opening(&stored, &config)];
    for id in 0..4 {
        let failed = fail_the_probe(&mut stored, &config, id);
        assert_eq!(stored.opened_at, failed, "reopened at the probe's failure");
        openings.push(opening(&stored, &config));
    }
    assert_eq!(openings, [(1, 1), (2, 2), (4, 3), (5, 4), (5, 5)]);
    // Each opening rejects until its own end.
    let retry_at = stored.phase;
    assert_eq!(
        stored.acquire(&config, at(retry_at - MICRO, FOREVER, 9)).0,
        Entry::Rejected { retry_after: MICRO }
    );
}

#[test]
fn n_starts_over_when_the_circuit_closes_and_when_it_is_forced_open() {
    let config = doubling(1, 1);
    let mut stored = Stored::fresh(3);
    stored.force_open(&config, 1_700_000_000 * SEC, 0);
    fail_the_probe(&mut stored, &config, 1);
    fail_the_probe(&mut stored, &config, 2);
    assert_eq!(opening(&stored, &config), (4, 3));
    // Forced open while the third opening in a row: a first opening.
    let now = stored.opened_at + SEC;
    stored.force_open(&config, now, 0);
    assert_eq!(opening(&stored, &config), (1, 1));
    fail_the_probe(&mut stored, &config, 3);
    assert_eq!(opening(&stored, &config), (2, 2));
    // A successful probe closes it; the next failure opens a first opening.
    let now = stored.phase;
    let probe = granted(stored.acquire(&config, at(now, FOREVER, 4)).0);
    assert!(stored.verdict(&config, &probe, Verdict::Success, now));
    assert_eq!(stored.state(), State::Closed);
    assert_eq!(
        (stored.head.n, stored.snapshot(&config, now).openings),
        (0, 0)
    );
    let closed = granted(stored.acquire(&config, at(now, FOREVER, 5)).0);
    assert!(stored.verdict(&config, &closed, Verdict::Failure, now));
    assert_eq!(opening(&stored, &config), (1, 1));
    // So does a forced close.
    fail_the_probe(&mut stored, &config, 6);
    stored.force_closed(&config);
    assert_eq!(stored.head.n, 0);
}

#[test]
fn a_probe_timeout_starts_a_new_half_open_epoch_without_the_old_leases_or_tickets() {
    let config = doubling(1, 2);
    let mut stored = Stored::fresh(3);
    stored.force_open(&config, 1_700_000_000 * SEC, 0);
    let since = stored.phase;
    // Two probes that hang (their leases outlast the probe timeout).
    let hung: Vec<Ticket> = (1..=2)
        .map(|id| granted(stored.acquire(&config, at(since, FOREVER, id)).0))
        .collect();
    let epoch = stored.epoch;
    assert_eq!(stored.phase, since, "the half-open epoch started then");
    let timeout = since + 10 * SEC;
    assert_eq!(
        stored.acquire(&config, at(timeout - MICRO, FOREVER, 3)).0,
        Entry::Rejected { retry_after: 0 },
        "both slots taken until the probe timeout"
    );
    // At the timeout: a new half-open epoch, whose first probe this is.
    let (entry, changed) = stored.acquire(&config, at(timeout, FOREVER, 4));
    assert!(changed);
    let first = granted(entry);
    assert!(first.is_probe());
    assert_eq!((stored.state(), stored.epoch), (State::HalfOpen, epoch + 1));
    assert_eq!((stored.head.inflight, stored.head.successes), (1, 0));
    assert_eq!(
        stored.leases,
        [Lease {
            id: 4,
            until: timeout + FOREVER
        }]
    );
    assert_eq!(
        stored.phase, timeout,
        "the new epoch starts at the admission"
    );
    assert_eq!(
        stored.snapshot(&config, timeout).openings,
        1,
        "the same opening"
    );
    // The hung probes' verdicts are stale, a failure too.
    let before = stored.clone();
    for ticket in &hung {
        assert!(!stored.verdict(&config, ticket, Verdict::Failure, timeout));
    }
    assert_eq!(stored, before);
    // Two successful new probes close it.
    let second = granted(stored.acquire(&config, at(timeout, FOREVER, 5)).0);
    assert!(stored.verdict(&config, &first, Verdict::Success, timeout));
    assert!(stored.verdict(&config, &second, Verdict::Success, timeout));
    assert_eq!(stored.state(), State::Closed);
}

#[test]
fn a_server_s_hint_lengthens_the_opening_it_causes_up_to_max_open_duration() {
    let config = doubling(2, 1);
    let now = 1_700_000_000 * SEC;
    let hinted = |hints: [Option<u64>; 2]| {
        let mut stored = Stored::fresh(3);
        for (id, hint) in (1..).zip(hints) {
            let ticket = granted(stored.acquire(&config, at(now, FOREVER, id)).0);
            let opens = Opens {
                hint,
                ..Opens::default()
            };
            stored.timed_verdict(&config, &ticket, Verdict::Failure, false, opens, now);
        }
        opening(&stored, &config)
    };
    assert_eq!(hinted([None, Some(3 * SEC)]), (3, 1), "longer than d");
    assert_eq!(hinted([None, Some(SEC / 2)]), (1, 1), "never shorter");
    assert_eq!(hinted([None, Some(3_600 * SEC)]), (5, 1), "capped");
    assert_eq!(
        hinted([Some(3 * SEC), None]),
        (1, 1),
        "a hint on a failure that does not open changes nothing"
    );
    // A failed probe's hint, over the backoff's duration.
    let mut stored = Stored::fresh(3);
    stored.force_open(&config, now, 0);
    let probe = granted(stored.acquire(&config, at(stored.phase, FOREVER, 1)).0);
    let opens = Opens {
        hint: Some(4 * SEC),
        ..Opens::default()
    };
    let failed = stored.phase;
    stored.timed_verdict(&config, &probe, Verdict::Failure, false, opens, failed);
    assert_eq!(opening(&stored, &config), (4, 2));
}

#[test]
fn an_opening_that_is_a_key_s_first_write_names_its_generation_and_draws_from_it() {
    let config = Config::builder()
        .failure_threshold(1)
        .open_jitter(0.5)
        .build()
        .unwrap();
    let now = 1_700_000_000 * SEC + 123 * MICRO;
    let expected = |generation| {
        let mut oracle = Oracle::new(&config).with_seed(generation);
        oracle.force_open(now);
        as_stored(oracle.snapshot(now))
    };
    // Forced open on an absent key.
    let mut forced = Stored::absent();
    forced.force_open(&config, now, 42);
    assert_eq!(forced.generation, 42);
    assert_eq!(forced.snapshot(&config, now), expected(42));
    // Opened by a failure of a permit granted while the key was absent.
    let mut failed = Stored::absent();
    let ticket = granted(failed.acquire(&config, at(now, FOREVER, 1)).0);
    assert_eq!(ticket.generation, 0);
    let opens = Opens {
        generation: 43,
        ..Opens::default()
    };
    assert!(failed.timed_verdict(&config, &ticket, Verdict::Failure, false, opens, now));
    assert_eq!(failed.generation, 43);
    assert_eq!(failed.snapshot(&config, now), expected(43));
    assert_ne!(expected(42), expected(43), "two keys draw apart");
    // A named key keeps its generation.
    let mut named = Stored::fresh(9);
    named.force_open(&config, now, 44);
    assert_eq!(named.generation, 9);
    assert_eq!(named.snapshot(&config, now), expected(9));
}

#[test]
fn an_opening_ends_on_a_whole_microsecond_at_or_after_the_exact_end() {
    let config = Config::builder().open_jitter(0.9).build().unwrap();
    let mut ends = 0;
    for generation in 1..200 {
        let now = 1_700_000_000 * SEC + generation * MICRO;
        let mut stored = Stored::fresh(generation);
        stored.force_open(&config, now, 0);
        let exact = recovery::retry_at(&config, 0, now, generation, None).unwrap();
        assert_eq!(stored.phase % MICRO, 0);
        assert!(stored.phase >= exact && stored.phase - exact < MICRO);
        ends += u64::from(stored.phase != exact);
    }
    assert!(ends > 100, "jitter cuts in nanoseconds: {ends} rounded");
}

/// A store's clock that stepped back to before an opening (a store moved
/// to a server whose clock is behind): a rejection asks for no more than
/// what is left of the opening's duration from its start.
#[test]
fn a_rejection_never_asks_for_more_than_the_opening_from_its_start() {
    let config = config(1, 1);
    let mut stored = Stored::fresh(GENERATION);
    stored.force_open(&config, 50 * SEC, 0);
    let (entry, _) = stored.acquire(&config, at(10 * SEC, SEC, 1));
    assert_eq!(
        entry,
        Entry::Rejected {
            retry_after: 30 * SEC
        }
    );
    let (entry, _) = stored.acquire(&config, at(60 * SEC, SEC, 1));
    assert_eq!(
        entry,
        Entry::Rejected {
            retry_after: 20 * SEC
        }
    );
    let (entry, _) = stored.acquire(&config, at(80 * SEC, SEC, 1));
    let probe = granted(entry);
    stored.verdict(&config, &probe, Verdict::Failure, 80 * SEC);
    let (entry, _) = stored.acquire(&config, at(0, SEC, 2));
    assert_eq!(
        entry,
        Entry::Rejected {
            retry_after: 30 * SEC
        }
    );
}
