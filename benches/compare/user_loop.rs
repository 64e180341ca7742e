//! The closed and open paths as a user's own loop meets them: each call's
//! whole `Result` goes through `black_box`, error type and all (here
//! `io::Error`, the common case), instead of being reduced to an
//! [`Outcome`](super::Outcome) inside an adapter as the other cases do.
//! What a breaker's result costs to build and move (its size, its tag) is
//! part of what these rows measure.
//!
//! Groups: `user_loop_closed` (a closed breaker, every call succeeds),
//! `user_loop_open` (forced or tripped open for an hour, every call
//! rejected) and `user_loop_threads=2` (two threads on one closed breaker,
//! per thread, with how long the threads really ran together printed).
//! Baselines in the same groups: the bare closure, and the closure with
//! two atomic loads beside it (what a closed admission and verdict read).
//! `rate.rs` times the `rate` policy's closed path with the same rows and
//! the same two-thread machinery ([`two_threads`]).

use std::hint::black_box;
use std::io;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{Bencher, Criterion};
use fuse_breaker::{Config, Fuse};

use super::{LONG, cases::fuse_coarse, fuse_id};

/// The call every row protects: `Ok(1)`, the one through `black_box`.
#[allow(clippy::unnecessary_wraps)] // a protected call's shape
#[inline]
pub(crate) fn call() -> Result<u64, io::Error> {
    Ok(black_box(1))
}

/// Times `iters` runs of `one`, each result through `black_box`.
#[inline(never)]
fn looped<R>(iters: u64, mut one: impl FnMut() -> R) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(one());
    }
    start.elapsed()
}

pub(crate) fn row<R>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    mut one: impl FnMut() -> R,
) {
    group.bench_function(id, |b: &mut Bencher<'_>| {
        b.iter_custom(|iters| looped(iters, &mut one));
    });
}

pub(crate) fn baselines(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
) {
    row(group, "baseline/closure", call);
    let word = AtomicU64::new(0);
    row(group, "baseline/closure_2_loads", || {
        // Acquire, as a closed admission and verdict load their word.
        let before = word.load(Ordering::Acquire);
        let out = call();
        black_box((before, word.load(Ordering::Acquire)));
        out
    });
}

/// `run_with` as a user's loop writes it, in the loop itself (always
/// inlined: a function of the bench's own that the compiler kept out of
/// line would return the `Result` through memory, which a user's loop
/// does not).
#[allow(clippy::inline_always)] // see above
#[inline(always)]
pub(crate) fn fuse_run_with(fuse: &Fuse) -> Result<u64, fuse_breaker::Error<io::Error>> {
    fuse.run_with(call, |_| true, |_| true)
}

/// [`looped`] over [`fuse_run_with`] on `fuse`, written out: the loop
/// with Fuse's call inlined in it whatever the compiler decides for a
/// closure (a closure it kept out of line, called through `&mut F`,
/// returns the `Result` through memory, and costs several nanoseconds
/// more: seen in `rate_closed_success`, whose four Fuse rows share one
/// closure type).
#[inline(never)]
fn looped_fuse(iters: u64, fuse: &Fuse) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        let _ = black_box(fuse_run_with(fuse));
    }
    start.elapsed()
}

/// A row of [`looped_fuse`] on `fuse`.
pub(crate) fn fuse_row(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    fuse: &Fuse,
) {
    group.bench_function(id, |b: &mut Bencher<'_>| {
        b.iter_custom(|iters| looped_fuse(iters, fuse));
    });
}

pub(crate) fn user_loop_closed(c: &mut Criterion) {
    let mut group = c.benchmark_group("user_loop_closed");
    baselines(&mut group);
    let fuse = Fuse::new("bench", Config::default());
    row(&mut group, fuse_id(), || fuse_run_with(&fuse));
    let coarse = fuse_coarse("bench-coarse").build();
    row(&mut group, "fuse_coarse", || fuse_run_with(&coarse));
    let recloser = recloser::Recloser::custom().build();
    row(&mut group, "recloser", || recloser.call(call));
    let failsafe = super::cases::failsafe_consecutive(5, Duration::from_secs(30));
    row(&mut group, "failsafe_consecutive", || {
        failsafe::CircuitBreaker::call(&failsafe, call)
    });
    group.finish();
    assert_eq!(fuse.state(), fuse_breaker::State::Closed);
}

pub(crate) fn user_loop_open(c: &mut Criterion) {
    let mut group = c.benchmark_group("user_loop_open");
    baselines(&mut group);
    let config = || {
        Config::builder()
            .open_duration(LONG)
            .build()
            .expect("valid")
    };
    let fuse = Fuse::new("bench-open", config());
    fuse.force_open();
    row(&mut group, "fuse", || fuse_run_with(&fuse));
    let coarse = fuse_coarse("bench-open-coarse").config(config()).build();
    coarse.force_open();
    row(&mut group, "fuse_coarse", || fuse_run_with(&coarse));
    let recloser = recloser::Recloser::custom().open_wait(LONG).build();
    let tripped = (0..100_000).any(|_| {
        let _ = recloser.call(|| Err::<u64, _>(io::Error::other("down")));
        matches!(recloser.call(call), Err(recloser::Error::Rejected))
    });
    assert!(tripped, "recloser did not open");
    row(&mut group, "recloser", || recloser.call(call));
    let failsafe = super::cases::failsafe_consecutive(1, LONG);
    let _ = failsafe::CircuitBreaker::call(&failsafe, || Err::<u64, _>(io::Error::other("down")));
    assert!(matches!(
        failsafe::CircuitBreaker::call(&failsafe, call),
        Err(failsafe::Error::Rejected)
    ));
    row(&mut group, "failsafe_consecutive", || {
        failsafe::CircuitBreaker::call(&failsafe, call)
    });
    group.finish();
    assert!(
        fuse.run_with(call, |_| true, |_| true)
            .is_err_and(|e| e.is_open())
    );
}

/// Two threads on one closed circuit, each timing its own loop after a
/// barrier; the slowest thread's time is the result (see [`two_threads`]).
pub(crate) fn user_loop_threads(c: &mut Criterion) {
    let name = "user_loop_threads=2";
    let mut group = c.benchmark_group(name);
    let fuse = Fuse::new("bench-threads", Config::default());
    two_threads(&mut group, name, fuse_id(), || || fuse_run_with(&fuse));
    group.finish();
}

/// A row of two threads, each running its own `one` (made by `make` on its
/// thread: a handle of its own where a breaker wants one) in a loop after a
/// barrier; the slowest thread's time is the result. Also the share of
/// that time the two loops overlapped (median and least, over the samples
/// of 1 ms or more), printed: on a shared machine a thread can be
/// descheduled, and a figure from threads that did not run together is a
/// one-thread figure. `name` is the group's, for the printed line.
pub(crate) fn two_threads<F, R>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    id: &str,
    make: impl Fn() -> F + Sync,
) where
    F: FnMut() -> R,
{
    // The overlap of each sample long enough to tell (criterion's first
    // samples are a few calls, shorter than starting a thread).
    let mut together: Vec<f64> = Vec::new();
    group.bench_function(id, |b: &mut Bencher<'_>| {
        b.iter_custom(|iters| {
            let barrier = Barrier::new(2);
            let spans: Vec<(Instant, Instant)> = thread::scope(|s| {
                let threads: Vec<_> = (0..2)
                    .map(|_| {
                        s.spawn(|| {
                            let one = make();
                            barrier.wait();
                            let start = Instant::now();
                            looped(iters, one);
                            (start, Instant::now())
                        })
                    })
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("bench thread"))
                    .collect()
            });
            let longest = spans
                .iter()
                .map(|(start, end)| *end - *start)
                .max()
                .unwrap_or_default();
            let first_end = spans
                .iter()
                .map(|(_, end)| *end)
                .min()
                .expect("two threads");
            let last_start = spans
                .iter()
                .map(|(start, _)| *start)
                .max()
                .expect("two threads");
            let overlap = first_end.saturating_duration_since(last_start);
            if longest >= Duration::from_millis(1) {
                together.push(overlap.as_secs_f64() / longest.as_secs_f64());
            }
            longest
        });
    });
    together.sort_by(f64::total_cmp);
    if let (Some(least), Some(median)) = (together.first(), together.get(together.len() / 2)) {
        eprintln!(
            "{name}/{id}: the two threads ran together for {:.0}% of the slowest \
             thread's time in the median sample, {:.0}% in the least ({} samples of 1 ms or more)",
            median * 100.0,
            least * 100.0,
            together.len()
        );
    }
}
