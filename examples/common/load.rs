//! What the load examples share: workloads, a driver of concurrent tasks,
//! a shared circuit's row, and the table they print.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::store::{Counting, Store};
use fuse_breaker::{Config, classify::FailureKind, config::Policy};

/// A workload's result: calls made in how long, round trips, and for
/// failures how many of those recorded the key does not hold.
pub(crate) struct Row {
    pub(crate) calls: u64,
    pub(crate) time: Duration,
    pub(crate) trips: u64,
    pub(crate) lost: Option<u64>,
}

pub(crate) fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("load-{what}-{}-{nanos}", std::process::id())
}

/// The staleness bound of the cached rows.
pub(crate) const STALENESS: Duration = Duration::from_millis(100);

/// How many failures a failure row records in all.
pub(crate) const FAILURES: u64 = 256;

/// What each call of a row does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    Successes,
    Alternating,
    Failures,
    /// Each call opens the circuit or closes it, in turn (`force_open`,
    /// `force_closed`): a transition per call.
    Transitions,
}

impl Workload {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Successes => "successes",
            Workload::Alternating => "alternating",
            Workload::Failures => "failures",
            Workload::Transitions => "transitions",
        }
    }

    pub(crate) fn span(self, time: Duration) -> Span {
        match self {
            Workload::Failures => Span::Calls(FAILURES),
            _ => Span::Time(time),
        }
    }

    /// Whether a task's call number `n` fails.
    pub(crate) fn fails(self, n: u64) -> bool {
        match self {
            Workload::Successes | Workload::Transitions => false,
            Workload::Alternating => n.is_multiple_of(2),
            Workload::Failures => true,
        }
    }
}

/// How long a row runs: for `time`, or until `FAILURES` calls were made.
#[derive(Clone, Copy)]
pub(crate) enum Span {
    Time(Duration),
    Calls(u64),
}

/// Runs `call` on `tasks` tasks for `span` (each call given the number of
/// the task's calls before it); the calls made and the time.
pub(crate) async fn drive<F, Fut>(tasks: usize, span: Span, call: F) -> (u64, Duration)
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

/// A shared circuit's row on `store` under `policy`: strict mode, or
/// cached with `staleness`.
pub(crate) async fn shared(
    store: impl Store,
    tasks: usize,
    time: Duration,
    workload: Workload,
    staleness: Option<Duration>,
    policy: Policy,
) -> Row {
    let store = Arc::new(Counting::new(store));
    // A threshold (under `rate`: a minimum) no run reaches, a window
    // longer than any run.
    let config = Config::builder()
        .policy(policy)
        .failure_threshold(fuse_breaker::config::MAX_FAILURE_THRESHOLD)
        .minimum_calls(fuse_breaker::config::MAX_MINIMUM_CALLS)
        .build()
        .expect("a valid configuration");
    let mut builder = fuse_breaker::Fuse::builder(unique("shared"))
        .store(store.clone())
        .config(config);
    if let Some(staleness) = staleness {
        builder = builder.cached(staleness);
    }
    let fuse = Arc::new(builder.build());
    let circuit = fuse.clone();
    let (calls, time) = drive(tasks, workload.span(time), move |n| {
        let fuse = circuit.clone();
        async move {
            if workload == Workload::Transitions {
                let _ = if n.is_multiple_of(2) {
                    fuse.force_open().await
                } else {
                    fuse.force_closed().await
                };
                return;
            }
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
        let snapshot = fuse.snapshot().await.expect("a readable circuit");
        let held = match policy {
            Policy::Rate => snapshot.failed,
            _ => snapshot.failures.len() as u64,
        };
        Some(calls.saturating_sub(held))
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

/// The rows of `policy`'s name: `count` rows as they always were, `rate`
/// rows named so.
pub(crate) fn named(policy: Policy, row: &str) -> String {
    match policy {
        Policy::Rate => format!("rate, {row}"),
        _ => row.to_owned(),
    }
}

pub(crate) fn print(workload: &str, tasks: usize, row: &Row) {
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

/// The anchor's step, milon/fuse's way: the snapshot `read` (none: a fresh
/// closed one) with call `n`'s outcome recorded, as the JSON to write back
/// over whatever is there by then.
pub(crate) fn read_modify_write_step(read: Option<&str>, workload: Workload, n: u64) -> String {
    let mut snapshot: serde_json::Value = read
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_else(|| {
            serde_json::json!({"state": "closed", "opened_at": null, "failures": [],
                "half_open_successes": 0, "half_open_inflight": 0})
        });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    if workload == Workload::Transitions {
        let open = n.is_multiple_of(2);
        snapshot["state"] = if open { "open" } else { "closed" }.into();
        snapshot["opened_at"] = if open {
            now.into()
        } else {
            serde_json::Value::Null
        };
    } else if workload.fails(n) {
        if let Some(failures) = snapshot["failures"].as_array_mut() {
            failures.push(now.into());
        }
    } else {
        snapshot["failures"] = serde_json::json!([]);
    }
    snapshot.to_string()
}

/// Of `calls` failures recorded, how many the anchor's snapshot `text`
/// does not hold.
pub(crate) fn lost_failures(calls: u64, text: Option<&str>) -> u64 {
    let held = text
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|value| value["failures"].as_array().map(Vec::len))
        .unwrap_or(0);
    calls.saturating_sub(held as u64)
}

/// The example's arguments: a URL (or `env`'s value) and `--seconds N`
/// (the time per row, 2 by default); `usage` and exit status 2 without a
/// URL.
pub(crate) fn arguments(env: &str, usage: &str) -> (String, f64) {
    let mut args = std::env::args().skip(1);
    let mut url = std::env::var(env).ok();
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
        eprintln!("usage: {usage} [--seconds N] (or {env})");
        std::process::exit(2);
    };
    (url, seconds)
}
