//! §11: graded admission, the ramp-up after recovery and adaptive
//! throttling, on a mock clock with this thread's draws seeded.

use super::configuration::refused_with;
use super::*;
use fuse_breaker::Grading;

/// One failure opens; open 10 s; one probe; a ramp of 100 s from 10 %.
fn ramping() -> ConfigBuilder {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(secs(10))
        .ramp_up(secs(100))
}

/// Opens `fuse` and closes it again through its probe at the end of the
/// opening: the ramp starts then (returned).
fn recover(fuse: &Fuse, mock: &Mock) -> Duration {
    fuse.force_open();
    let snapshot = fuse.snapshot();
    let end = snapshot.opened_at.expect("open") + snapshot.open_for.expect("open");
    set_time(mock, end);
    probe(fuse).success();
    assert_eq!(fuse.state(), State::Closed);
    end
}

/// Of `calls` admissions now, how many were admitted; each admitted call
/// succeeds, and each rejection must be a closed circuit's shedding.
fn admitted_of(fuse: &Fuse, calls: u32, why: Grading) -> u32 {
    let mut admitted = 0;
    for _ in 0..calls {
        match fuse.try_acquire() {
            Ok(permit) => {
                admitted += 1;
                permit.success();
            }
            Err(err) => {
                assert_eq!(err.throttled(), Some(why), "{err}");
                assert_eq!(err.retry_after(), Duration::ZERO);
            }
        }
    }
    admitted
}

fn share(admitted: u32, calls: u32) -> f64 {
    f64::from(admitted) / f64::from(calls)
}

#[test]
fn graded_defaults_are_off_and_settings_are_validated() {
    let config = Config::default();
    assert_eq!(config.ramp_up(), None);
    assert_eq!(config.ramp_up_floor(), 10);
    assert_eq!(config.throttle_k(), None);
    assert_eq!(config.max_throttle(), 90);
    refused_with(Config::builder().ramp_up(Duration::ZERO), "ramp_up", "0ns");
    refused_with(
        Config::builder().ramp_up(MAX_DURATION + NS),
        "ramp_up",
        &format!("{:?}", MAX_DURATION + NS),
    );
    refused_with(Config::builder().ramp_up_floor(0), "ramp_up_floor", "0");
    refused_with(Config::builder().ramp_up_floor(101), "ramp_up_floor", "101");
    refused_with(Config::builder().throttle_k(0.5), "throttle_k", "0.5");
    refused_with(Config::builder().throttle_k(10.5), "throttle_k", "10.5");
    refused_with(Config::builder().max_throttle(0), "max_throttle", "0");
    refused_with(Config::builder().max_throttle(101), "max_throttle", "101");
    assert!(
        Config::builder()
            .throttle_k(1.0)
            .max_throttle(100)
            .build()
            .is_ok()
    );
}

#[test]
fn graded_the_ramp_admits_its_share_at_every_point() {
    fastrand::seed(11);
    let (fuse, mock) = circuit(build(ramping()));
    let start = recover(&fuse, &mock);
    for point in 0..10u32 {
        // 5 %, 15 %, ... 95 % of the ramp: the share is max(10 %, t / 100 s).
        let t = Duration::from_millis(5_000 + 10_000 * u64::from(point));
        set_time(&mock, start + t);
        let expected = (t.as_secs_f64() / 100.0).max(0.10);
        let got = share(admitted_of(&fuse, 10_000, Grading::RampUp), 10_000);
        assert!(
            (got - expected).abs() <= 0.03,
            "at {t:?} of the ramp: admitted {got:.3}, expected {expected:.3}"
        );
        let shown = fuse.snapshot();
        assert_eq!(shown.graded_by, Some(Grading::RampUp));
        assert!(
            (shown.admission.to_f64() - expected).abs() < 1e-5,
            "{shown:?}"
        );
    }
    set_time(&mock, start + secs(100));
    assert_eq!(
        admitted_of(&fuse, 1_000, Grading::RampUp),
        1_000,
        "over at ramp_up"
    );
    let shown = fuse.snapshot();
    assert_eq!((shown.graded_by, shown.admission.to_f64()), (None, 1.0));
}

#[test]
fn graded_the_ramp_starts_at_its_floor() {
    fastrand::seed(12);
    let (fuse, mock) = circuit(build(ramping().ramp_up_floor(30)));
    let start = recover(&fuse, &mock);
    for t in [Duration::ZERO, secs(10), secs(29)] {
        set_time(&mock, start + t);
        let got = share(admitted_of(&fuse, 10_000, Grading::RampUp), 10_000);
        assert!((got - 0.30).abs() <= 0.03, "at {t:?}: admitted {got:.3}");
    }
}

#[test]
fn graded_a_call_the_ramp_sheds_counts_as_nothing() {
    fastrand::seed(13);
    let rate = ramping()
        .policy(Policy::Rate)
        .minimum_calls(1_000)
        .ramp_up_floor(1);
    let (fuse, mock) = circuit(build(rate));
    recover(&fuse, &mock);
    let mut shed = 0;
    for _ in 0..200 {
        match fuse.try_acquire() {
            Ok(permit) => permit.ignore(),
            Err(err) => {
                assert_eq!(err.throttled(), Some(Grading::RampUp));
                assert!(
                    err.to_string().contains("shed this call (ramp_up)"),
                    "{err}"
                );
                shed += 1;
            }
        }
    }
    assert!(shed > 150, "the floor is 1 %: {shed} of 200 shed");
    let shown = fuse.snapshot();
    assert_eq!(
        (shown.calls, shown.failed, shown.requests),
        (0, 0, 0),
        "{shown:?}"
    );
}

#[test]
fn graded_a_relapse_during_the_ramp_is_the_next_opening_in_a_row() {
    fastrand::seed(14);
    let config = build(ramping().open_backoff(2.0).max_open_duration(secs(300)));
    let (fuse, mock) = circuit(config);
    let start = recover(&fuse, &mock);
    set_time(&mock, start + secs(50));
    let permit = loop {
        if let Ok(permit) = fuse.try_acquire() {
            break permit;
        }
    };
    permit.failure();
    let shown = fuse.snapshot();
    assert_eq!(shown.state, State::Open);
    assert_eq!(shown.openings, 2, "opened as if the probe had failed");
    assert_eq!(
        shown.open_for,
        Some(secs(20)),
        "the backoff of a second opening"
    );
}

#[test]
fn graded_a_failure_after_the_ramp_is_a_first_opening() {
    fastrand::seed(15);
    let config = build(ramping().open_backoff(2.0).max_open_duration(secs(300)));
    let (fuse, mock) = circuit(config);
    let start = recover(&fuse, &mock);
    // No call during the ramp: the first one after it trips.
    set_time(&mock, start + secs(100));
    fail(&fuse);
    let shown = fuse.snapshot();
    assert_eq!((shown.state, shown.openings), (State::Open, 1));
    assert_eq!(shown.open_for, Some(secs(10)));
}

#[test]
fn graded_force_closed_and_reset_close_without_a_ramp() {
    fastrand::seed(16);
    let (fuse, mock) = circuit(build(ramping()));
    fail(&fuse);
    fuse.force_closed();
    assert_eq!(admitted_of(&fuse, 1_000, Grading::RampUp), 1_000);
    recover(&fuse, &mock);
    assert!(admitted_of(&fuse, 1_000, Grading::RampUp) < 200, "ramping");
    fuse.force_closed();
    assert_eq!(
        admitted_of(&fuse, 1_000, Grading::RampUp),
        1_000,
        "force_closed"
    );
    recover(&fuse, &mock);
    fuse.reset();
    assert_eq!(admitted_of(&fuse, 1_000, Grading::RampUp), 1_000, "reset");
    let shown = fuse.snapshot();
    assert_eq!((shown.graded_by, shown.openings), (None, 0));
}

/// A `count` circuit that never trips here, throttling with K = 2 over a
/// 10 s window of 10 buckets, from 20 requests, at most 90 %.
fn throttling() -> ConfigBuilder {
    Config::builder()
        .failure_threshold(MAX_FAILURE_THRESHOLD)
        .failure_window(secs(10))
        .window_buckets(10)
        .minimum_calls(20)
        .throttle_k(2.0)
}

/// The throttle's probability by SPEC §11's formula.
fn formula(config: &Config, requests: u64, accepts: u64) -> f64 {
    if requests < u64::from(config.minimum_calls()) {
        return 0.0;
    }
    let k = config.throttle_k().expect("throttling").to_f64();
    #[allow(clippy::cast_precision_loss)]
    let p = (requests as f64 - k * accepts as f64) / (requests as f64 + 1.0);
    p.clamp(0.0, f64::from(config.max_throttle()) / 100.0)
}

#[test]
fn graded_no_call_is_throttled_below_minimum_calls() {
    fastrand::seed(21);
    let (fuse, _mock) = circuit(build(throttling().minimum_calls(50)));
    for _ in 0..49 {
        closed_permit(&fuse).failure();
    }
    let shown = fuse.snapshot();
    assert_eq!(
        (shown.requests, shown.accepts, shown.graded_by),
        (49, 0, None)
    );
}

#[test]
fn graded_the_throttle_follows_its_formula_a_bucket_behind() {
    fastrand::seed(22);
    let config = build(throttling());
    let (fuse, mock) = circuit(config.clone());
    let mut asked = (0u64, 0u64);
    for second in 0..30u64 {
        set_time(&mock, secs(second));
        // What the window held when this bucket began: the share in use
        // from the first request of the bucket on.
        let before = fuse.snapshot();
        let mut throttled = 0;
        for call in 0..50 {
            match fuse.try_acquire() {
                Ok(permit) if call % 5 == 0 => permit.success(),
                Ok(permit) => permit.failure(),
                Err(err) => {
                    assert_eq!(err.throttled(), Some(Grading::Throttle));
                    throttled += 1;
                }
            }
            if call == 0 && second > 0 {
                // The bucket's first request recomputed the share from the
                // window it saw (its own request included).
                let shown = fuse.snapshot();
                let p = formula(&config, shown.requests, shown.accepts);
                let admitted = shown.admission.to_f64();
                assert!(
                    (admitted - (1.0 - p)).abs() < 1e-5,
                    "second {second}: admission {admitted} for {:?}, formula {p}",
                    (shown.requests, shown.accepts)
                );
                assert!(p <= 0.9 + 1e-9);
            }
        }
        let _ = before;
        asked.0 += 50;
        asked.1 += throttled;
    }
    let shown = fuse.snapshot();
    assert_eq!(shown.state, State::Closed);
    assert_eq!(shown.graded_by, Some(Grading::Throttle));
    assert!(asked.1 > 0, "something was throttled");
    // Every call asked: 50 a bucket, 10 buckets in the window.
    assert_eq!(shown.requests, 500);
}

#[test]
fn graded_the_throttle_never_sheds_more_than_max_throttle() {
    fastrand::seed(23);
    let config = build(throttling().max_throttle(40));
    let (fuse, mock) = circuit(config);
    // Every call fails: the formula tends to 1, the cap holds it at 40 %.
    for second in 0..20u64 {
        set_time(&mock, secs(second));
        for _ in 0..100 {
            if let Ok(permit) = fuse.try_acquire() {
                permit.failure();
            }
        }
    }
    // 10,000 more, 100 a second (fewer failures in the window than the
    // threshold).
    let mut admitted = 0;
    for second in 20..120u64 {
        set_time(&mock, secs(second));
        for _ in 0..100 {
            match fuse.try_acquire() {
                Ok(permit) => {
                    admitted += 1;
                    permit.failure();
                }
                Err(err) => assert_eq!(err.throttled(), Some(Grading::Throttle)),
            }
        }
        let shown = fuse.snapshot();
        assert!((shown.admission.to_f64() - 0.6).abs() < 1e-5, "{shown:?}");
    }
    assert!(
        (share(admitted, 10_000) - 0.6).abs() <= 0.03,
        "admitted {admitted} of 10000"
    );
}

#[test]
fn graded_an_ignore_is_neither_a_request_nor_an_accept() {
    fastrand::seed(24);
    let (fuse, _mock) = circuit(build(throttling()));
    for _ in 0..30 {
        closed_permit(&fuse).ignore();
        drop(closed_permit(&fuse));
    }
    closed_permit(&fuse).success();
    closed_permit(&fuse).failure();
    let shown = fuse.snapshot();
    assert_eq!((shown.requests, shown.accepts), (2, 1), "{shown:?}");
}

#[test]
fn graded_the_throttle_sheds_an_overloaded_dependency_to_about_k_times_its_capacity() {
    fastrand::seed(25);
    // A dependency that accepts 250 calls a second and fails the rest,
    // offered 1,000 calls a second (one a millisecond); K = 2. (How soon
    // the throttle lets every call through again once the capacity is
    // back depends on how deep the overload was: see docs/policies.md.)
    let config = build(throttling().max_throttle(100));
    let (fuse, mock) = circuit(config);
    let mut admitted_per_second = Vec::new();
    let mut capacity = 250;
    for second in 0..40u64 {
        if second == 20 {
            capacity = u32::MAX;
        }
        let (mut admitted, mut accepted) = (0u32, 0u32);
        for ms in 0..1_000u64 {
            set_time(&mock, secs(second) + Duration::from_millis(ms));
            if let Ok(permit) = fuse.try_acquire() {
                admitted += 1;
                if accepted < capacity {
                    accepted += 1;
                    permit.success();
                } else {
                    permit.failure();
                }
            }
        }
        admitted_per_second.push(admitted);
    }
    // Over the window (10 s) after the first one, about K x C a second.
    let second_window: u32 = admitted_per_second[10..20].iter().sum();
    let rate = f64::from(second_window) / 10.0;
    assert!(
        (rate - 500.0).abs() <= 50.0,
        "admitted {rate} a second, expected about 500: {admitted_per_second:?}"
    );
    // One window after the capacity returned, every call.
    for (second, &admitted) in admitted_per_second.iter().enumerate().skip(30) {
        assert_eq!(admitted, 1_000, "second {second}: {admitted_per_second:?}");
    }
}
