//! §9: policies, when a closed circuit opens.
//!
//! Under `rate` the circuits here keep a 40 s window in 4 buckets, so a
//! bucket is `w = 10 s` wide: bucket `k` holds the verdicts of
//! `[10k s, 10k s + 10 s)`, and at `now` the window is the bucket of `now`
//! and the 3 before it. Open 30 s, one probe.

use super::configuration::refused_with;
use super::*;

/// §9's bucket width in these circuits.
const W: Duration = Duration::from_secs(10);

/// A `rate` circuit's settings: window 40 s in 4 buckets, open 30 s, one
/// probe, this `minimum_calls` and `failure_rate`.
fn rate(minimum_calls: u32, failure_rate: u32) -> ConfigBuilder {
    Config::builder()
        .policy(Policy::Rate)
        .failure_window(secs(40))
        .window_buckets(4)
        .open_duration(secs(30))
        .half_open_probes(1)
        .minimum_calls(minimum_calls)
        .failure_rate(failure_rate)
}

/// A `rate` circuit that never opens by its failure rate (the window
/// never reaches `minimum_calls`): for reading the window's counts.
fn counting() -> ConfigBuilder {
    rate(10_000, 1)
}

/// The window a snapshot shows: calls, failed calls, slow calls.
fn counts(fuse: &Fuse) -> [u64; 3] {
    let snapshot = fuse.snapshot();
    [snapshot.calls, snapshot.failed, snapshot.slow]
}

/// A closed call admitted now that takes `took` (the clock moves on by
/// that much before its verdict).
fn call(fuse: &Fuse, mock: &Mock, took: Duration, verdict: Verdict) {
    let permit = closed_permit(fuse);
    mock.increment(took);
    permit.conclude(verdict);
}

fn succeed(fuse: &Fuse) {
    closed_permit(fuse).success();
}

/// Opens `fuse` at now with `force_open` and moves to the end of its
/// cooldown, where the next call probes.
fn cooled_down(fuse: &Fuse, mock: &Mock) {
    fuse.force_open();
    mock.increment(fuse.config().open_duration());
}

#[test]
fn policy_rate_settings_defaults() {
    let config = Config::default();
    assert_eq!(config.policy(), Policy::Count);
    assert_eq!(config.failure_rate(), 50);
    assert_eq!(config.minimum_calls(), 20);
    assert_eq!(config.window_buckets(), 10);
    assert_eq!(config.slow_call_duration(), None);
    assert_eq!(config.slow_call_rate(), 100);
}

#[test]
fn policy_rate_settings_are_refused_outside_their_ranges() {
    assert!((10_000..).contains(&MAX_MINIMUM_CALLS));
    assert_eq!(MAX_WINDOW_BUCKETS, 60);
    let base = || Config::builder().policy(Policy::Rate);
    refused_with(base().failure_rate(0), "failure_rate", "0");
    refused_with(base().failure_rate(101), "failure_rate", "101");
    refused_with(base().minimum_calls(0), "minimum_calls", "0");
    let over = MAX_MINIMUM_CALLS + 1;
    refused_with(
        base().minimum_calls(over),
        "minimum_calls",
        &over.to_string(),
    );
    refused_with(base().window_buckets(0), "window_buckets", "0");
    refused_with(base().window_buckets(61), "window_buckets", "61");
    refused_with(
        base().slow_call_duration(Duration::ZERO),
        "slow_call_duration",
        &format!("{:?}", Duration::ZERO),
    );
    let too_long = MAX_DURATION + NS;
    refused_with(
        base().slow_call_duration(too_long),
        "slow_call_duration",
        &format!("{too_long:?}"),
    );
    refused_with(base().slow_call_rate(0), "slow_call_rate", "0");
    refused_with(base().slow_call_rate(101), "slow_call_rate", "101");
    let edges = build(
        base()
            .failure_rate(100)
            .minimum_calls(MAX_MINIMUM_CALLS)
            .window_buckets(60)
            .slow_call_duration(MAX_DURATION)
            .slow_call_rate(1),
    );
    assert_eq!(
        (edges.failure_rate(), edges.slow_call_rate()),
        (100, 1),
        "the edges of 1 ..= 100 are valid"
    );
    assert_eq!(edges.slow_call_duration(), Some(MAX_DURATION));
    assert_eq!(build(base().failure_rate(1)).failure_rate(), 1);
    assert_eq!(build(base().window_buckets(1)).window_buckets(), 1);
}

#[test]
fn policy_rate_a_verdict_falls_in_the_bucket_of_its_time() {
    // Bucket 1 is [10 s, 20 s): a failure at exactly 10 s is in it, so it
    // is in the window until bucket 4's end (50 s) and not at 50 s.
    let (fuse, mock) = circuit(build(counting()));
    set_time(&mock, W);
    fail(&fuse);
    set_time(&mock, just_before(secs(50)));
    assert_eq!(counts(&fuse), [1, 1, 0], "bucket 1 is the oldest of 1..=4");
    set_time(&mock, secs(50));
    assert_eq!(counts(&fuse), [0, 0, 0], "bucket 1 left at 50 s");

    // One nanosecond before 10 s is bucket 0: gone at 40 s.
    let (fuse, mock) = circuit(build(counting()));
    set_time(&mock, just_before(W));
    fail(&fuse);
    set_time(&mock, just_before(secs(40)));
    assert_eq!(counts(&fuse), [1, 1, 0], "bucket 0 is the oldest of 0..=3");
    set_time(&mock, secs(40));
    assert_eq!(counts(&fuse), [0, 0, 0], "bucket 0 left at 40 s");
}

#[test]
fn policy_rate_a_call_counts_in_the_bucket_of_its_verdict_not_its_admission() {
    let (fuse, mock) = circuit(build(counting()));
    set_time(&mock, just_before(W));
    // Admitted in bucket 0, concluded in bucket 1.
    call(&fuse, &mock, NS, Verdict::Failure);
    set_time(&mock, secs(40));
    assert_eq!(counts(&fuse), [1, 1, 0], "in bucket 1, still in the window");
    set_time(&mock, secs(50));
    assert_eq!(counts(&fuse), [0, 0, 0]);
}

#[test]
fn policy_rate_the_window_holds_the_current_bucket_and_the_ones_before_it() {
    let (fuse, mock) = circuit(build(counting()));
    for k in 0..4 {
        set_time(&mock, W * k);
        succeed(&fuse);
        fail(&fuse);
    }
    set_time(&mock, just_before(secs(40)));
    assert_eq!(counts(&fuse), [8, 4, 0], "buckets 0..=3");
    for (k, left) in (4..8).zip(1u64..) {
        set_time(&mock, W * k);
        assert_eq!(
            counts(&fuse),
            [8 - 2 * left, 4 - left, 0],
            "at {k}0 s the window is buckets {}..={k}",
            k - 3
        );
    }

    // One bucket: the window is the current bucket alone.
    let (fuse, mock) = circuit(build(counting().window_buckets(1).failure_window(W)));
    set_time(&mock, just_before(W));
    fail(&fuse);
    assert_eq!(counts(&fuse), [1, 1, 0]);
    set_time(&mock, W);
    assert_eq!(counts(&fuse), [0, 0, 0]);
}

#[test]
fn policy_rate_the_rule_waits_for_minimum_calls() {
    // 100 % failed, but only 3 calls of the 4 needed.
    let (fuse, mock) = circuit(build(rate(4, 50)));
    for _ in 0..3 {
        fail(&fuse);
    }
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(counts(&fuse), [3, 3, 0]);
    set_time(&mock, secs(7));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(7)), "calls == minimum_calls");
}

#[test]
fn policy_rate_calls_that_left_the_window_do_not_count() {
    let (fuse, mock) = circuit(build(rate(2, 100)));
    fail(&fuse);
    set_time(&mock, secs(40));
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed, "one call in the window");
    assert_eq!(counts(&fuse), [1, 1, 0]);
    set_time(&mock, just_before(secs(80)));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(just_before(secs(80))));
}

#[test]
fn policy_rate_failure_rate_edge_is_inclusive() {
    // 1 failure in 4 calls is 25 %: `1 * 100 >= 25 * 4` opens ...
    let (fuse, mock) = circuit(build(rate(4, 25)));
    set_time(&mock, secs(3));
    for _ in 0..3 {
        succeed(&fuse);
    }
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(3)));

    // ... and `1 * 100 >= 26 * 4` does not.
    let (fuse, _mock) = circuit(build(rate(4, 26)));
    for _ in 0..3 {
        succeed(&fuse);
    }
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(counts(&fuse), [4, 1, 0]);
}

#[test]
fn policy_rate_a_success_never_opens_the_circuit() {
    // 3 failures of 3 calls, one call short of the minimum; a success
    // makes it 3 of 4 (75 %), but only a failure or a slow call evaluates.
    let (fuse, mock) = circuit(build(rate(4, 50)));
    for _ in 0..3 {
        fail(&fuse);
    }
    succeed(&fuse);
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(counts(&fuse), [4, 3, 0]);
    set_time(&mock, secs(1));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(1)));
}

#[test]
fn policy_rate_a_success_never_clears_the_window() {
    let (fuse, _mock) = circuit(build(counting()));
    fail(&fuse);
    fail(&fuse);
    succeed(&fuse);
    assert_eq!(counts(&fuse), [3, 2, 0], "the failures stay");
    assert_eq!(
        fuse.snapshot().failures,
        Vec::<Duration>::new(),
        "failures stays empty under rate"
    );
}

#[test]
fn policy_rate_an_ignore_is_never_counted_however_long_it_took() {
    let config = build(counting().slow_call_duration(secs(1)).slow_call_rate(1));
    let (fuse, mock) = circuit(config);
    call(&fuse, &mock, secs(5), Verdict::Ignore);
    let dropped = closed_permit(&fuse);
    mock.increment(secs(5));
    drop(dropped);
    let ignored = fuse.run(|| -> Result<(), io::Error> {
        mock.increment(secs(5));
        Err(io_err(ErrorKind::NotFound))
    });
    assert!(matches!(ignored, Err(Error::Inner(_))), "an ignored error");
    assert_eq!(counts(&fuse), [0, 0, 0]);
    // A success that took as long is counted, and slow.
    call(&fuse, &mock, secs(5), Verdict::Success);
    assert_eq!(counts(&fuse), [1, 0, 1]);
}

#[test]
fn policy_rate_slow_call_duration_edge_is_inclusive() {
    let config = build(counting().slow_call_duration(secs(2)));
    let (fuse, mock) = circuit(config);
    call(&fuse, &mock, just_before(secs(2)), Verdict::Success);
    assert_eq!(counts(&fuse), [1, 0, 0], "a call 1 ns short is not slow");
    call(&fuse, &mock, secs(2), Verdict::Success);
    assert_eq!(counts(&fuse), [2, 0, 1], "admission to verdict >= 2 s");
}

#[test]
fn policy_rate_no_call_is_slow_without_a_slow_call_duration() {
    let (fuse, mock) = circuit(build(counting()));
    // Verdicts at 19 s (bucket 1) and 38 s (bucket 3): both in the window.
    call(&fuse, &mock, secs(19), Verdict::Success);
    call(&fuse, &mock, secs(19), Verdict::Failure);
    assert_eq!(counts(&fuse), [2, 1, 0]);
}

#[test]
fn policy_rate_a_slow_failure_is_counted_failed_and_slow() {
    let config = build(counting().slow_call_duration(secs(1)));
    let (fuse, mock) = circuit(config);
    call(&fuse, &mock, secs(1), Verdict::Failure);
    assert_eq!(counts(&fuse), [1, 1, 1]);
    assert_eq!(fuse.snapshot().slow_failed, Some(1));
}

/// Beside §9's counts, a snapshot tells the slow calls that failed from
/// those that succeeded (resilience4j's slow calls by kind); ignores and
/// quick calls are neither, and the window forgets them as it moves on.
#[test]
fn policy_rate_a_snapshot_splits_slow_calls_by_verdict() {
    let config = build(counting().slow_call_duration(secs(1)));
    let (fuse, mock) = circuit(config);
    let slow_failed = |fuse: &Fuse| fuse.snapshot().slow_failed;
    assert_eq!(slow_failed(&fuse), Some(0));
    call(&fuse, &mock, secs(1), Verdict::Success);
    call(&fuse, &mock, secs(2), Verdict::Failure);
    call(&fuse, &mock, secs(3), Verdict::Failure);
    call(&fuse, &mock, secs(3), Verdict::Ignore);
    call(&fuse, &mock, just_before(secs(1)), Verdict::Failure);
    assert_eq!(counts(&fuse), [4, 3, 3]);
    assert_eq!(slow_failed(&fuse), Some(2));
    mock.increment(secs(40));
    assert_eq!((counts(&fuse), slow_failed(&fuse)), ([0, 0, 0], Some(0)));
    let count = circuit(build(Config::builder().failure_threshold(3))).0;
    assert_eq!(slow_failed(&count), Some(0), "no slow calls under count");
}

#[test]
fn policy_rate_slow_successes_open_at_the_slow_call_rate() {
    // Failures alone never open (failure_rate 100 and none fail); 2 slow
    // calls of 4 reach slow_call_rate 50, and the slow success that makes
    // it so is the call that evaluates the rule.
    let config = build(rate(4, 100).slow_call_duration(secs(1)).slow_call_rate(50));
    let (fuse, mock) = circuit(config);
    succeed(&fuse);
    succeed(&fuse);
    call(&fuse, &mock, secs(1), Verdict::Success);
    assert_eq!(fuse.state(), State::Closed, "3 calls, below the minimum");
    assert_eq!(counts(&fuse), [3, 0, 1]);
    call(&fuse, &mock, secs(1), Verdict::Success);
    assert_eq!(fuse.snapshot(), open(secs(2)));

    // 1 slow call of 4 is below 50 %.
    let config = build(rate(4, 100).slow_call_duration(secs(1)).slow_call_rate(50));
    let (fuse, mock) = circuit(config);
    for _ in 0..3 {
        succeed(&fuse);
    }
    call(&fuse, &mock, secs(1), Verdict::Success);
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(counts(&fuse), [4, 0, 1]);
}

#[test]
fn policy_rate_a_slow_probe_is_a_failed_probe() {
    let config = build(counting().slow_call_duration(secs(1)));
    let (fuse, mock) = circuit(config);
    cooled_down(&fuse, &mock);
    let slow = probe(&fuse);
    mock.increment(secs(1));
    slow.success();
    assert_eq!(fuse.snapshot(), open(secs(31)), "reopened at the verdict");
    assert_eq!(rejection(&fuse).retry_after(), secs(30));

    // A probe 1 ns short of slow closes the circuit.
    mock.increment(secs(30));
    let fast = probe(&fuse);
    mock.increment(just_before(secs(1)));
    fast.success();
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn policy_rate_entering_open_empties_the_window() {
    let (fuse, mock) = circuit(build(rate(3, 50)));
    succeed(&fuse);
    fail(&fuse);
    set_time(&mock, secs(2));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(2)));
    assert_eq!(counts(&fuse), [0, 0, 0], "open: an empty window");

    // force_open too.
    let (fuse, _mock) = circuit(build(counting()));
    fail(&fuse);
    succeed(&fuse);
    fuse.force_open();
    assert_eq!(counts(&fuse), [0, 0, 0]);
}

#[test]
fn policy_rate_a_circuit_that_closes_starts_with_an_empty_window() {
    // Fresh: empty.
    let (fuse, mock) = circuit(build(rate(2, 50)));
    assert_eq!(counts(&fuse), [0, 0, 0]);
    // 1 failure of 2 calls opens; after the cooldown one probe closes.
    succeed(&fuse);
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open);
    mock.increment(secs(30));
    let probe = probe(&fuse);
    probe.success();
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(counts(&fuse), [0, 0, 0], "closed by its probes: empty");
    // The calls before the opening are gone: one failure is one call.
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(counts(&fuse), [1, 1, 0]);

    // force_closed and reset start empty too.
    succeed(&fuse);
    fuse.force_closed();
    assert_eq!(counts(&fuse), [0, 0, 0], "after force_closed");
    fail(&fuse);
    fuse.reset();
    assert_eq!(counts(&fuse), [0, 0, 0], "after reset");
}

#[test]
fn policy_rate_a_stale_verdict_is_not_counted() {
    let (fuse, _mock) = circuit(build(counting()));
    let before = closed_permit(&fuse);
    fuse.force_closed();
    before.failure();
    assert_eq!(counts(&fuse), [0, 0, 0], "the permit's epoch has ended");
    fail(&fuse);
    assert_eq!(counts(&fuse), [1, 1, 0], "a permit of the new epoch counts");
}

#[test]
fn policy_rate_successes_of_other_threads_count_before_a_failure() {
    // THREADS x 10 successes, then failures on this thread: with
    // failure_rate 20 the rule holds once f * 100 >= 20 * (10 THREADS + f),
    // that is f >= 2.5 THREADS.
    let (fuse, _mock) = circuit(build(rate(1, 20)));
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                barrier.wait();
                for _ in 0..10 {
                    succeed(&fuse);
                }
            });
        }
    });
    let calls = 10 * THREADS as u64;
    assert_eq!(counts(&fuse), [calls, 0, 0]);
    let needed = (20 * calls).div_ceil(80);
    for f in 1..needed {
        fail(&fuse);
        assert_eq!(fuse.state(), State::Closed, "{f} failures");
    }
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open, "{needed} failures");
}

#[test]
fn policy_count_is_the_default_and_keeps_its_rule() {
    // The §3 rule, whatever the rate settings say; no rate counts.
    let config = build(
        Config::builder()
            .failure_threshold(3)
            .minimum_calls(1)
            .failure_rate(1)
            .slow_call_duration(secs(1))
            .slow_call_rate(1),
    );
    assert_eq!(config.policy(), Policy::Count);
    let (fuse, mock) = circuit(config);
    fail(&fuse);
    fail(&fuse);
    call(&fuse, &mock, secs(5), Verdict::Success);
    assert_eq!(fuse.snapshot(), closed(vec![]), "a success clears");
    assert_eq!(counts(&fuse), [0, 0, 0]);
    call(&fuse, &mock, secs(5), Verdict::Failure);
    call(&fuse, &mock, secs(5), Verdict::Failure);
    assert_eq!(fuse.snapshot(), closed(vec![secs(10), secs(15)]));
    assert_eq!(counts(&fuse), [0, 0, 0]);
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(15)));
}

#[test]
fn policy_count_a_slow_probe_still_closes() {
    let config = build(
        Config::builder()
            .half_open_probes(1)
            .slow_call_duration(secs(1)),
    );
    let (fuse, mock) = circuit(config);
    cooled_down(&fuse, &mock);
    let slow = probe(&fuse);
    mock.increment(secs(10));
    slow.success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}
