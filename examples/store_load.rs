//! Calls per second and round trips per call of shared circuits on Redis,
//! from one process with 1, 8 and 64 concurrent tasks, next to what
//! milon/fuse does (read the snapshot, decide, write it back) as the
//! anchor.
//!
//! ```sh
//! cargo run --release --example store_load --features redis -- redis://127.0.0.1:6379
//! ```
//!
//! (`FUSE_TEST_REDIS_URL` is read when no URL is given; `--seconds N` sets
//! the time per row, 2 by default.) Each row is one circuit (one key) and
//! one workload:
//!
//! - `strict, successes`: `SharedFuse::run_async` of a call that succeeds,
//!   on a closed circuit: an admission and a verdict, each one round trip,
//!   nothing written;
//! - `strict, alternating`: each task's calls fail and succeed in turn, so
//!   every verdict writes (a failure recorded, then cleared): a
//!   compare-and-set, retried on every lost race (a process's writers take
//!   turns, so only other processes make it lose);
//! - `strict, failures`: 256 counted failures in all, spread over the
//!   tasks, under a threshold they never reach, then the failures the key
//!   holds against those recorded;
//! - `cached (100 ms)`: the same circuits in cached mode, deciding from a
//!   mirror up to 100 ms old (successes on a quiet closed circuit make no
//!   round trip; failures still do);
//! - `rate, ...`: the same rows under the `rate` policy (SPEC §9), whose
//!   window a closed success changes: in strict mode each success is an
//!   increment the server applies (one round trip, no compare-and-set to
//!   lose), in cached mode successes are batched and sent with the next
//!   round trip (at least once per staleness);
//! - `read-modify-write`: milon/fuse's way, a GET before the call and a
//!   SET after it, for the same workloads (its lost failures counted the
//!   same way).

#[path = "common/load.rs"]
mod load;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuse_breaker::config::Policy;
use fuse_breaker::store::RedisStore;
use load::{
    Row, STALENESS, Workload, arguments, drive, lost_failures, named, print,
    read_modify_write_step, shared, unique,
};

/// milon/fuse's store: GET the snapshot, decide, run, SET it back.
async fn read_modify_write(url: &str, tasks: usize, time: Duration, workload: Workload) -> Row {
    let client = redis::Client::open(url).expect("a Redis URL");
    let connection = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis answers");
    let key = Arc::new(unique("rmw"));
    let trips = Arc::new(AtomicU64::new(0));
    let (k, t) = (key.clone(), trips.clone());
    let (calls, time) = drive(tasks, workload.span(time), move |n| {
        let (mut redis, key, trips) = (connection.clone(), k.clone(), t.clone());
        async move {
            let read: Option<String> = redis::cmd("GET")
                .arg(&*key)
                .query_async(&mut redis)
                .await
                .expect("GET");
            // The call ran; record its outcome in the snapshot read before.
            let written = read_modify_write_step(read.as_deref(), workload, n);
            let _: () = redis::cmd("SET")
                .arg(&*key)
                .arg(written)
                .arg("PX")
                .arg(120_000)
                .query_async(&mut redis)
                .await
                .expect("SET");
            trips.fetch_add(2, Ordering::Relaxed);
        }
    })
    .await;
    let lost = if workload == Workload::Failures {
        let mut redis = client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis answers");
        let text: Option<String> = redis::cmd("GET")
            .arg(&*key)
            .query_async(&mut redis)
            .await
            .expect("GET");
        Some(lost_failures(calls, text.as_deref()))
    } else {
        None
    };
    Row {
        calls,
        time,
        trips: trips.load(Ordering::Relaxed),
        lost,
    }
}

fn redis(url: &str) -> RedisStore {
    RedisStore::open(url).expect("a Redis URL")
}

fn main() {
    let (url, seconds) = arguments("FUSE_TEST_REDIS_URL", "store_load [redis://host:port]");
    let time = Duration::from_secs_f64(seconds);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        println!("Redis at {url}, {seconds} s per row, one key per row\n");
        println!("| workload | tasks | calls/s | round trips per call | failures lost |");
        println!("| --- | ---: | ---: | ---: | ---: |");
        for tasks in [1, 8, 64] {
            for workload in [
                Workload::Successes,
                Workload::Alternating,
                Workload::Failures,
            ] {
                let what = workload.name();
                for policy in [Policy::Count, Policy::Rate] {
                    let row = shared(redis(&url), tasks, time, workload, None, policy).await;
                    print(&named(policy, &format!("strict, {what}")), tasks, &row);
                    if workload != Workload::Failures {
                        let cached = Some(STALENESS);
                        let row = shared(redis(&url), tasks, time, workload, cached, policy).await;
                        print(
                            &named(policy, &format!("cached (100 ms), {what}")),
                            tasks,
                            &row,
                        );
                    }
                }
                let row = read_modify_write(&url, tasks, time, workload).await;
                print(&format!("read-modify-write, {what}"), tasks, &row);
            }
        }
    });
}
