//! Fuse against the peer circuit breakers, in one criterion run.
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
//!   clock (quanta's recent time, kept by an upkeep thread), which takes the
//!   clock read off the rejection.
//! - `closed_failure`: every call is a counted failure, the breaker kept
//!   closed by its largest thresholds (below). Fuse: `failure_threshold`
//!   4096 (the maximum) and `failure_window` 1 ns, so every earlier failure
//!   is already out of the window when the next one is recorded: the full
//!   failure path runs (ring slot write, state-word compare-and-swap, and
//!   once 4096 failures are live, the in-window count, which stops at the
//!   first failure out of the window) and the circuit never trips. With a
//!   realistic window and only failures, 4096 of them would open it.
//!   `fuse_coarse` is left out here: its time moves in 1 ms ticks, and the
//!   tens of thousands of failures of one tick are all in any window, so
//!   it trips.
//! - `half_open_cycle`: one full recovery per iteration: wait out the
//!   cooldown, the probe(s) that close the circuit, the counted failure(s)
//!   that open it again. On a mock clock where the breaker takes one (Fuse:
//!   `quanta::Clock::mock()`; failsafe: its `clock::freeze`;
//!   breaker-machines: its `Clock` trait); the others (recloser,
//!   circuitbreaker-rs, tower-resilience) read the real clock and are given
//!   a cooldown of 1 ns. Each breaker needs its own number of calls per
//!   cycle (see [`Cycle`]), so the case compares whole cycles. No
//!   `fuse_coarse` here: on a mock clock both of Fuse's readings are the
//!   mock's.
//! - `shared_closed/threads=N`: N threads (1, 2, 4, ... and
//!   `available_parallelism`) share one closed breaker; each thread times
//!   its own `iters` calls after a barrier, and the reported time is the
//!   slowest thread's (the max), so a result is ns per call per thread.
//!   breaker-machines' `call` takes `&mut self`: its threads share it
//!   behind a `std::sync::Mutex`. tower-resilience's threads each own a
//!   clone of the service (sharing one circuit), as tower intends.

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
use fuse_breaker::{Classify, Config, FailureKind, Fuse, FuseBuilder, State};

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
/// cost something (the closed-success path): `fuse`, or `fuse_metrics` when
/// the bench is built with `--features metrics` (`scripts/bench-report`
/// runs both, so the two sit side by side).
const FUSE: &str = if cfg!(feature = "metrics") {
    "fuse_metrics"
} else {
    "fuse"
};

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

// ---------------------------------------------------------------- adapters

impl Breaker for &Fuse {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match self.run(op) {
            Ok(value) => Some(Ok(value)),
            Err(fuse_breaker::Error::Inner(err)) => Some(Err(err)),
            Err(fuse_breaker::Error::Open(_)) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.state() == State::Closed)
    }
}

impl<P, I> Breaker for failsafe::StateMachine<P, I>
where
    P: failsafe::FailurePolicy,
    I: failsafe::Instrument,
{
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match <Self as failsafe::CircuitBreaker>::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(failsafe::Error::Inner(err)) => Some(Err(err)),
            Err(failsafe::Error::Rejected) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        // `Some(true)` while it admits calls, else `None` (it cannot tell
        // closed from half-open); only moves an open circuit whose cooldown
        // has passed.
        self.is_call_permitted().then_some(true)
    }
}

impl Breaker for &recloser::Recloser {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match recloser::Recloser::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(recloser::Error::Inner(err)) => Some(Err(err)),
            Err(recloser::Error::Rejected) => None,
        }
    }
}

type CbRs = circuitbreaker_rs::CircuitBreaker<circuitbreaker_rs::DefaultPolicy, Fail>;

impl Breaker for CbRs {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match circuitbreaker_rs::CircuitBreaker::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(circuitbreaker_rs::BreakerError::Operation(err)) => Some(Err(err)),
            Err(_) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.current_state() == circuitbreaker_rs::State::Closed)
    }
}

/// Polls `fut` to completion on the current thread with a no-op waker.
///
/// tower-resilience has no synchronous API; its service's futures are ready
/// on their first poll when the inner service is ready and the circuit's
/// (tokio) mutex is free, which is always the case on one thread. Only in
/// `shared_closed` can that mutex be held by another thread; the thread then
/// yields and polls again until the holder has handed it over (a real
/// executor would park the task and run another one meanwhile; spinning
/// without yielding stalls for whole scheduler slices when the holder is
/// preempted).
#[inline]
fn poll_now<Fut: Future>(fut: Fut) -> Fut::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        thread::yield_now();
    }
}

/// The inner tower service: runs the request, which is the protected call.
#[derive(Clone, Copy, Debug)]
struct Direct;

impl<F: Op> tower::Service<F> for Direct {
    type Response = u64;
    type Error = Fail;
    type Future = std::future::Ready<Result<u64, Fail>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Fail>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, op: F) -> Self::Future {
        std::future::ready(op())
    }
}

type TowerCb = tower_resilience_circuitbreaker::CircuitBreaker<
    Direct,
    tower_resilience_circuitbreaker::DefaultClassifier,
>;

/// A tower-resilience circuit breaker around [`Direct`], driven by
/// [`poll_now`]: `poll_ready`, then `call` and its future.
#[derive(Clone)]
struct Tower(TowerCb);

impl Tower {
    fn new(
        builder: tower_resilience_circuitbreaker::CircuitBreakerConfigBuilder<
            tower_resilience_circuitbreaker::DefaultClassifier,
        >,
    ) -> Self {
        use tower::Layer;
        let layer = builder.build().expect("valid tower-resilience config");
        Tower(layer.layer(Direct))
    }
}

impl Breaker for Tower {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        use tower::Service;
        use tower_resilience_circuitbreaker::CircuitBreakerError;
        let service = &mut self.0;
        match poll_now(std::future::poll_fn(|cx| {
            Service::<F>::poll_ready(service, cx)
        })) {
            Ok(()) => {}
            Err(CircuitBreakerError::Inner(err)) => return Some(Err(err)),
            Err(CircuitBreakerError::OpenCircuit) => return None,
        }
        match poll_now(service.call(op)) {
            Ok(value) => Some(Ok(value)),
            Err(CircuitBreakerError::Inner(err)) => Some(Err(err)),
            Err(CircuitBreakerError::OpenCircuit) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.0.state_sync() == tower_resilience_circuitbreaker::CircuitState::Closed)
    }
}

type Bm = breaker_machines::CircuitBreaker;

impl Breaker for Bm {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match breaker_machines::CircuitBreaker::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(breaker_machines::CircuitError::Execution(err)) => Some(Err(err)),
            Err(_) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.is_closed())
    }
}

/// breaker-machines shared between threads: its `call` takes `&mut self`.
impl Breaker for &Mutex<Bm> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        let mut breaker = self.lock().unwrap_or_else(PoisonError::into_inner);
        Breaker::call(&mut *breaker, op)
    }
}

/// A breaker-machines clock moved by hand: seconds, as `f64` bits.
#[derive(Debug)]
struct BmMockClock(std::sync::Arc<AtomicU64>);

impl breaker_machines::Clock for BmMockClock {
    fn now_secs(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

// --------------------------------------------------------------- baselines

/// The closure alone.
#[derive(Clone, Copy)]
struct Bare;

impl Breaker for Bare {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        Some(op())
    }
}

/// One acquire load of a shared word, and a branch on it.
#[derive(Clone, Copy)]
struct AtomicLoad<'a>(&'a AtomicU64);

impl Breaker for AtomicLoad<'_> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        if self.0.load(Ordering::Acquire) == u64::MAX {
            return None;
        }
        Some(op())
    }
}

/// One `fetch_add` on a shared word.
#[derive(Clone, Copy)]
struct FetchAdd<'a>(&'a AtomicU64);

impl Breaker for FetchAdd<'_> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        self.0.fetch_add(1, Ordering::AcqRel);
        Some(op())
    }
}

/// A counter behind a `std::sync::Mutex`.
#[derive(Clone, Copy)]
struct MutexCounter<'a>(&'a Mutex<u64>);

impl Breaker for MutexCounter<'_> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Some(op())
    }
}

/// One `quanta::Clock::now`.
struct QuantaNow(quanta::Clock);

impl Breaker for QuantaNow {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        black_box(self.0.now());
        Some(op())
    }
}

/// One `quanta::Clock::recent` (the coarse clock's read).
struct QuantaRecent(quanta::Clock);

impl Breaker for QuantaRecent {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        black_box(self.0.recent());
        Some(op())
    }
}

/// One `std::time::Instant::now`.
struct InstantNow;

impl Breaker for InstantNow {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        black_box(Instant::now());
        Some(op())
    }
}

// ------------------------------------------------------------ constructors

/// Fuse reading its clock coarsely (`FuseBuilder::coarse_clock`): quanta's
/// recent time, refreshed by an upkeep thread.
fn fuse_coarse(name: &str) -> FuseBuilder {
    Fuse::builder(name).coarse_clock(true)
}

fn fuse_config() -> fuse_breaker::ConfigBuilder {
    Config::builder().open_duration(LONG)
}

fn failsafe_consecutive(
    failures: u32,
    cooldown: Duration,
) -> failsafe::StateMachine<
    failsafe::failure_policy::ConsecutiveFailures<failsafe::backoff::Constant>,
    (),
> {
    let policy = failsafe::failure_policy::consecutive_failures(
        failures,
        failsafe::backoff::constant(cooldown),
    );
    failsafe::Config::new().failure_policy(policy).build()
}

/// failsafe's default policy, `Config::new().build()`: success rate over a
/// 30 s window, or else 5 consecutive failures; jittered backoff 10..300 s.
fn failsafe_default() -> impl Breaker + Clone + Send {
    failsafe::Config::new().build()
}

/// The default policy's shape with thresholds it never reaches: a required
/// success rate of 0 and `u32::MAX` consecutive failures.
fn failsafe_default_never_trips() -> impl Breaker + Clone + Send {
    use failsafe::FailurePolicy;
    use failsafe::failure_policy::{consecutive_failures, success_rate_over_time_window};
    let backoff = || failsafe::backoff::equal_jittered(Duration::from_secs(10), LONG);
    let policy = success_rate_over_time_window(0.0, u32::MAX, Duration::from_secs(30), backoff())
        .or_else(consecutive_failures(u32::MAX, backoff()));
    failsafe::Config::new().failure_policy(policy).build()
}

fn cbrs() -> circuitbreaker_rs::BreakerBuilder<circuitbreaker_rs::DefaultPolicy, Fail> {
    CbRs::builder()
}

fn tower_builder() -> tower_resilience_circuitbreaker::CircuitBreakerConfigBuilder<
    tower_resilience_circuitbreaker::DefaultClassifier,
> {
    tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
}

/// Calls [`fail`] until the breaker rejects a call (it is open).
fn trip(breaker: &mut impl Breaker, name: &str) {
    for _ in 0..100_000 {
        if breaker.call(fail).is_none() {
            return;
        }
    }
    panic!("{name} did not open after 100000 failures");
}

fn assert_rejects(breaker: &mut impl Breaker, name: &str) {
    assert!(breaker.call(succeed).is_none(), "{name} is not open");
}

fn assert_closed(breaker: &impl Breaker, name: &str) {
    assert_ne!(breaker.closed(), Some(false), "{name} is not closed");
}

/// A `prepare` that checks the breaker is still closed.
fn still_closed<B: Breaker>(name: &'static str) -> impl FnMut(&mut B) {
    move |breaker| assert_closed(breaker, name)
}

/// A `prepare` that trips the breaker with failures (a no-op when it is
/// open already) and checks that it rejects.
fn tripped<B: Breaker>(name: &'static str) -> impl FnMut(&mut B) {
    move |breaker| {
        trip(breaker, name);
        assert_rejects(breaker, name);
    }
}

// ------------------------------------------------------------------- cases

/// Times `op` on `breaker` with [`timed`]; `prepare` runs before each batch,
/// untimed.
fn bench_calls<B: Breaker>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut breaker: B,
    op: impl Op,
    mut prepare: impl FnMut(&mut B),
) {
    group.bench_function(id, |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            prepare(&mut breaker);
            timed(&mut breaker, op, iters)
        });
    });
}

fn baselines(c: &mut Criterion) {
    // The coarse Fuse starts quanta's upkeep thread, which `recent` reads.
    let _upkeep = fuse_coarse("baseline-upkeep").build();
    let word = AtomicU64::new(0);
    let counter = Mutex::new(0);
    let mut group = c.benchmark_group("baseline");
    bench_calls(&mut group, "closure", Bare, succeed, |_| {});
    bench_calls(
        &mut group,
        "atomic_load",
        AtomicLoad(&word),
        succeed,
        |_| {},
    );
    bench_calls(&mut group, "fetch_add", FetchAdd(&word), succeed, |_| {});
    bench_calls(
        &mut group,
        "mutex_counter",
        MutexCounter(&counter),
        succeed,
        |_| {},
    );
    let clock = quanta::Clock::new();
    bench_calls(
        &mut group,
        "quanta_now",
        QuantaNow(clock.clone()),
        succeed,
        |_| {},
    );
    bench_calls(
        &mut group,
        "quanta_recent",
        QuantaRecent(clock),
        succeed,
        |_| {},
    );
    bench_calls(&mut group, "instant_now", InstantNow, succeed, |_| {});
    group.finish();
}

fn closed_success(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_success");
    let fuse = Fuse::new("closed-success", Config::default());
    bench_calls(&mut group, FUSE, &fuse, succeed, still_closed("fuse"));
    let coarse = fuse_coarse("closed-success-coarse").build();
    bench_calls(
        &mut group,
        "fuse_coarse",
        &coarse,
        succeed,
        still_closed("fuse_coarse"),
    );
    let consecutive = failsafe_consecutive(5, Duration::from_secs(30));
    bench_calls(
        &mut group,
        "failsafe_consecutive",
        consecutive,
        succeed,
        still_closed("failsafe"),
    );
    bench_calls(
        &mut group,
        "failsafe_default",
        failsafe_default(),
        succeed,
        still_closed("failsafe"),
    );
    let recloser = recloser::Recloser::custom().build();
    bench_calls(&mut group, "recloser", &recloser, succeed, |_| {});
    bench_calls(
        &mut group,
        "circuitbreaker_rs",
        cbrs().build(),
        succeed,
        still_closed("cbrs"),
    );
    let tower = Tower::new(tower_builder());
    bench_calls(
        &mut group,
        "tower_resilience (noop-waker)",
        tower,
        succeed,
        still_closed("tower"),
    );
    let bm = Bm::builder("closed-success").build();
    bench_calls(
        &mut group,
        "breaker_machines",
        bm,
        succeed,
        still_closed("bm"),
    );
    group.finish();
}

fn open_rejected(c: &mut Criterion) {
    let mut group = c.benchmark_group("open_rejected");
    let force = |b: &mut &Fuse| {
        b.force_open();
        assert_rejects(b, "fuse");
    };

    let fuse = Fuse::new("open-rejected", fuse_config().build().expect("config"));
    bench_calls(&mut group, "fuse", &fuse, succeed, force);
    let coarse = fuse_coarse("open-rejected-coarse")
        .config(fuse_config().build().expect("config"))
        .build();
    bench_calls(&mut group, "fuse_coarse", &coarse, succeed, force);
    let consecutive = failsafe_consecutive(1, LONG);
    bench_calls(
        &mut group,
        "failsafe_consecutive",
        consecutive,
        succeed,
        tripped("failsafe"),
    );
    // The default backoff is jittered between 5 and 10 s for a first
    // opening: longer than one benchmark, and re-tripped before each batch.
    let default = failsafe_default();
    bench_calls(
        &mut group,
        "failsafe_default",
        default,
        succeed,
        tripped("failsafe"),
    );
    let recloser = recloser::Recloser::custom().open_wait(LONG).build();
    bench_calls(
        &mut group,
        "recloser",
        &recloser,
        succeed,
        tripped("recloser"),
    );
    let cb = cbrs().cooldown(LONG).build();
    bench_calls(
        &mut group,
        "circuitbreaker_rs",
        cb,
        succeed,
        |b: &mut CbRs| {
            b.force_open();
            assert_rejects(b, "circuitbreaker_rs");
        },
    );
    let tower = Tower::new(tower_builder().wait_duration_in_open(LONG));
    let id = "tower_resilience (noop-waker)";
    bench_calls(&mut group, id, tower, succeed, |b: &mut Tower| {
        poll_now(b.0.force_open());
        assert_rejects(b, "tower_resilience");
    });
    let bm = Bm::builder("open-rejected")
        .half_open_timeout_secs(LONG.as_secs_f64())
        .build();
    bench_calls(&mut group, "breaker_machines", bm, succeed, tripped("bm"));
    group.finish();
}

fn closed_failure(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_failure");
    // Threshold 4096, window 1 ns: see the crate doc above.
    let config = Config::builder()
        .failure_threshold(fuse_breaker::MAX_FAILURE_THRESHOLD)
        .failure_window(Duration::from_nanos(1))
        .build()
        .expect("config");
    let fuse = Fuse::new("closed-failure", config);
    bench_calls(&mut group, "fuse", &fuse, fail, still_closed("fuse"));
    let consecutive = failsafe_consecutive(u32::MAX, Duration::from_secs(30));
    bench_calls(
        &mut group,
        "failsafe_consecutive",
        consecutive,
        fail,
        still_closed("failsafe"),
    );
    let default = failsafe_default_never_trips();
    bench_calls(
        &mut group,
        "failsafe_default",
        default,
        fail,
        still_closed("failsafe"),
    );
    // recloser's thresholds are failure rates; above 100 % it never trips.
    let recloser = recloser::Recloser::custom().error_rate_closed(2.0).build();
    bench_calls(&mut group, "recloser", &recloser, fail, |_| {});
    let cb = cbrs()
        .failure_threshold(2.0)
        .min_throughput(u64::MAX)
        .consecutive_failures(u64::MAX)
        .build();
    bench_calls(
        &mut group,
        "circuitbreaker_rs",
        cb,
        fail,
        still_closed("cbrs"),
    );
    let tower = Tower::new(
        tower_builder()
            .sliding_window_size(usize::MAX)
            .minimum_number_of_calls(usize::MAX),
    );
    bench_calls(
        &mut group,
        "tower_resilience (noop-waker)",
        tower,
        fail,
        still_closed("tower"),
    );
    let bm = Bm::builder("closed-failure")
        .failure_threshold(usize::MAX)
        .build();
    bench_calls(&mut group, "breaker_machines", bm, fail, still_closed("bm"));
    group.finish();
}

/// What one half-open cycle is for a breaker: the probes that close it
/// (retried while rejected, which only a real clock can cause) and the
/// counted failures that open it again.
#[derive(Clone, Copy)]
struct Cycle {
    probes: u32,
    failures: u32,
}

/// Times `iters` cycles: `advance` (the cooldown passes), the probes, the
/// failures.
#[inline(never)]
fn timed_cycles<B: Breaker>(
    breaker: &mut B,
    cycle: Cycle,
    advance: &mut impl FnMut(),
    iters: u64,
) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        advance();
        for _ in 0..cycle.probes {
            while black_box(breaker.call(succeed)).is_none() {
                std::hint::spin_loop();
            }
        }
        for _ in 0..cycle.failures {
            black_box(breaker.call(fail));
        }
    }
    start.elapsed()
}

/// One untimed cycle with its checks: every probe admitted and successful,
/// every failure admitted (the circuit closed), and, where the breaker can
/// tell, open at the end. Run before each batch; the very first one starts
/// from the new, closed breaker (its probes are then plain successes) and
/// leaves it open, as every later cycle does.
fn checked_cycle<B: Breaker>(
    breaker: &mut B,
    cycle: Cycle,
    advance: &mut impl FnMut(),
    name: &str,
) {
    advance();
    for _ in 0..cycle.probes {
        let mut tries = 0;
        while breaker.call(succeed).is_none() {
            tries += 1;
            assert!(tries < 1_000_000, "{name}: no probe admitted");
        }
    }
    for _ in 0..cycle.failures {
        assert_eq!(breaker.call(fail), Some(Err(Fail)), "{name}: not closed");
    }
    assert_ne!(breaker.closed(), Some(true), "{name}: not open again");
}

fn bench_cycles<B: Breaker>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut breaker: B,
    cycle: Cycle,
    mut advance: impl FnMut(),
) {
    group.bench_function(id, |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            checked_cycle(&mut breaker, cycle, &mut advance, id);
            timed_cycles(&mut breaker, cycle, &mut advance, iters)
        });
    });
}

fn half_open_cycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("half_open_cycle");
    let one = Cycle {
        probes: 1,
        failures: 1,
    };
    let cooldown = Duration::from_secs(1);
    let tiny = Duration::from_nanos(1);

    let (clock, mock) = quanta::Clock::mock();
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(cooldown)
        .build()
        .expect("config");
    let fuse = Fuse::builder("half-open")
        .config(config)
        .clock(clock)
        .build();
    bench_cycles(&mut group, "fuse", &fuse, one, || mock.increment(cooldown));

    // failsafe's mock clock is thread-local and lives inside `freeze`; a
    // fresh breaker per batch, as its open-until instant is from the mock.
    let after = cooldown + tiny;
    group.bench_function("failsafe_consecutive", |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            failsafe::clock::freeze(|clock| {
                let mut breaker = failsafe_consecutive(1, cooldown);
                let mut advance = || clock.advance(after);
                checked_cycle(&mut breaker, one, &mut advance, "failsafe");
                timed_cycles(&mut breaker, one, &mut advance, iters)
            })
        });
    });
    // The default policy opens after 5 consecutive failures, with a
    // jittered backoff of at most 300 s: one probe, five failures.
    let five = Cycle {
        probes: 1,
        failures: 5,
    };
    group.bench_function("failsafe_default", |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            failsafe::clock::freeze(|clock| {
                let mut breaker = failsafe_default();
                let mut advance = || clock.advance(Duration::from_secs(301));
                checked_cycle(&mut breaker, five, &mut advance, "failsafe_default");
                timed_cycles(&mut breaker, five, &mut advance, iters)
            })
        });
    });

    // recloser fills its ring before judging: with rings of one call, two
    // successes close it and two failures open it. Real clock, 1 ns wait,
    // so the second failure is already the next half-open probe: the steady
    // cycle is half-open -> closed -> open -> half-open, four calls.
    let recloser = recloser::Recloser::custom()
        .closed_len(1)
        .half_open_len(1)
        .open_wait(tiny)
        .build();
    let two = Cycle {
        probes: 2,
        failures: 2,
    };
    bench_cycles(&mut group, "recloser", &recloser, two, || {});

    let cb = cbrs()
        .cooldown(tiny)
        .consecutive_failures(1)
        .consecutive_successes(1)
        .build();
    bench_cycles(&mut group, "circuitbreaker_rs", cb, one, || {});

    let tower = Tower::new(
        tower_builder()
            .consecutive_failures(1)
            .permitted_calls_in_half_open(1)
            .wait_duration_in_open(tiny),
    );
    bench_cycles(
        &mut group,
        "tower_resilience (noop-waker)",
        tower,
        one,
        || {},
    );

    let now = std::sync::Arc::new(AtomicU64::new(0.0_f64.to_bits()));
    let storage = breaker_machines::MemoryStorage::with_clock(Box::new(BmMockClock(now.clone())));
    let bm = Bm::builder("half-open")
        .failure_threshold(1)
        .success_threshold(1)
        .half_open_timeout_secs(cooldown.as_secs_f64())
        .storage(std::sync::Arc::new(storage))
        .build();
    bench_cycles(&mut group, "breaker_machines", bm, one, move || {
        let t = f64::from_bits(now.load(Ordering::Relaxed)) + cooldown.as_secs_f64();
        now.store(t.to_bits(), Ordering::Relaxed);
    });
    group.finish();
}

/// Times `threads` threads sharing one breaker, one handle each: after a
/// barrier each times its own `iters` calls of [`succeed`]; the result is
/// the slowest thread's time, so ns per call per thread.
fn bench_shared<B: Breaker + Send>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut handles: Vec<B>,
) {
    group.bench_function(id, |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            let barrier = Barrier::new(handles.len());
            thread::scope(|s| {
                let barrier = &barrier;
                let threads: Vec<_> = handles
                    .iter_mut()
                    .map(|handle| {
                        s.spawn(move || {
                            barrier.wait();
                            timed(handle, succeed, iters)
                        })
                    })
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("bench thread"))
                    .max()
                    .unwrap_or_default()
            })
        });
    });
}

/// 1, 2, 4, ... below the machine's parallelism, and the parallelism.
fn thread_counts() -> Vec<usize> {
    let max = thread::available_parallelism().map_or(1, usize::from);
    let mut counts: Vec<usize> = std::iter::successors(Some(1), |n| Some(n * 2))
        .take_while(|&n| n < max)
        .collect();
    counts.push(max);
    if max == 1 {
        counts.push(2);
    }
    counts
}

fn shared_closed(c: &mut Criterion) {
    for n in thread_counts() {
        let mut group = c.benchmark_group(format!("shared_closed/threads={n}"));

        // Nothing shared: how much the machine alone slows a thread down
        // when all of them run.
        bench_shared(&mut group, "baseline/closure", vec![Bare; n]);
        let word = AtomicU64::new(0);
        bench_shared(
            &mut group,
            "baseline/atomic_load",
            vec![AtomicLoad(&word); n],
        );
        bench_shared(&mut group, "baseline/fetch_add", vec![FetchAdd(&word); n]);
        let counter = Mutex::new(0);
        bench_shared(
            &mut group,
            "baseline/mutex_counter",
            vec![MutexCounter(&counter); n],
        );

        let fuse = Fuse::new("shared", Config::default());
        bench_shared(&mut group, FUSE, vec![&fuse; n]);
        let coarse = fuse_coarse("shared-coarse").build();
        bench_shared(&mut group, "fuse_coarse", vec![&coarse; n]);
        let consecutive = failsafe_consecutive(5, Duration::from_secs(30));
        bench_shared(&mut group, "failsafe_consecutive", vec![consecutive; n]);
        bench_shared(&mut group, "failsafe_default", vec![failsafe_default(); n]);
        let recloser = recloser::Recloser::custom().build();
        bench_shared(&mut group, "recloser", vec![&recloser; n]);
        bench_shared(&mut group, "circuitbreaker_rs", vec![cbrs().build(); n]);
        let tower = Tower::new(tower_builder());
        bench_shared(&mut group, "tower_resilience (noop-waker)", vec![tower; n]);
        let bm = Mutex::new(Bm::builder("shared").build());
        bench_shared(&mut group, "breaker_machines", vec![&bm; n]);
        group.finish();
        assert_closed(&&fuse, "fuse");
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
        .without_plots()
}

fn main() {
    let mut criterion = config().configure_from_args();
    baselines(&mut criterion);
    closed_success(&mut criterion);
    open_rejected(&mut criterion);
    closed_failure(&mut criterion);
    half_open_cycle(&mut criterion);
    shared_closed(&mut criterion);
    criterion.final_summary();
}
