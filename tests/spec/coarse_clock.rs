//! The coarse clock keeps every rule.

use super::*;

#[test]
fn coarse_clock_on_a_mock_clock_follows_the_mock() {
    let (clock, mock) = Clock::mock();
    let fuse = Fuse::builder("coarse")
        .config(config(1, 1))
        .clock(clock)
        .coarse_clock(true)
        .build();
    set_time(&mock, secs(5));
    fuse.try_acquire().expect("closed").failure();
    assert_eq!(fuse.snapshot(), open(secs(5)));
    set_time(&mock, just_before(secs(35)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(35));
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
}

/// A `rate` circuit on the real coarse time (the quick closed path):
/// successes count as calls, a call longer than `slow_call_duration`
/// counts as slow, a failure as failed; none is lost or counted twice.
#[test]
fn coarse_rate_counts_calls_and_times_them_on_the_coarse_time() {
    let config = Config::builder()
        .policy(fuse_breaker::config::Policy::Rate)
        .minimum_calls(1_000)
        .slow_call_duration(Duration::from_millis(20))
        .build()
        .expect("a valid configuration");
    let fuse = Fuse::builder("coarse-rate")
        .config(config)
        .coarse_clock(true)
        .build();
    for _ in 0..100 {
        fuse.try_acquire().expect("closed").success();
    }
    let slow = fuse.try_acquire().expect("closed");
    // The coarse time is at most a few milliseconds old: 60 ms is slow.
    std::thread::sleep(Duration::from_millis(60));
    slow.success();
    fuse.try_acquire().expect("closed").failure();
    let snapshot = fuse.snapshot();
    assert_eq!(
        (snapshot.calls, snapshot.failed, snapshot.slow),
        (102, 1, 1),
        "{snapshot:?}"
    );
    assert_eq!(fuse.state(), State::Closed);
}

/// A throttling `count` circuit on the real coarse time (SPEC §11; its
/// healthy successes take the quick path, an accept added to the thread's
/// lane of the throttle's window): every success is a request and an
/// accept, every failure a request alone, on this thread and others;
/// none is lost or counted twice.
#[test]
fn coarse_throttle_counts_requests_and_accepts_on_the_coarse_time() {
    let config = Config::builder()
        .failure_threshold(MAX_FAILURE_THRESHOLD)
        .throttle_k(2.0)
        .build()
        .expect("a valid configuration");
    let fuse = Fuse::builder("coarse-throttle")
        .config(config)
        .coarse_clock(true)
        .build();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for call in 0..2_000 {
                    let permit = fuse.try_acquire().expect("closed, nothing shed");
                    if call % 100 == 0 {
                        permit.failure();
                    } else {
                        permit.success();
                    }
                }
            });
        }
    });
    let shown = fuse.snapshot();
    assert_eq!((shown.requests, shown.accepts), (8_000, 7_920), "{shown:?}");
    assert_eq!(shown.graded_by, None, "{shown:?}");
}
