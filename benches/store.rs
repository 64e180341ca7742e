//! A shared circuit in cached mode against the in-process engine, in the
//! closed steady state (no round trip: the mirror decides), in criterion.
//!
//! ```sh
//! cargo bench --bench store --features store
//! ```
//!
//! - `in_process/fuse`: `Fuse::try_acquire` and `success`;
//! - `cached/shared_fuse`: `SharedFuse::try_acquire` and `success` of a
//!   circuit in cached mode (a 60 s staleness) whose mirror is a quiet
//!   closed circuit, each future polled once where it is with a no-op
//!   waker (both are ready at once: no round trip);
//! - `cached/shared_fuse_rate`: the same under the `rate` policy, where
//!   each success is counted in the process's batch (to be sent with the
//!   next round trip, at least once per staleness) rather than nowhere;
//! - `baseline/ready_future`: polling a ready future, the floor of any
//!   asynchronous call here;
//! - `strict_payload/json` and `strict_payload/php`: a strict circuit on a
//!   `MemoryStore`, a failure then a success (each verdict reads the
//!   payload and writes it back), with the payload in JSON and in PHP's
//!   `serialize()` (Laravel's cache): what the encoding costs a call that
//!   writes.

use std::future::{Future, ready};
use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::Criterion;
use fuse_breaker::store::{Codec, Encoding, MemoryStore};
use fuse_breaker::{Config, Fuse, config::Policy};

/// Polls `future` once where it is (as an executor polls a task's future
/// in place).
#[inline]
fn poll_once<F: Future + Unpin>(future: &mut F, cx: &mut Context<'_>) -> F::Output {
    match Pin::new(future).poll(cx) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("ready at once in the closed steady state"),
    }
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .configure_from_args();
    let mut cx = Context::from_waker(Waker::noop());

    let fuse = Fuse::new("bench", Config::default());
    let mut group = criterion.benchmark_group("closed_success");
    group.bench_function("in_process/fuse", |b| {
        b.iter(|| {
            black_box(
                fuse.try_acquire()
                    .map(<fuse_breaker::Permit>::success)
                    .is_ok(),
            )
        });
    });

    let shared = fuse_breaker::Fuse::builder("bench")
        .store(Arc::new(MemoryStore::new()))
        .cached(Duration::from_mins(1))
        .build();
    // The first call reads the key: the mirror is quiet from then on.
    futures::executor::block_on(async {
        shared.try_acquire().await.unwrap().success().await.unwrap();
    });
    group.bench_function("cached/shared_fuse", |b| {
        b.iter(|| {
            let permit = poll_once(&mut shared.try_acquire(), &mut cx).expect("closed");
            black_box(poll_once(&mut permit.success(), &mut cx).is_ok())
        });
    });
    let rate = Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(fuse_breaker::config::MAX_MINIMUM_CALLS)
        .build()
        .expect("a valid configuration");
    let shared_rate = fuse_breaker::Fuse::builder("bench-rate")
        .store(Arc::new(MemoryStore::new()))
        .config(rate)
        .cached(Duration::from_mins(1))
        .build();
    futures::executor::block_on(async {
        shared_rate
            .try_acquire()
            .await
            .unwrap()
            .success()
            .await
            .unwrap();
    });
    group.bench_function("cached/shared_fuse_rate", |b| {
        b.iter(|| {
            let permit = poll_once(&mut shared_rate.try_acquire(), &mut cx).expect("closed");
            black_box(poll_once(&mut permit.success(), &mut cx).is_ok())
        });
    });
    group.bench_function("baseline/ready_future", |b| {
        b.iter(|| black_box(poll_once(&mut ready(black_box(1u64)), &mut cx)));
    });
    group.finish();

    let mut group = criterion.benchmark_group("strict_payload");
    for (name, encoding) in [("json", Encoding::Json), ("php", Encoding::Php)] {
        let store = MemoryStore::new().with_codec(Codec::new(encoding));
        let strict = fuse_breaker::Fuse::builder("bench-strict")
            .store(Arc::new(store))
            .build();
        group.bench_function(name, |b| {
            b.iter(|| {
                futures::executor::block_on(async {
                    strict.try_acquire().await.unwrap().failure().await.unwrap();
                    black_box(strict.try_acquire().await.unwrap().success().await.is_ok())
                })
            });
        });
    }
    group.finish();
    criterion.final_summary();
}
