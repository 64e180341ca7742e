//! Fuse's `rate` policy (SPEC §9) beside its `count` policy and the peers'
//! rate-based policies, in the same run.
//!
//! Groups (`scripts/bench-report` prints their ratios: Fuse `rate` against
//! Fuse `count`, and each peer against Fuse `rate`):
//!
//! - `rate_closed_success`: a closed breaker, every call succeeds, one
//!   thread, as a user's loop meets it (the rows of `user_loop.rs`: the
//!   whole `Result` through `black_box`).
//! - `rate_closed_success_threads=2`: the same rows on two threads sharing
//!   one breaker (per thread, the slowest thread's time), with how long
//!   the threads ran together printed (see [`two_threads`]).
//! - `rate_closed_failure`: every call a counted failure on a circuit kept
//!   closed: Fuse's rows record 4095 failures between two `force_closed`
//!   (untimed), which `count` with `failure_threshold` 4096 and `rate` with
//!   `minimum_calls` at its maximum both leave closed, every failure inside
//!   the window; the peers' thresholds are ones they never reach.
//!
//! Rows (beside the baselines of `user_loop.rs`, and
//! `baseline/closure_2_loads_count`, the floor of a per-call count: see
//! [`counter_baseline`]):
//!
//! - `fuse`: the `count` policy (the defaults; the reference of the
//!   ratios), `fuse_rate`: `rate` with its defaults (50 %, 20 calls, 10
//!   buckets over 60 s), `fuse_rate_slow`: `rate` with a
//!   `slow_call_duration` of 1 s (admission reads the clock, and the
//!   verdict times the call), `fuse_rate_slow_coarse`: the same on Fuse's
//!   coarse clock (one atomic load for each read).
//! - `failsafe_success_rate`: failsafe's `success_rate_over_time_window`
//!   alone (required success rate 0.5, 20 requests, 60 s; its exponentially
//!   weighted average and windowed request counter).
//! - `recloser_rate`: recloser's failure rate over a ring buffer of the
//!   last 100 calls (error rate 0.5).
//! - `tower_count_window`, `tower_count_window_slow` and
//!   `tower_time_window`: tower-resilience's sliding-window failure rate
//!   (0.5, 20 calls minimum), count-based over 100 calls (and with a slow
//!   call threshold of 1 s), or time-based. Its time-based window keeps one
//!   record per call and counts all of them on every call, so each call
//!   costs time in proportion to the calls inside the window: its rows use
//!   a window of 10 ms, which fills within criterion's warm-up (over Fuse's
//!   60 s the figure would depend on how long the run had lasted). Driven
//!   by the no-op-waker executor ([`poll_now`](super::adapters::poll_now)),
//!   its result reduced to an `Outcome` by the adapter.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::Criterion;
use criterion::measurement::WallTime;
use failsafe::failure_policy::{SuccessRateOverTimeWindow, success_rate_over_time_window};
use fuse_breaker::{
    Config, Fuse, State, config::MAX_FAILURE_THRESHOLD, config::MAX_MINIMUM_CALLS, config::Policy,
};
use tower_resilience_circuitbreaker::SlidingWindowType;

use super::user_loop::{baselines, call, fuse_row, fuse_run_with, row, two_threads};
use super::{Bencher, BenchmarkGroup, Breaker, LONG, Tower, fail, succeed, timed};
use crate::cases::{bench_calls, fuse_coarse, still_closed, tower_builder};

/// The window of every time-based row but tower-resilience's.
const WINDOW: Duration = Duration::from_mins(1);

/// tower-resilience's time-based window (see the module doc).
const TOWER_TIME_WINDOW: Duration = Duration::from_millis(10);

/// The slow-call threshold of the `_slow` rows: no call here takes it.
const SLOW: Duration = Duration::from_secs(1);

/// Failures recorded between two `force_closed` of Fuse's failure rows.
const CHUNK: u64 = MAX_FAILURE_THRESHOLD as u64 - 1;

type FailsafeRate =
    failsafe::StateMachine<SuccessRateOverTimeWindow<failsafe::backoff::Constant>, ()>;

/// `rate` with its defaults.
fn fuse_rate() -> fuse_breaker::config::ConfigBuilder {
    Config::builder().policy(Policy::Rate)
}

fn config(builder: fuse_breaker::config::ConfigBuilder) -> Config {
    builder.build().expect("a valid configuration")
}

/// The four Fuse circuits of a group, by row id: `count`, `rate`, `rate`
/// with a slow-call threshold, the same on the coarse clock.
fn fuse_rows(
    name: &str,
    count: Config,
    rate: fuse_breaker::config::ConfigBuilder,
) -> [(&'static str, Fuse); 4] {
    let slow = config(rate.clone().slow_call_duration(SLOW));
    [
        ("fuse", Fuse::new(format!("{name}-count"), count)),
        ("fuse_rate", Fuse::new(format!("{name}-rate"), config(rate))),
        (
            "fuse_rate_slow",
            Fuse::new(format!("{name}-rate-slow"), slow.clone()),
        ),
        (
            "fuse_rate_slow_coarse",
            fuse_coarse(&format!("{name}-rate-slow-coarse"))
                .config(slow)
                .build(),
        ),
    ]
}

/// failsafe's success-rate policy requiring `required` (0.5: open below
/// half the calls succeeding; 0.0: never open).
fn failsafe_rate(required: f64) -> FailsafeRate {
    let backoff = failsafe::backoff::constant(LONG);
    let policy = success_rate_over_time_window(required, 20, WINDOW, backoff);
    failsafe::Config::new().failure_policy(policy).build()
}

/// recloser's ring of 100 calls, opening at `error_rate` (above 1: never).
fn recloser_rate(error_rate: f32) -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(error_rate)
        .closed_len(100)
        .open_wait(LONG)
        .build()
}

/// tower-resilience's sliding windows by row id: count-based over 100
/// calls, the same with a slow-call threshold, time-based; each opening at
/// 50 % once it holds `minimum` calls.
fn towers(minimum: usize) -> [(&'static str, Tower); 3] {
    let base = || {
        tower_builder()
            .failure_rate_threshold(0.5)
            .minimum_number_of_calls(minimum)
            .wait_duration_in_open(LONG)
    };
    let count = || {
        base()
            .sliding_window_type(SlidingWindowType::CountBased)
            .sliding_window_size(100)
    };
    [
        ("tower_count_window", Tower::new(count())),
        (
            "tower_count_window_slow",
            Tower::new(count().slow_call_duration_threshold(SLOW)),
        ),
        (
            "tower_time_window",
            Tower::new(
                base()
                    .sliding_window_type(SlidingWindowType::TimeBased)
                    .sliding_window_duration(TOWER_TIME_WINDOW),
            ),
        ),
    ]
}

/// One call of a tower-resilience handle, as a user's loop sees it.
fn tower_call(tower: &mut Tower) -> super::Outcome {
    tower.call(succeed)
}

pub(crate) fn rate_closed_success(c: &mut Criterion) {
    let mut group = c.benchmark_group("rate_closed_success");
    baselines(&mut group);
    counter_baseline(&mut group);
    let fuses = fuse_rows("rate-success", Config::default(), fuse_rate());
    for (id, fuse) in &fuses {
        fuse_row(&mut group, id, fuse);
    }
    let failsafe = failsafe_rate(0.5);
    row(&mut group, "failsafe_success_rate", || {
        failsafe::CircuitBreaker::call(&failsafe, call)
    });
    let recloser = recloser_rate(0.5);
    row(&mut group, "recloser_rate", || recloser.call(call));
    for (id, mut tower) in towers(20) {
        row(&mut group, id, || tower_call(&mut tower));
        assert_eq!(tower.closed(), Some(true), "{id} is not closed");
    }
    group.finish();
    for (id, fuse) in &fuses {
        assert_eq!(fuse.state(), State::Closed, "{id} is not closed");
    }
}

/// The floor of any per-call count: the closure, the two loads of
/// `baseline/closure_2_loads`, and one count added with a load and a store
/// to a counter only this thread writes (what a `rate` success must do at
/// least). Each call's store is the next call's load, so the row also
/// shows what the machine's store-to-load forwarding costs.
fn counter_baseline(group: &mut BenchmarkGroup<'_, WallTime>) {
    let word = AtomicU64::new(0);
    let count = AtomicU64::new(0);
    row(group, "baseline/closure_2_loads_count", || {
        let before = word.load(Ordering::Acquire);
        let out = call();
        black_box((before, word.load(Ordering::Acquire)));
        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        out
    });
}

pub(crate) fn rate_closed_success_threads(c: &mut Criterion) {
    let name = "rate_closed_success_threads=2";
    let mut group = c.benchmark_group(name);
    let fuses = fuse_rows("rate-threads", Config::default(), fuse_rate());
    for (id, fuse) in &fuses {
        two_threads(&mut group, name, id, || || fuse_run_with(fuse));
    }
    let failsafe = failsafe_rate(0.5);
    two_threads(&mut group, name, "failsafe_success_rate", || {
        let failsafe = failsafe.clone();
        move || failsafe::CircuitBreaker::call(&failsafe, call)
    });
    let recloser = recloser_rate(0.5);
    two_threads(&mut group, name, "recloser_rate", || || recloser.call(call));
    for (id, tower) in towers(20) {
        two_threads(&mut group, name, id, || {
            let mut tower = tower.clone();
            move || tower_call(&mut tower)
        });
        assert_eq!(tower.closed(), Some(true), "{id} is not closed");
    }
    group.finish();
    for (id, fuse) in &fuses {
        assert_eq!(fuse.state(), State::Closed, "{id} is not closed");
    }
}

/// Counted failures on `fuse` in chunks of [`CHUNK`], a `force_closed`
/// (untimed) before each; checks after each chunk that it is still closed.
fn chunked_failures(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, fuse: &Fuse) {
    group.bench_function(id, |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let chunk = left.min(CHUNK);
                fuse.force_closed();
                total += timed(&mut &*fuse, fail, chunk);
                assert_eq!(fuse.state(), State::Closed, "{id}: opened");
                left -= chunk;
            }
            total
        });
    });
}

pub(crate) fn rate_closed_failure(c: &mut Criterion) {
    let mut group = c.benchmark_group("rate_closed_failure");
    // `failure_threshold` 4096 on the rate rows too: a setting `rate` does
    // not read, so that they stay closed under either rule.
    let count = config(Config::builder().failure_threshold(MAX_FAILURE_THRESHOLD));
    let rate = fuse_rate()
        .minimum_calls(MAX_MINIMUM_CALLS)
        .failure_threshold(MAX_FAILURE_THRESHOLD);
    let fuses = fuse_rows("rate-failure", count, rate);
    for (id, fuse) in &fuses {
        chunked_failures(&mut group, id, fuse);
    }
    let id = "failsafe_success_rate";
    bench_calls(&mut group, id, failsafe_rate(0.0), fail, still_closed(id));
    // Above 100 %, recloser's rate is never reached.
    let recloser = recloser_rate(2.0);
    bench_calls(&mut group, "recloser_rate", &recloser, fail, |_| {});
    for (id, tower) in towers(usize::MAX) {
        bench_calls(&mut group, id, tower, fail, still_closed(id));
    }
    group.finish();
}
