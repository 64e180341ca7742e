//! §12: a running circuit given another shape of window (another policy,
//! a `rate` window of another width or number of buckets, throttling or
//! timing on or off): it keeps its state, epoch, opening and permits, and
//! its window of calls starts empty.

use super::*;

fn count(threshold: u32) -> Config {
    build(
        Config::builder()
            .failure_threshold(threshold)
            .failure_window(secs(60))
            .open_duration(secs(30)),
    )
}

fn rate(window: u64, buckets: u32) -> ConfigBuilder {
    Config::builder()
        .policy(Policy::Rate)
        .failure_window(secs(window))
        .window_buckets(buckets)
        .minimum_calls(4)
        .failure_rate(50)
        .open_duration(secs(30))
}

#[test]
fn count_to_rate_starts_an_empty_window_of_calls() {
    let (fuse, _mock) = circuit(count(8));
    for _ in 0..5 {
        fail(&fuse);
    }
    fuse.reconfigure(build(rate(10, 10))).unwrap();
    let snapshot = fuse.snapshot();
    assert_eq!(snapshot.state, State::Closed, "nothing transitions");
    assert_eq!((snapshot.calls, snapshot.failed), (0, 0), "{snapshot:?}");
    assert!(snapshot.failures.is_empty(), "{snapshot:?}");
    closed_permit(&fuse).success();
    closed_permit(&fuse).success();
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed, "3 calls < minimum 4");
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open, "2 of 4 failed: 50 %");
}

#[test]
fn rate_to_count_starts_with_no_failures_and_counts_to_the_threshold() {
    let (fuse, _mock) = circuit(build(rate(10, 10).minimum_calls(100)));
    for _ in 0..20 {
        fail(&fuse);
    }
    fuse.reconfigure(count(3)).unwrap();
    assert_eq!(fuse.snapshot().failures.len(), 0);
    fail(&fuse);
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed);
    fail(&fuse);
    assert_eq!(
        fuse.state(),
        State::Open,
        "the new threshold's third failure"
    );
}

#[test]
fn a_rate_window_of_another_width_or_buckets_starts_empty() {
    for new in [rate(20, 10), rate(10, 5)] {
        let (fuse, _mock) = circuit(build(rate(10, 10)));
        for _ in 0..3 {
            closed_permit(&fuse).success();
        }
        fuse.reconfigure(build(new)).unwrap();
        assert_eq!(fuse.snapshot().calls, 0);
        fail(&fuse);
        fail(&fuse);
        closed_permit(&fuse).success();
        assert_eq!(fuse.state(), State::Closed, "3 calls of the new window");
        fail(&fuse);
        assert_eq!(fuse.state(), State::Open, "3 of 4 failed");
    }
}

#[test]
fn an_open_circuit_given_another_policy_keeps_its_opening_and_closes_into_it() {
    let (fuse, mock) = circuit(count(2));
    trip(&fuse);
    let retry = rejection(&fuse).retry_after();
    fuse.reconfigure(build(rate(10, 10).half_open_probes(1)))
        .unwrap();
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(rejection(&fuse).retry_after(), retry, "to the nanosecond");
    mock.increment(secs(30));
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
    for _ in 0..2 {
        closed_permit(&fuse).success();
    }
    fail(&fuse);
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open, "the rate rule opened it");
}

#[test]
fn throttling_switched_on_and_off_keeps_the_count_window() {
    let throttled = build(
        Config::builder()
            .failure_threshold(3)
            .failure_window(secs(60))
            .throttle_k(2.0),
    );
    let (fuse, _mock) = circuit(count(3));
    fail(&fuse);
    fuse.reconfigure(throttled).unwrap();
    assert_eq!(
        fuse.snapshot().failures.len(),
        1,
        "count keeps its failures"
    );
    fail(&fuse);
    assert_eq!(fuse.snapshot().failures.len(), 2);
    fuse.reconfigure(count(3)).unwrap();
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open, "three failures in the window");
}

#[test]
fn timing_switched_on_counts_slow_calls_from_then_on() {
    let (fuse, mock) = circuit(build(rate(10, 10)));
    let slow = build(rate(10, 10).slow_call_duration(secs(1)).slow_call_rate(50));
    fuse.reconfigure(slow).unwrap();
    for _ in 0..4 {
        let permit = closed_permit(&fuse);
        mock.increment(secs(2));
        permit.success();
    }
    assert_eq!(fuse.state(), State::Open, "4 slow calls of 4");
}

#[test]
fn throttling_or_timing_switched_on_keeps_the_rate_window() {
    let throttled = build(rate(10, 10).throttle_k(2.0));
    let timed = build(rate(10, 10).slow_call_duration(secs(1)));
    for new in [throttled, timed] {
        let (fuse, _mock) = circuit(build(rate(10, 10)));
        closed_permit(&fuse).success();
        fail(&fuse);
        fail(&fuse);
        fuse.reconfigure(new.clone()).unwrap();
        let snapshot = fuse.snapshot();
        assert_eq!((snapshot.calls, snapshot.failed), (3, 2), "{new:?}");
        fail(&fuse);
        assert_eq!(fuse.state(), State::Open, "3 of 4 failed: {new:?}");
    }
}

#[test]
fn a_circuit_takes_at_most_64_shapes_of_window_then_names_the_setting() {
    let (fuse, _mock) = circuit(count(7));
    // Settings no other test uses: a slot of its own, not one another
    // test reshaped (slots are reused by circuits of the same settings).
    let rated = build(rate(10, 7));
    // Its first shape, and 63 more.
    for change in 0..63 {
        let next = if change % 2 == 0 {
            rated.clone()
        } else {
            count(7)
        };
        fuse.reconfigure(next).unwrap();
    }
    assert_eq!(fuse.config().policy(), Policy::Rate);
    let err = fuse.reconfigure(count(7)).unwrap_err();
    assert_eq!(err.setting(), "policy", "{err}");
    assert!(err.to_string().contains("64 shapes"), "{err}");
    // Settings of the same shape still change.
    fuse.reconfigure(build(rate(10, 7).failure_rate(20)))
        .unwrap();
    assert_eq!(fuse.config().failure_rate(), 20);
}
