//! Fuse against the peer circuit breakers, in one criterion run. Here: the
//! shared shape of a call (`Breaker`, `timed`) and `main`; `adapters` puts
//! each breaker behind `Breaker`, `baselines` the hardware baselines,
//! `cases` one criterion group per case.
//!
//! ```sh
//! cargo bench --bench compare        # all of it, a few minutes
//! scripts/bench-report               # the run, then a markdown table and docs/bench.svg
//! ```
//!
//! Peers, as dev-dependencies at pinned versions: `failsafe` 1.3 (its
//! consecutive-failures policy and its default policy), `recloser` 1.4,
//! `circuitbreaker-rs` 0.1, `tower-resilience-circuitbreaker` 0.13 (async
//! only: driven by a no-op-waker executor, see [`poll_now`]) and
//! `breaker-machines` 0.17.1 (the newest release that builds on this
//! toolchain: 0.19 and later declare `rust-version = "1.99"`).
//!
//! # Method
//!
//! Every measurement is [`Bencher::iter_custom`]: the bench times `iters`
//! calls itself with one `Instant` pair around the loop, so criterion's own
//! per-iteration cost never hides a nanosecond path. Every breaker, and
//! every baseline, runs the same loop ([`timed`]): `black_box(b.call(op))`,
//! `op` being [`succeed`] or [`fail`], a plain function returning
//! `Ok(black_box(1))` or `Err(black_box(Fail))`. Each breaker is wrapped in
//! a [`Breaker`] adapter whose `call` only runs the breaker's own
//! closure-taking API and maps its result to an [`Outcome`].
//!
//! Results are criterion IDs `group/function`, the group being the case and
//! the function the breaker (`fuse`, `failsafe_default`, ...) or a baseline
//! (`baseline/...`); `scripts/bench-report` reads them back from
//! `target/criterion/**/new/{benchmark,estimates}.json`.
//!
//! # Cases
//!
//! - `baseline`: the loop with the bare closure, and with one more
//!   operation beside it (an atomic load, a `fetch_add`, a `std` mutex
//!   counter, `quanta::Clock::now`, `quanta::Clock::recent`,
//!   `Instant::now`). A baseline minus `baseline/closure` is the cost of its
//!   operation.
//! - `closed_success`: a closed breaker, every call succeeds.
//! - `open_rejected`: an open breaker with a cooldown of an hour (forced open
//!   where the breaker has a force API: Fuse, circuitbreaker-rs,
//!   tower-resilience; otherwise tripped by counted failures before each
//!   batch); every call is rejected. `fuse_coarse` is Fuse with its coarse
//!   clock (one atomic load of a time an upkeep thread keeps), which takes
//!   the clock read off the rejection.
//! - `closed_failure`: every call is a counted failure, the breaker kept
//!   closed by its largest thresholds (below). Fuse: `failure_threshold`
//!   4096 (the maximum) and `failure_window` 1 ns, so every earlier failure
//!   is already out of the window when the next one is recorded: the full
//!   failure path runs (ring slot write, state-word compare-and-swap, and
//!   once 4096 failures are live, the in-window count, which stops at the
//!   first failure out of the window) and the circuit never trips. With a
//!   realistic window and only failures, 4096 of them would open it.
//!   `fuse_coarse`'s time moves in 1 ms ticks, so it records its failures
//!   in chunks that cannot reach the threshold (see `coarse.rs`).
//! - `half_open_cycle`: one full recovery per iteration: wait out the
//!   cooldown, the probe(s) that close the circuit, the counted failure(s)
//!   that open it again. On a mock clock where the breaker takes one (Fuse:
//!   `quanta::Clock::mock()`; failsafe: its `clock::freeze`;
//!   breaker-machines: its `Clock` trait); the others (recloser,
//!   circuitbreaker-rs, tower-resilience) read the real clock and are given
//!   a cooldown of 1 ns. Each breaker needs its own number of calls per
//!   cycle (see [`Cycle`]), so the case compares whole cycles.
//!   `fuse_coarse` cycles 4096 circuits between two ticks of its clock
//!   (see `coarse.rs`).
//! - `shared_closed/threads=N`: N threads (1, 2, 4, ... and
//!   `available_parallelism`) share one closed breaker; each thread times
//!   its own `iters` calls after a barrier, and the reported time is the
//!   slowest thread's (the max), so a result is ns per call per thread.
//!   breaker-machines' `call` takes `&mut self`: its threads share it
//!   behind a `std::sync::Mutex`. tower-resilience's threads each own a
//!   clone of the service (sharing one circuit), as tower intends.
//! - `user_loop_closed`, `user_loop_open`, `user_loop_threads=2`: the
//!   closed and open paths as a user's own loop meets them, the whole
//!   `Result` of `run_with` (or the peer's `call`) through `black_box`,
//!   beside the closure alone and the closure with two atomic loads (see
//!   `user_loop.rs`).
//! - `rate_closed_success`, `rate_closed_success_threads=2`,
//!   `rate_closed_failure`: Fuse's `rate` policy (with and without a
//!   `slow_call_duration`, on the precise and the coarse clock) beside its
//!   `count` policy and the peers' rate policies: failsafe's success rate
//!   over a time window, recloser's ring-buffer failure rate,
//!   tower-resilience's count-based and time-based sliding windows (see
//!   `rate.rs`).

use std::fmt;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, Criterion};
use fuse_breaker::{Config, Fuse, FuseBuilder, State, classify::Classify, classify::FailureKind};

/// How long the open cases stay open: far longer than a benchmark.
const LONG: Duration = Duration::from_hours(1);

/// The error of the protected call: a timeout, which every breaker counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fail;

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out")
    }
}

impl std::error::Error for Fail {}

impl Classify for Fail {
    fn failure_kind(&self) -> FailureKind {
        FailureKind::Timeout
    }
}

/// What a call through a breaker gave: `None` when it was rejected, else
/// the protected call's own result.
type Outcome = Option<Result<u64, Fail>>;

/// The protected call: a plain function, so every breaker gets the same
/// zero-sized, `'static`, `Send` closure.
trait Op: FnOnce() -> Result<u64, Fail> + Copy + Send + 'static {}
impl<F: FnOnce() -> Result<u64, Fail> + Copy + Send + 'static> Op for F {}

/// The id of Fuse's rows in the cases where the `metrics` feature could
/// cost something (closed success, open rejection, counted failure):
/// `fuse`, or, when the bench is built with `--features metrics`,
/// `fuse_metrics` under the crate's own names and `fuse_resilience4j`
/// under resilience4j's (`FUSE_BENCH_METRIC_NAMES=resilience4j`), with a
/// Prometheus recorder installed, as a service exposing `/metrics` runs
/// (`scripts/bench-report` runs each, so the rows sit side by side).
fn fuse_id() -> &'static str {
    static ID: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    ID.get_or_init(metered::install)
}

/// The call that succeeds.
#[allow(clippy::unnecessary_wraps)] // the protected call's shape: a `Result`
#[inline]
fn succeed() -> Result<u64, Fail> {
    Ok(black_box(1))
}

/// The call that fails with a counted failure.
#[inline]
fn fail() -> Result<u64, Fail> {
    Err(black_box(Fail))
}

/// One breaker (or baseline) behind the one shape of call every loop uses.
trait Breaker {
    /// Runs `op` if the breaker admits it, and records its outcome.
    fn call<F: Op>(&mut self, op: F) -> Outcome;

    /// Whether the breaker is closed, for the checks between batches, when
    /// it can tell without changing anything.
    fn closed(&self) -> Option<bool> {
        None
    }
}

/// The loop every breaker and baseline is timed with.
#[inline(never)]
fn timed<B: Breaker, F: Op>(breaker: &mut B, op: F, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(breaker.call(op));
    }
    start.elapsed()
}

mod adapters;
mod baselines;
mod cases;
mod coarse;
mod graded;
mod metered;
mod rate;
mod reconfigured;
mod user_loop;

use adapters::{Bm, BmMockClock, CbRs, Tower, poll_now};
use baselines::{AtomicLoad, Bare, FetchAdd, InstantNow, MutexCounter, QuantaNow, QuantaRecent};
use cases::{
    baselines, closed_failure, closed_success, half_open_cycle, open_rejected, shared_closed,
};

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
        .without_plots()
}

fn main() {
    let mut criterion = config().configure_from_args();
    // The scheme and the recorder, before any circuit is built.
    fuse_id();
    baselines(&mut criterion);
    closed_success(&mut criterion);
    open_rejected(&mut criterion);
    closed_failure(&mut criterion);
    half_open_cycle(&mut criterion);
    reconfigured::reconfigured(&mut criterion);
    shared_closed(&mut criterion);
    user_loop::user_loop_closed(&mut criterion);
    user_loop::user_loop_open(&mut criterion);
    user_loop::user_loop_threads(&mut criterion);
    rate::rate_closed_success(&mut criterion);
    rate::rate_closed_success_threads(&mut criterion);
    rate::rate_closed_failure(&mut criterion);
    graded::graded_closed_success(&mut criterion);
    graded::graded_closed_success_threads(&mut criterion);
    graded::graded_shed(&mut criterion);
    criterion.final_summary();
}
