//! §10: recovery, how long a circuit stays open, and probes that hang.
//!
//! The circuits here open after one counted failure, for 30 s, with one
//! probe unless a test says otherwise.

use super::configuration::refused_with;
use super::*;

/// One failure opens; open 30 s; one probe.
fn recovering() -> ConfigBuilder {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(secs(30))
}

/// `recovering` with a doubling backoff capped at 300 s.
fn doubling() -> Config {
    build(recovering().open_backoff(2.0).max_open_duration(secs(300)))
}

/// The opening a snapshot shows: its duration and how many in a row.
fn opening(fuse: &Fuse) -> (Option<Duration>, u32) {
    let snapshot = fuse.snapshot();
    (snapshot.open_for, snapshot.openings)
}

/// Waits out the current opening (to its exact end) and fails the probe
/// that admission grants: the next opening in a row.
fn fail_the_probe(fuse: &Fuse, mock: &Mock) {
    let (Some(open_for), _) = opening(fuse) else {
        panic!("the circuit is not open: {:?}", fuse.snapshot());
    };
    let opened_at = fuse.snapshot().opened_at.expect("open");
    set_time(mock, just_before(opened_at + open_for));
    rejection(fuse);
    set_time(mock, opened_at + open_for);
    probe(fuse).failure();
}

#[test]
fn recovery_defaults_are_a_fixed_opening_and_a_probe_timeout_of_the_open_duration() {
    let config = Config::default();
    assert_eq!(config.open_backoff(), fuse_breaker::config::Factor::ONE);
    assert_eq!(config.max_open_duration(), config.open_duration());
    assert_eq!(config.open_jitter(), fuse_breaker::config::Factor::ZERO);
    assert_eq!(config.probe_timeout(), config.open_duration());
}

#[test]
fn recovery_settings_are_validated() {
    refused_with(recovering().open_backoff(0.999), "open_backoff", "0.999");
    refused_with(recovering().open_backoff(10.5), "open_backoff", "10.5");
    refused_with(recovering().open_jitter(1.0), "open_jitter", "1");
    refused_with(
        recovering().max_open_duration(secs(29)),
        "max_open_duration",
        "29s",
    );
    refused_with(
        recovering().max_open_duration(MAX_DURATION + NS),
        "max_open_duration",
        &format!("{:?}", MAX_DURATION + NS),
    );
    refused_with(
        recovering().probe_timeout(Duration::ZERO),
        "probe_timeout",
        "0ns",
    );
    refused_with(
        recovering().probe_timeout(MAX_DURATION + NS),
        "probe_timeout",
        &format!("{:?}", MAX_DURATION + NS),
    );
    // The bounds themselves are valid.
    build(
        recovering()
            .open_backoff(10.0)
            .open_jitter(0.999_999)
            .max_open_duration(MAX_DURATION)
            .probe_timeout(MAX_DURATION),
    );
}

/// "The n-th opening in a row ... lasts min(`max_open_duration`,
/// `open_duration` * `open_backoff^n`)": 30, 60, 120, 240, then the cap.
#[test]
fn recovery_each_failed_probe_lengthens_the_next_opening_up_to_the_cap() {
    let (fuse, mock) = circuit(doubling());
    fail(&fuse);
    assert_eq!(opening(&fuse), (Some(secs(30)), 1));
    let mut seen = vec![30];
    for n in 2..=6 {
        fail_the_probe(&fuse, &mock);
        let (open_for, openings) = opening(&fuse);
        assert_eq!(openings, n);
        seen.push(open_for.expect("open").as_secs());
    }
    assert_eq!(seen, [30, 60, 120, 240, 300, 300]);
    // The rejection counts down from the opening's own duration.
    let opened_at = fuse.snapshot().opened_at.expect("open");
    set_time(&mock, opened_at + secs(100));
    assert_eq!(rejection(&fuse).retry_after(), secs(200));
}

/// "Closing or reset sets n back to 0."
#[test]
fn recovery_closing_and_reset_start_the_row_over() {
    let (fuse, mock) = circuit(doubling());
    fail(&fuse);
    fail_the_probe(&fuse, &mock);
    assert_eq!(opening(&fuse), (Some(secs(60)), 2));
    // Wait it out and let the probe succeed: closed, n back to 0.
    let opened_at = fuse.snapshot().opened_at.expect("open");
    set_time(&mock, opened_at + secs(60));
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(opening(&fuse), (None, 0));
    fail(&fuse);
    assert_eq!(opening(&fuse), (Some(secs(30)), 1));
    fail_the_probe(&fuse, &mock);
    assert_eq!(opening(&fuse).1, 2);
    fuse.reset();
    fail(&fuse);
    assert_eq!(opening(&fuse), (Some(secs(30)), 1));
}

/// "n = 0 when the circuit opens from Closed or by `force_open`."
#[test]
fn recovery_force_open_is_a_first_opening() {
    let (fuse, mock) = circuit(doubling());
    fail(&fuse);
    fail_the_probe(&fuse, &mock);
    fail_the_probe(&fuse, &mock);
    assert_eq!(opening(&fuse), (Some(secs(120)), 3));
    fuse.force_open();
    assert_eq!(opening(&fuse), (Some(secs(30)), 1));
}

/// A slow probe is a failed one (§9): it lengthens the next opening too.
#[test]
fn recovery_a_slow_probe_is_the_next_opening_in_a_row() {
    let config = build(
        recovering()
            .open_backoff(3.0)
            .max_open_duration(secs(3_600))
            .policy(Policy::Rate)
            .minimum_calls(1)
            .failure_rate(100)
            .slow_call_duration(secs(1)),
    );
    let (fuse, mock) = circuit(config);
    fail(&fuse);
    assert_eq!(opening(&fuse), (Some(secs(30)), 1));
    set_time(&mock, secs(30));
    let slow = probe(&fuse);
    set_time(&mock, secs(32));
    slow.success();
    assert_eq!(opening(&fuse), (Some(secs(90)), 2));
}

/// "(1 - `open_jitter` * u), with u uniform in [0, 1) drawn once when the
/// circuit opens": every opening is within its bounds, and over many they
/// spread across them.
#[test]
fn recovery_jitter_stays_within_its_bounds_over_many_openings() {
    let config = build(recovering().open_jitter(0.4));
    let (fuse, mock) = circuit(config);
    let mut durations = Vec::new();
    for _ in 0..1_000 {
        fuse.force_open();
        let open_for = opening(&fuse).0.expect("open");
        assert!(open_for <= secs(30) && open_for > secs(18), "{open_for:?}");
        durations.push(open_for.as_secs_f64());
        mock.increment(Duration::from_millis(7));
    }
    let mean = durations.iter().sum::<f64>() / 1_000.0;
    assert!((mean - 24.0).abs() < 0.6, "mean {mean}");
    assert!(durations.iter().any(|&d| d < 19.0) && durations.iter().any(|&d| d > 29.0));
}

/// "Every caller sees the same `retry_after` for one opening": the rejection
/// counts down from the drawn duration for every caller, on every thread.
#[test]
fn recovery_every_caller_sees_the_same_drawn_opening() {
    let config = build(recovering().open_jitter(0.9));
    let (fuse, mock) = circuit(config);
    fuse.force_open();
    let open_for = opening(&fuse).0.expect("open");
    set_time(&mock, secs(1));
    let expected = open_for.checked_sub(secs(1)).expect("longer than 1 s");
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                barrier.wait();
                for _ in 0..100 {
                    assert_eq!(rejection(&fuse).retry_after(), expected);
                }
            });
        }
    });
    assert_eq!(opening(&fuse).0, Some(open_for));
}

/// Two circuits with one seed and one clock draw the same openings; other
/// seeds draw others (so processes do not all come back at one instant).
#[test]
fn recovery_the_draw_follows_the_seed() {
    let config = build(recovering().open_jitter(0.5));
    let (clock, _mock) = Clock::mock();
    let seeded = |seed| {
        Fuse::builder("seeded")
            .config(config.clone())
            .clock(clock.clone())
            .jitter_seed(seed)
            .build()
    };
    let (a, b) = (seeded(7), seeded(7));
    a.force_open();
    b.force_open();
    assert_eq!(opening(&a), opening(&b));
    let others: std::collections::HashSet<Option<Duration>> = (0..20)
        .map(|seed| {
            let other = seeded(seed);
            other.force_open();
            opening(&other).0
        })
        .collect();
    assert!(others.len() > 15, "{others:?}");
}

/// "When that verdict opens or re-opens the circuit, the opening lasts
/// max(d, min(hint, `max_open_duration`))."
#[test]
fn recovery_a_hint_lengthens_the_opening_it_makes_up_to_the_cap() {
    let config = build(recovering().max_open_duration(secs(300)));
    let (fuse, mock) = circuit(config.clone());
    closed_permit(&fuse).failure_retry_after(secs(120));
    assert_eq!(opening(&fuse), (Some(secs(120)), 1));
    set_time(&mock, just_before(secs(120)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(120));
    // A probe that fails with a longer hint than the cap: the cap.
    probe(&fuse).failure_retry_after(secs(86_400));
    assert_eq!(opening(&fuse), (Some(secs(300)), 2));
    // A hint shorter than the opening changes nothing.
    let (fuse, _mock) = circuit(config);
    closed_permit(&fuse).failure_retry_after(secs(5));
    assert_eq!(opening(&fuse), (Some(secs(30)), 1));
}

/// "A hint on a failure that does not open the circuit changes nothing."
#[test]
fn recovery_a_hint_on_a_failure_that_does_not_open_changes_nothing() {
    let config = build(
        recovering()
            .failure_threshold(2)
            .max_open_duration(secs(300)),
    );
    let (fuse, _mock) = circuit(config);
    closed_permit(&fuse).failure_retry_after(secs(200));
    assert_eq!(fuse.state(), State::Closed);
    fail(&fuse);
    assert_eq!(opening(&fuse), (Some(secs(30)), 1));
}

/// A hint on an owned permit is the same.
#[test]
fn recovery_an_owned_permit_carries_a_hint_too() {
    let config = build(recovering().max_open_duration(secs(300)));
    let (fuse, _mock) = circuit(config);
    fuse.try_acquire_owned()
        .expect("closed")
        .failure_retry_after(secs(90));
    assert_eq!(opening(&fuse), (Some(secs(90)), 1));
}

/// "A `HalfOpen` circuit that has neither closed nor re-opened within
/// `probe_timeout` of entering `HalfOpen` starts over: the next admission after
/// that moves it to a new `HalfOpen` epoch (in-flight 1, successes 0) and is
/// its first probe; verdicts of the earlier probes are stale."
#[test]
fn recovery_a_probe_that_never_returns_cannot_hold_the_circuit_half_open() {
    let config = build(recovering().half_open_probes(2).probe_timeout(secs(10)));
    let (fuse, mock) = circuit(config);
    fail(&fuse);
    set_time(&mock, secs(30));
    let passed = probe(&fuse);
    let hung = probe(&fuse);
    passed.success();
    let also_hung = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 2));
    set_time(&mock, just_before(secs(40)));
    assert_eq!(rejection(&fuse).retry_after(), Duration::ZERO);
    set_time(&mock, secs(40));
    let first = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    // The hung probes' late verdicts are stale, failure or not.
    hung.failure();
    also_hung.success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    first.success();
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
}

/// The same with a future that holds its permit and is never polled again.
#[test]
fn recovery_a_future_kept_but_never_polled_releases_the_circuit_after_the_timeout() {
    let config = build(recovering().probe_timeout(secs(5)));
    let (fuse, mock) = circuit(config);
    fail(&fuse);
    set_time(&mock, secs(30));
    let held = fuse.try_acquire_owned().expect("the probe");
    let mut parked = Box::pin(async move {
        std::future::pending::<()>().await;
        held.success();
    });
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(parked.as_mut().poll(&mut cx).is_pending());
    set_time(&mock, secs(35));
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
    drop(parked);
    assert_eq!(fuse.state(), State::Closed);
}

/// Racing admissions after a probe timeout: exactly one starts the new
/// half-open epoch, and the probes granted never exceed the slots.
#[test]
fn recovery_one_caller_restarts_half_open_after_a_timeout() {
    let config = build(recovering().half_open_probes(3).probe_timeout(secs(10)));
    let (fuse, mock) = circuit(config);
    fail(&fuse);
    set_time(&mock, secs(30));
    let hung: Vec<Permit<'_>> = (0..3).map(|_| probe(&fuse)).collect();
    set_time(&mock, secs(40));
    let barrier = Barrier::new(THREADS);
    let granted = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                barrier.wait();
                if let Ok(permit) = fuse.try_acquire() {
                    assert!(permit.is_probe());
                    granted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    std::mem::forget(permit);
                }
            });
        }
    });
    assert_eq!(granted.into_inner(), 3);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 3));
    drop(hung);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 3));
}
