//! The quorum (SPEC §8, `min_reporters`): the reporters' bookkeeping, and
//! the stored circuit it holds closed.

use super::*;
use crate::config::Policy;
use crate::policy::{Buckets, Failures};
use crate::snapshot::State;
use crate::store::model::stored::{At, Entry, Opens, Stored, Ticket};
use crate::verdict::Verdict;
use std::time::Duration;

const SEC: u64 = 1_000_000_000;

fn config(policy: Policy, quorum: u32) -> Config {
    Config::builder()
        .policy(policy)
        .min_reporters(quorum)
        .failure_window(Duration::from_secs(10))
        .window_buckets(10)
        .build()
        .unwrap()
}

#[test]
fn distinct_reporters_in_the_window_make_the_quorum() {
    let config = config(Policy::Count, 2);
    let window = Window::Count(Failures::default());
    let mut reporters = Reporters::default();
    reporters.record(&config, &window, 7, SEC);
    reporters.record(&config, &window, 7, 2 * SEC);
    assert_eq!(
        reporters.count(&config, &window, 2 * SEC),
        1,
        "one reporter"
    );
    assert!(!reporters.holds(&config, &window, 2 * SEC));
    reporters.record(&config, &window, 9, 3 * SEC);
    assert!(reporters.holds(&config, &window, 3 * SEC));
    // Reporter 7's newest failure (2 s) leaves the window after 12 s.
    assert!(reporters.holds(&config, &window, 12 * SEC));
    assert!(!reporters.holds(&config, &window, 12 * SEC + 1));
}

#[test]
fn only_the_newest_reporters_are_kept() {
    let config = config(Policy::Count, 2);
    let window = Window::Count(Failures::default());
    let mut reporters = Reporters::default();
    for (id, at) in [(1, 1), (2, 2), (3, 3), (1, 4)] {
        reporters.record(&config, &window, id, at * SEC);
    }
    let ids: Vec<u64> = reporters.reports().iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![3, 1]);
    // One out of the window (10 s, inclusive) is dropped when the next is
    // recorded.
    reporters.record(&config, &window, 2, 14 * SEC + 1);
    let ids: Vec<u64> = reporters.reports().iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![2]);
    assert!(reporters.clear());
    assert!(!reporters.clear());
}

#[test]
fn under_rate_a_reporter_counts_while_its_bucket_is_live() {
    let config = config(Policy::Rate, 2);
    let window = Window::Rate(Buckets::default());
    let mut reporters = Reporters::default();
    reporters.record(&config, &window, 1, SEC + 1);
    reporters.record(&config, &window, 2, 5 * SEC);
    // 1 s buckets, 10 of them: bucket 1 is live up to bucket 10.
    assert!(reporters.holds(&config, &window, 11 * SEC - 1));
    assert!(!reporters.holds(&config, &window, 11 * SEC));
}

/// A closed permit of `stored` at `now`.
fn permit(stored: &mut Stored, config: &Config, now: u64) -> Ticket {
    let at = At {
        now,
        lease: SEC,
        lease_id: 1,
        generation: 3,
        draw: 0,
        throttle: None,
    };
    match stored.acquire(config, at).0 {
        Entry::Granted(ticket) => ticket,
        other @ Entry::Rejected { .. } => panic!("not granted: {other:?}"),
    }
}

/// A closed call of `stored` at `now` ending in `verdict`, reported by
/// `reporter`.
fn call(stored: &mut Stored, config: &Config, verdict: Verdict, reporter: u64, now: u64) {
    let ticket = permit(stored, config, now);
    let opens = Opens {
        reporter,
        ..Opens::default()
    };
    stored.timed_verdict(config, &ticket, verdict, false, opens, now);
}

#[test]
fn one_reporter_cannot_open_a_circuit_whose_quorum_is_two_and_a_second_opens_it() {
    for policy in [Policy::Count, Policy::Rate] {
        let config = config(policy, 2)
            .to_builder()
            .failure_threshold(3)
            .minimum_calls(3)
            .build()
            .unwrap();
        let mut stored = Stored::fresh(3);
        let now = 1_700_000_000 * SEC;
        for at in 0..10 {
            call(&mut stored, &config, Verdict::Failure, 7, now + at);
        }
        assert_eq!(stored.state(), State::Closed, "{policy}: one reporter");
        assert_eq!(stored.reporters(&config, now + 10), 1);
        if policy == Policy::Count {
            assert_eq!(stored.snapshot(&config, now + 10).failures.len(), 3);
        }
        call(&mut stored, &config, Verdict::Failure, 9, now + 10);
        assert_eq!(stored.state(), State::Open, "{policy}: two reporters");
        assert_eq!(stored.reporters(&config, now + 10), 0, "open: no window");
    }
}

#[test]
fn under_count_a_success_forgets_the_reporters_with_the_failures() {
    let config = config(Policy::Count, 2)
        .to_builder()
        .failure_threshold(2)
        .build()
        .unwrap();
    let mut stored = Stored::fresh(3);
    let now = 1_700_000_000 * SEC;
    call(&mut stored, &config, Verdict::Failure, 7, now);
    call(&mut stored, &config, Verdict::Success, 7, now + 1);
    assert!(stored.reporters.is_empty());
    call(&mut stored, &config, Verdict::Failure, 9, now + 2);
    assert_eq!(stored.state(), State::Closed, "one failure since");
    call(&mut stored, &config, Verdict::Failure, 7, now + 3);
    assert_eq!(stored.state(), State::Open);
}

#[test]
fn a_reporter_whose_failures_left_the_window_no_longer_counts() {
    let config = config(Policy::Count, 2)
        .to_builder()
        .failure_threshold(2)
        .build()
        .unwrap();
    let mut stored = Stored::fresh(3);
    let now = 1_700_000_000 * SEC;
    call(&mut stored, &config, Verdict::Failure, 7, now);
    call(&mut stored, &config, Verdict::Failure, 9, now + 11 * SEC);
    assert_eq!(stored.state(), State::Closed, "7's failure left the window");
    call(&mut stored, &config, Verdict::Failure, 9, now + 12 * SEC);
    assert_eq!(stored.state(), State::Closed, "two failures, one reporter");
    call(&mut stored, &config, Verdict::Failure, 7, now + 13 * SEC);
    assert_eq!(stored.state(), State::Open);
}

#[test]
fn probes_and_manual_changes_ignore_the_quorum() {
    let config = config(Policy::Count, 3);
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(3);
    stored.force_open(&config, now, 3);
    assert_eq!(stored.state(), State::Open, "forced open by one process");
    let retry = stored.phase;
    let at = At {
        now: retry,
        lease: SEC,
        lease_id: 5,
        generation: 3,
        draw: 0,
        throttle: None,
    };
    let Entry::Granted(probe) = stored.acquire(&config, at).0 else {
        panic!("no probe");
    };
    let opens = Opens {
        reporter: 7,
        ..Opens::default()
    };
    stored.timed_verdict(&config, &probe, Verdict::Failure, false, opens, retry);
    assert_eq!(stored.state(), State::Open, "one failed probe reopens");
    stored.force_closed(&config);
    assert_eq!(stored.state(), State::Closed);
}

#[test]
fn failures_of_no_named_reporter_are_one_reporter_s() {
    let config = config(Policy::Count, 2)
        .to_builder()
        .failure_threshold(2)
        .build()
        .unwrap();
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(3);
    for at in 0..3 {
        call(&mut stored, &config, Verdict::Failure, ANONYMOUS, now + at);
    }
    assert_eq!(stored.state(), State::Closed);
    call(&mut stored, &config, Verdict::Failure, 9, now + 3);
    assert_eq!(stored.state(), State::Open);
}

#[test]
fn the_in_process_engine_ignores_the_quorum() {
    let config = config(Policy::Count, 4)
        .to_builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let fuse = crate::Fuse::builder("billing").config(config).build();
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let _ = fuse.run(|| Err::<(), _>(refused));
    assert_eq!(fuse.snapshot().state, State::Open);
}

#[test]
fn a_window_of_another_policy_starts_over_with_its_reporters() {
    let count = config(Policy::Count, 2)
        .to_builder()
        .failure_threshold(5)
        .build()
        .unwrap();
    let rate = config(Policy::Rate, 2)
        .to_builder()
        .minimum_calls(1)
        .build()
        .unwrap();
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(3);
    call(&mut stored, &count, Verdict::Failure, 7, now);
    // Read under `rate`: the count window's reporter is not the rate
    // window's.
    call(&mut stored, &rate, Verdict::Failure, 9, now + 1);
    assert_eq!(
        stored.state(),
        State::Closed,
        "one reporter of the rate window"
    );
    assert_eq!(stored.reporters(&rate, now + 1), 1);
    call(&mut stored, &rate, Verdict::Failure, 7, now + 2);
    assert_eq!(stored.state(), State::Open);
}
