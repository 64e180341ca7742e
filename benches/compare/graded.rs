//! Graded admission (SPEC §11) beside Fuse's plain closed path and a
//! baseline of the same formula behind a mutex, in the same run. No peer
//! crate in Rust throttles adaptively; failsafe-go's `AdaptiveThrottler`
//! (Go) guards its counts with a mutex on every permit, which the
//! `baseline/mutex_throttle` row stands for.
//!
//! Groups:
//!
//! - `graded_closed_success`: a closed circuit, every call succeeds, one
//!   thread, as a user's loop meets it (the whole `Result` through
//!   `black_box`).
//! - `graded_closed_success_threads=2`: the same rows on two threads
//!   sharing one circuit (per thread).
//! - `graded_shed`: every call asks a circuit that sheds nearly all of
//!   them: the throttle at its cap with no accept in its window
//!   (`fuse_shed_throttle`: each shed call is a request it counts), or a
//!   ramp at a floor of 1 % (`fuse_shed_ramp`: the ramp's start and the
//!   clock read, then the draw), beside an open circuit's rejection
//!   (`fuse_open`).
//!
//! Rows: `fuse` (`count`, no grading: the reference), `fuse_throttle`
//! (`count` with `throttle_k` 2 and a throttling probability of 0: every
//! closed verdict is a request, every success an accept),
//! `fuse_ramp_over` (`ramp_up` set, after a ramp that has ended),
//! `fuse_rate_throttle` (`rate` with `throttle_k` 2); and the baseline
//! `baseline/mutex_throttle`: a `std` mutex around the request and accept
//! counts and the formula, locked to decide and again to record.

use std::io;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use criterion::Criterion;
use fuse_breaker::{Config, Fuse, Grading, State, config::ConfigBuilder, config::Policy};

use super::user_loop::{baselines, call, fuse_row, fuse_run_with, row, two_threads};

/// `count` with throttling on: K = 2, from 20 requests.
fn throttling() -> ConfigBuilder {
    Config::builder().throttle_k(2.0)
}

fn config(builder: ConfigBuilder) -> Config {
    builder.build().expect("a valid configuration")
}

/// A circuit with a ramp of 1 ms that has been through it: opened, probed
/// closed, the ramp waited out and found over by one admission.
fn ramp_over(name: &str) -> Fuse {
    let config = config(
        Config::builder()
            .half_open_probes(1)
            .open_duration(Duration::from_millis(1))
            .ramp_up(Duration::from_millis(1)),
    );
    let fuse = Fuse::new(name, config);
    fuse.force_open();
    std::thread::sleep(Duration::from_millis(2));
    fuse.try_acquire().expect("a probe").success();
    assert_eq!(fuse.state(), State::Closed);
    std::thread::sleep(Duration::from_millis(2));
    drop(fuse.try_acquire().expect("the ramp is over"));
    assert_eq!(fuse.snapshot().graded_by, None);
    fuse
}

/// The Fuse rows of the closed groups.
fn fuse_rows(name: &str) -> [(&'static str, Fuse); 4] {
    [
        (
            "fuse",
            Fuse::new(format!("{name}-count"), Config::default()),
        ),
        (
            "fuse_throttle",
            Fuse::new(format!("{name}-throttle"), config(throttling())),
        ),
        ("fuse_ramp_over", ramp_over(&format!("{name}-ramp"))),
        (
            "fuse_rate_throttle",
            Fuse::new(
                format!("{name}-rate-throttle"),
                config(throttling().policy(Policy::Rate)),
            ),
        ),
    ]
}

/// The throttle's formula behind one mutex: what a call of a throttler
/// that guards its counts with a lock costs (K = 2, from 20 requests, at
/// most 90 %; one window, no buckets, which only flatters it).
#[derive(Default)]
struct MutexThrottle {
    counts: Mutex<(u64, u64)>,
}

impl MutexThrottle {
    fn call(&self) -> Result<u64, io::Error> {
        let shed = {
            let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
            let (requests, accepts) = *counts;
            #[allow(clippy::cast_precision_loss)]
            let p = if requests < 20 {
                0.0
            } else {
                ((requests as f64 - 2.0 * accepts as f64) / (requests as f64 + 1.0)).clamp(0.0, 0.9)
            };
            p > 0.0 && fastrand::f64() < p
        };
        if shed {
            self.counts.lock().unwrap_or_else(PoisonError::into_inner).0 += 1;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let out = call();
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.0 += 1;
        counts.1 += u64::from(out.is_ok());
        out
    }
}

pub(crate) fn graded_closed_success(c: &mut Criterion) {
    let mut group = c.benchmark_group("graded_closed_success");
    baselines(&mut group);
    let fuses = fuse_rows("graded-success");
    for (id, fuse) in &fuses {
        fuse_row(&mut group, id, fuse);
    }
    let throttle = MutexThrottle::default();
    row(&mut group, "baseline/mutex_throttle", || throttle.call());
    group.finish();
    for (id, fuse) in &fuses {
        let shown = fuse.snapshot();
        assert_eq!(shown.state, State::Closed, "{id} is not closed");
        assert_eq!(shown.graded_by, None, "{id} shed calls");
    }
}

pub(crate) fn graded_closed_success_threads(c: &mut Criterion) {
    let name = "graded_closed_success_threads=2";
    let mut group = c.benchmark_group(name);
    let fuses = fuse_rows("graded-threads");
    for (id, fuse) in &fuses {
        two_threads(&mut group, name, id, || || fuse_run_with(fuse));
    }
    let throttle = MutexThrottle::default();
    two_threads(&mut group, name, "baseline/mutex_throttle", || {
        || throttle.call()
    });
    group.finish();
    for (id, fuse) in &fuses {
        assert_eq!(fuse.snapshot().graded_by, None, "{id} shed calls");
    }
}

pub(crate) fn graded_shed(c: &mut Criterion) {
    let mut group = c.benchmark_group("graded_shed");
    let failing = || Err::<u64, io::Error>(io::ErrorKind::TimedOut.into());
    // The throttle at its cap (K = 1, up to every call) over a window of
    // 10 s in 1 s buckets, filled for a bucket and a bit first with calls
    // of which one in a thousand succeeds (the first among them): it then
    // sheds about all but one in a thousand. Under `rate` at 100 %, which
    // those successes keep closed.
    let throttled = Fuse::new(
        "graded-shed-throttle",
        config(
            throttling()
                .throttle_k(1.0)
                .max_throttle(100)
                .policy(Policy::Rate)
                .failure_rate(100)
                .failure_window(Duration::from_secs(10)),
        ),
    );
    let start = std::time::Instant::now();
    let mut call = 0u64;
    while start.elapsed() < Duration::from_millis(1_100) {
        call += 1;
        let _ = if call % 1_000 == 1 {
            throttled.run_with(super::user_loop::call, |_| true, |_| true)
        } else {
            throttled.run_with(failing, |_| true, |_| true)
        };
    }
    row(&mut group, "fuse_shed_throttle", || {
        throttled.run_with(failing, |_| true, |_| true)
    });
    shedding("fuse_shed_throttle", &throttled, Grading::Throttle);
    // A ramp of an hour at its floor of 1 %: 99 calls in 100 shed.
    let ramping = Fuse::new(
        "graded-shed-ramp",
        config(
            Config::builder()
                .half_open_probes(1)
                .open_duration(Duration::from_millis(1))
                .ramp_up(Duration::from_hours(1))
                .ramp_up_floor(1),
        ),
    );
    ramping.force_open();
    std::thread::sleep(Duration::from_millis(2));
    ramping.try_acquire().expect("a probe").success();
    row(&mut group, "fuse_shed_ramp", || fuse_run_with(&ramping));
    shedding("fuse_shed_ramp", &ramping, Grading::RampUp);
    let open = Fuse::new("graded-open", Config::default());
    open.force_open();
    row(&mut group, "fuse_open", || fuse_run_with(&open));
    let throttle = MutexThrottle::default();
    {
        let mut counts = throttle
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *counts = (1_000_000, 0);
    }
    row(&mut group, "baseline/mutex_throttle", || throttle.call());
    group.finish();
}

/// Checks, right after its row, that `fuse` was shedding nearly every
/// call by `why` (a throttle's window holds its last 10 s).
fn shedding(id: &str, fuse: &Fuse, why: Grading) {
    let shown = fuse.snapshot();
    assert_eq!(shown.state, State::Closed, "{id}: {shown:?}");
    assert_eq!(shown.graded_by, Some(why), "{id}: {shown:?}");
    assert!(shown.admission.to_f64() < 0.02, "{id}: {shown:?}");
}
