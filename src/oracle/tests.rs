//! The oracle beside the reference circuit where the differential
//! histories never go.

use std::time::Duration;

use super::{Admit, Oracle};
use crate::epoch::Epoch;
use crate::model::Decision;
use crate::reference::Reference;

const SEC: u64 = 1_000_000_000;

/// A clock that steps back and the clock's last instants: the reference
/// and the oracle reject alike, with the same `retry_after` (never more
/// than the opening), and admit at the same instant.
#[test]
fn the_reference_follows_the_oracle_back_in_time_and_at_the_end_of_time() {
    let config = crate::Config::builder()
        .open_backoff(1.5)
        .max_open_duration(Duration::from_mins(5))
        .build()
        .unwrap();
    let last = u64::MAX;
    for opened in [
        50 * SEC,
        last - 100 * SEC,
        last - 30 * SEC,
        last - SEC,
        last,
    ] {
        let mut reference = Reference::starting_at(config.clone(), Epoch::new(0));
        let mut oracle = Oracle::new(&config);
        reference.force_open(opened);
        oracle.force_open(opened);
        let times = [
            0,
            10 * SEC,
            opened.saturating_sub(SEC),
            opened,
            opened.saturating_add(29 * SEC),
            opened.saturating_add(30 * SEC),
            last - 1,
            last,
        ];
        for now in times {
            match (reference.clone().acquire(now), oracle.clone().acquire(now)) {
                (Decision::Rejected { retry_after }, Admit::Rejected(expected)) => {
                    assert_eq!(retry_after, expected, "opened {opened}, now {now}");
                    assert!(retry_after <= 30 * SEC, "opened {opened}, now {now}");
                }
                (Decision::Granted(_), Admit::Granted(_)) => {}
                (model, oracle) => panic!("opened {opened}, now {now}: {model:?} {oracle:?}"),
            }
        }
    }
}

/// SPEC §11 where random histories seldom go: a ramp and the throttle
/// that shed the same share (the throttle's is in force), a relapse within
/// the ramp (the next opening in a row).
#[test]
fn the_reference_follows_the_oracle_through_a_tie_and_a_relapse() {
    let config = crate::Config::builder()
        .failure_threshold(2)
        .half_open_probes(1)
        .open_duration(Duration::from_secs(1))
        .ramp_up(Duration::from_secs(10))
        .ramp_up_floor(50)
        .throttle_k(1.0)
        .max_throttle(50)
        .minimum_calls(1)
        .build()
        .unwrap();
    let mut reference = Reference::starting_at(config.clone(), Epoch::new(0));
    let mut oracle = Oracle::new(&config);
    let agree = |reference: &Reference, oracle: &Oracle, now: u64| {
        let shown = oracle.snapshot(now);
        assert_eq!(shown, reference.snapshot(now), "at {now}");
        shown
    };
    reference.force_open(0);
    oracle.force_open(0);
    // The probe at the end of the opening succeeds: closed, ramping up
    // from one half.
    let (Decision::Granted(probe), Admit::Granted(ticket)) =
        (reference.acquire(SEC), oracle.acquire(SEC))
    else {
        panic!("no probe");
    };
    reference.verdict(probe, crate::Verdict::Success, SEC);
    oracle.end_hinted(ticket, super::Outcome::Success, None, SEC);
    let shown = agree(&reference, &oracle, SEC);
    assert_eq!(shown.graded_by, Some(crate::Grading::RampUp));
    assert_eq!(shown.admission.millionths(), 500_000);
    // Admissions drawn alike until one is granted; its failure makes the
    // throttle's share one half too.
    let mut seed = 0;
    let (grant, ticket) = granted(&mut reference, &mut oracle, SEC, &mut seed);
    reference.verdict(grant, crate::Verdict::Failure, SEC);
    oracle.end_hinted(ticket, super::Outcome::Failure, None, SEC);
    let shown = agree(&reference, &oracle, SEC);
    assert_eq!(shown.graded_by, Some(crate::Grading::Throttle), "a tie");
    assert_eq!(
        (shown.requests, shown.accepts, shown.admission.millionths()),
        (1, 0, 500_000)
    );
    // A second failure within the ramp opens the circuit as the second
    // opening in a row.
    let (grant, ticket) = granted(&mut reference, &mut oracle, 2 * SEC, &mut seed);
    reference.verdict(grant, crate::Verdict::Failure, 2 * SEC);
    oracle.end_hinted(ticket, super::Outcome::Failure, None, 2 * SEC);
    let shown = agree(&reference, &oracle, 2 * SEC);
    assert_eq!((shown.state, shown.openings), (crate::State::Open, 2));
}

/// Admissions at `now` with the generator seeded alike for both, from
/// `seed` on, until both grant a permit (they must shed alike until then).
fn granted(
    reference: &mut Reference,
    oracle: &mut Oracle,
    now: u64,
    seed: &mut u64,
) -> (crate::model::Grant, super::Ticket) {
    loop {
        *seed += 1;
        fastrand::seed(*seed);
        let decided = reference.acquire(now);
        fastrand::seed(*seed);
        match (decided, oracle.acquire(now)) {
            (Decision::Granted(grant), Admit::Granted(ticket)) => return (grant, ticket),
            (decided, Admit::Throttled(expected)) if decided.shed_by().is_some() => {
                assert_eq!(decided.shed_by(), Some(expected));
            }
            (decided, admitted) => panic!("at {now}: {decided:?} {admitted:?}"),
        }
    }
}

/// SPEC §12 where random histories seldom go: a `failure_window` changed
/// by less than its buckets gives buckets of the same width, and still
/// starts an empty window (the fuzzer found the oracle keeping it).
#[test]
fn a_window_changed_by_a_few_nanoseconds_starts_empty() {
    let rate = |window: u64| {
        crate::Config::builder()
            .policy(crate::config::Policy::Rate)
            .failure_window(Duration::from_nanos(window))
            .window_buckets(4)
            .minimum_calls(100)
            .build()
            .unwrap()
    };
    let (before, after) = (rate(6_451), rate(6_448));
    let mut reference = Reference::starting_at(before.clone(), Epoch::new(0));
    let mut oracle = Oracle::new(&before);
    for now in [10, 20] {
        let (Decision::Granted(grant), Admit::Granted(ticket)) =
            (reference.acquire(now), oracle.acquire(now))
        else {
            panic!("closed");
        };
        reference.verdict(grant, crate::Verdict::Success, now);
        oracle.end_hinted(ticket, super::Outcome::Success, None, now);
    }
    assert_eq!(oracle.snapshot(30).calls, 2);
    reference.reconfigure(after.clone(), 30);
    oracle.reconfigure(&after, 30);
    assert_eq!(oracle.snapshot(30), reference.snapshot(30));
    assert_eq!(oracle.snapshot(30).calls, 0);
}
