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
//! - `read-modify-write`: milon/fuse's way, a GET before the call and a
//!   SET after it, for the same workloads (its lost failures counted the
//!   same way).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::store::{Counting, RedisStore, SharedFuse};
use fuse_breaker::{Config, FailureKind};

/// A workload's result: calls made in how long, round trips, and for
/// failures how many of those recorded the key does not hold.
struct Row {
    calls: u64,
    time: Duration,
    trips: u64,
    lost: Option<u64>,
}

fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("load-{what}-{}-{nanos}", std::process::id())
}

/// The staleness bound of the cached rows.
const STALENESS: Duration = Duration::from_millis(100);

/// How many failures a failure row records in all.
const FAILURES: u64 = 256;

/// What each call of a row does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    Successes,
    Alternating,
    Failures,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Successes => "successes",
            Workload::Alternating => "alternating",
            Workload::Failures => "failures",
        }
    }

    fn span(self, time: Duration) -> Span {
        match self {
            Workload::Failures => Span::Calls(FAILURES),
            _ => Span::Time(time),
        }
    }

    /// Whether a task's call number `n` fails.
    fn fails(self, n: u64) -> bool {
        match self {
            Workload::Successes => false,
            Workload::Alternating => n.is_multiple_of(2),
            Workload::Failures => true,
        }
    }
}

/// How long a row runs: for `time`, or until `FAILURES` calls were made.
#[derive(Clone, Copy)]
enum Span {
    Time(Duration),
    Calls(u64),
}

/// Runs `call` on `tasks` tasks for `span` (each call given the number of
/// the task's calls before it); the calls made and the time.
async fn drive<F, Fut>(tasks: usize, span: Span, call: F) -> (u64, Duration)
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let call = Arc::new(call);
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let limit = match span {
        Span::Time(_) => u64::MAX,
        Span::Calls(n) => n,
    };
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (call, stop, calls) = (call.clone(), stop.clone(), calls.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) && calls.fetch_add(1, Ordering::Relaxed) < limit
                {
                    call(n).await;
                    n += 1;
                }
            })
        })
        .collect();
    if let Span::Time(time) = span {
        tokio::time::sleep(time).await;
        stop.store(true, Ordering::Relaxed);
    }
    for handle in handles {
        handle.await.expect("a task");
    }
    let made = calls.load(Ordering::Relaxed).min(limit);
    // Each task's last count was a call it did not make once stopped.
    let made = if limit == u64::MAX {
        made.saturating_sub(tasks as u64)
    } else {
        made
    };
    (made, started.elapsed())
}

/// A shared circuit's row: strict mode, or cached with `staleness`.
async fn shared(
    url: &str,
    tasks: usize,
    time: Duration,
    workload: Workload,
    staleness: Option<Duration>,
) -> Row {
    let store = Arc::new(Counting::new(RedisStore::open(url).expect("a Redis URL")));
    // A threshold no run reaches, a window longer than any run.
    let config = Config::builder()
        .failure_threshold(fuse_breaker::MAX_FAILURE_THRESHOLD)
        .build()
        .expect("a valid configuration");
    let mut builder = SharedFuse::builder(unique("shared"), store.clone()).config(config);
    if let Some(staleness) = staleness {
        builder = builder.cached(staleness);
    }
    let fuse = Arc::new(builder.build());
    let circuit = fuse.clone();
    let (calls, time) = drive(tasks, workload.span(time), move |n| {
        let fuse = circuit.clone();
        async move {
            let outcome = if workload.fails(n) {
                Err(FailureKind::Timeout)
            } else {
                Ok(())
            };
            let _ = fuse.run_async(async move { outcome }).await;
        }
    })
    .await;
    let trips = store.round_trips();
    let lost = if workload == Workload::Failures {
        let held = fuse
            .snapshot()
            .await
            .expect("a readable circuit")
            .failures
            .len();
        Some(calls.saturating_sub(held as u64))
    } else {
        None
    };
    Row {
        calls,
        time,
        trips,
        lost,
    }
}

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
            let mut snapshot: serde_json::Value = read
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or_else(|| {
                    serde_json::json!({"state": "closed", "opened_at": null, "failures": [],
                        "half_open_successes": 0, "half_open_inflight": 0})
                });
            // The call ran; record its outcome in the snapshot read before.
            if workload.fails(n) {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                if let Some(failures) = snapshot["failures"].as_array_mut() {
                    failures.push(now.into());
                }
            } else {
                snapshot["failures"] = serde_json::json!([]);
            }
            let _: () = redis::cmd("SET")
                .arg(&*key)
                .arg(snapshot.to_string())
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
        let held = text
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|value| value["failures"].as_array().map(Vec::len))
            .unwrap_or(0);
        Some(calls.saturating_sub(held as u64))
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

fn print(workload: &str, tasks: usize, row: &Row) {
    // Counts far below 2^52: exact as f64.
    #[allow(clippy::cast_precision_loss)]
    let (calls, trips) = (row.calls as f64, row.trips as f64);
    let per_second = calls / row.time.as_secs_f64();
    let trips = trips / calls.max(1.0);
    let lost = row
        .lost
        .map_or_else(|| "-".to_owned(), |lost| format!("{lost} of {}", row.calls));
    println!("| {workload} | {tasks} | {per_second:.0} | {trips:.2} | {lost} |");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut url = std::env::var("FUSE_TEST_REDIS_URL").ok();
    let mut seconds = 2.0;
    while let Some(arg) = args.next() {
        if arg == "--seconds" {
            seconds = args
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--seconds takes a number");
        } else {
            url = Some(arg);
        }
    }
    let Some(url) = url else {
        eprintln!("usage: store_load [redis://host:port] [--seconds N] (or FUSE_TEST_REDIS_URL)");
        std::process::exit(2);
    };
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
                let row = shared(&url, tasks, time, workload, None).await;
                print(&format!("strict, {what}"), tasks, &row);
                if workload != Workload::Failures {
                    let row = shared(&url, tasks, time, workload, Some(STALENESS)).await;
                    print(&format!("cached (100 ms), {what}"), tasks, &row);
                }
                let row = read_modify_write(&url, tasks, time, workload).await;
                print(&format!("read-modify-write, {what}"), tasks, &row);
            }
        }
    });
}
