use super::*;
use crate::oracle::{Admit, Oracle, Outcome};
use proptest::prelude::*;

const SEC: u64 = 1_000_000_000;

fn config(threshold: u32, probes: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .failure_window(std::time::Duration::from_mins(1))
        .open_duration(std::time::Duration::from_secs(30))
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
    }
}

fn granted(entry: Entry) -> Ticket {
    match entry {
        Entry::Granted(ticket) => ticket,
        Entry::Rejected { .. } => panic!("rejected"),
    }
}

#[derive(Clone, Debug)]
enum Op {
    Acquire,
    /// Ends the permit at this index (modulo those held).
    End(usize, Verdict),
    Wait(u64),
    ForceOpen,
    ForceClosed,
}

fn op() -> impl Strategy<Value = Op> {
    let verdict = prop_oneof![
        Just(Verdict::Success),
        Just(Verdict::Failure),
        Just(Verdict::Ignore)
    ];
    prop_oneof![
        4 => Just(Op::Acquire),
        4 => (any::<usize>(), verdict).prop_map(|(at, verdict)| Op::End(at, verdict)),
        2 => (0..40 * SEC).prop_map(Op::Wait),
        1 => Just(Op::ForceOpen),
        1 => Just(Op::ForceClosed),
    ]
}

fn outcome(verdict: Verdict) -> Outcome {
    match verdict {
        Verdict::Success => Outcome::Success,
        Verdict::Failure => Outcome::Failure,
        Verdict::Ignore => Outcome::Ignore,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// With leases that never end, a stored circuit is the circuit of SPEC
    /// §3: the same admissions and the same snapshot after every step as
    /// the oracle, which shares no code with the model.
    #[test]
    fn a_stored_circuit_follows_the_oracle(
        threshold in 1u32..5,
        probes in 1u32..4,
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let config = config(threshold, probes);
        let mut oracle = Oracle::new(&config);
        let mut stored = Stored::fresh(7);
        let mut held = Vec::new();
        let mut now = 1_700_000_000 * SEC;
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Acquire => {
                    let (entry, _) = stored.acquire(&config, at(now, FOREVER, step as u64));
                    match (oracle.acquire(now), entry) {
                        (Admit::Granted(expected), Entry::Granted(ticket)) => {
                            prop_assert_eq!(expected.probe, ticket.is_probe());
                            held.push((expected, ticket));
                        }
                        (Admit::Rejected(expected), Entry::Rejected { retry_after }) => {
                            prop_assert_eq!(expected, retry_after);
                        }
                        (expected, entry) => {
                            prop_assert!(false, "oracle {:?}, store {:?}", expected, entry);
                        }
                    }
                }
                Op::End(index, verdict) if !held.is_empty() => {
                    let (expected, ticket) = held.remove(index % held.len());
                    oracle.end(expected, outcome(verdict), now);
                    stored.verdict(&config, &ticket, verdict, now);
                }
                Op::End(..) => {}
                Op::Wait(nanos) => now += nanos,
                Op::ForceOpen => {
                    oracle.force_open(now);
                    stored.force_open(&config, now);
                }
                Op::ForceClosed => {
                    oracle.force_closed();
                    stored.force_closed(&config);
                }
            }
            prop_assert_eq!(stored.snapshot(&config, now), oracle.snapshot(now), "step {}", step);
            prop_assert_eq!(stored.leases.len(), stored.head.inflight as usize);
        }
    }
}

/// A store's circuit that is open and cooled down, its probe granted at
/// `now` under lease `id`.
fn probing(config: &Config, now: u64, lease: u64) -> (Stored, Ticket) {
    let mut stored = Stored::fresh(1);
    stored.force_open(config, now - 30 * SEC);
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
    stored.force_open(&config, SEC);
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
    stored.force_open(&config, now - 30 * SEC);
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
