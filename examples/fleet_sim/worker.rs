//! The child processes: one process of the fleet, on its own runtime and
//! its own connection, told when to start and when to stop on stdin, its
//! counts reported on stdout as one line of `name=value` fields.

use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use fuse_breaker::store::{Counting, Error, Refusal, SharedFuse, Store};
use fuse_breaker::{Config, classify::FailureKind, config::Policy};

use crate::load::{Span, drive};

/// The staleness bound of the load rows' cached mode.
pub(crate) const STALENESS: Duration = Duration::from_millis(100);

/// A runtime for one process of the fleet.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a runtime: {e}"))
}

/// The store at `url`, its round trips counted.
fn store(url: &str) -> Result<Counted, String> {
    let store = fuse_breaker::store::open(url).map_err(|e| e.to_string())?;
    Ok(Arc::new(Counting::new(store)))
}

/// Waits for the parent's `go` on stdin.
fn wait_for_parent() -> Result<(), String> {
    next_line()?.ok_or_else(|| "the parent closed stdin".to_owned())?;
    Ok(())
}

/// Tells the parent something, at once.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed stdout: the parent is gone, and the process with it.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Now on the system-wide clock every process reads alike, in nanoseconds
/// since the Unix epoch.
pub(crate) fn now_nanos() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(now.as_nanos()).unwrap_or(u64::MAX)
}

/// The CPU time this process used so far, every thread's, in seconds
/// (`/proc/self/stat`, in clock ticks of 1/100 s; 0 where there is none).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some((_, fields)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = fields.split_whitespace().collect();
    // utime and stime: the 14th and 15th fields, the 12th and 13th after
    // the command's name.
    let ticks = |i: usize| fields.get(i).and_then(|t| t.parse::<u64>().ok());
    let total = ticks(11).unwrap_or(0) + ticks(12).unwrap_or(0);
    #[allow(clippy::cast_precision_loss)]
    let seconds = total as f64 / 100.0;
    seconds
}

/// A process's store, its round trips counted.
type Counted = Arc<Counting<Arc<dyn Store>>>;

/// The load rows' circuit: the `rate` policy, opening at 25 % of failures
/// over at least 100 calls in a 10 s window, open for 500 ms.
fn load_config() -> Result<Config, String> {
    Config::builder()
        .policy(Policy::Rate)
        .failure_rate(25)
        .minimum_calls(100)
        .failure_window(Duration::from_secs(10))
        .open_duration(Duration::from_millis(500))
        .build()
        .map_err(|e| e.to_string())
}

/// A load process: `tasks` tasks call the circuit `name` for `seconds`, a
/// call in every thousand `per_mille` failing, spread evenly; strict, or
/// cached with [`STALENESS`].
pub(crate) struct Load {
    pub(crate) url: String,
    pub(crate) name: String,
    pub(crate) cached: bool,
    pub(crate) per_mille: u64,
    pub(crate) tasks: usize,
    pub(crate) seconds: f64,
}

impl Load {
    pub(crate) fn run(self) -> Result<(), String> {
        let runtime = runtime()?;
        let store = runtime.block_on(async { store(&self.url) })?;
        let mut builder = fuse_breaker::Fuse::builder(self.name.clone())
            .store(store.clone())
            .config(load_config()?);
        if self.cached {
            builder = builder.cached(STALENESS);
        }
        let fuse = Arc::new(runtime.block_on(async { builder.build() }));
        runtime
            .block_on(fuse.run_async(async { Ok::<_, FailureKind>(()) }))
            .map_err(|e| format!("the first call: {e:?}"))?;
        say("ready");
        wait_for_parent()?;
        let (trips, cpu) = (store.round_trips(), cpu_seconds());
        let counts = Arc::new(Counts::default());
        let (circuit, tally, per_mille) = (fuse.clone(), counts.clone(), self.per_mille);
        let time = Duration::try_from_secs_f64(self.seconds)
            .map_err(|e| format!("{} seconds: {e}", self.seconds))?;
        let (calls, time) = runtime.block_on(drive(self.tasks, Span::Time(time), move |_| {
            let (fuse, counts) = (circuit.clone(), tally.clone());
            async move {
                // The process's calls in order, whichever task makes them:
                // its failures spread evenly over its calls, the first
                // after as many successes as the share allows (so that no
                // two tasks of a row fail at once by design).
                let n = counts.sequence.fetch_add(1, Ordering::Relaxed) + 1;
                let outcome = if (n * per_mille) % 1000 < per_mille {
                    Err(FailureKind::Timeout)
                } else {
                    Ok(())
                };
                counts.add(&fuse.run_async(async move { outcome }).await);
                if !fuse.store_reachable() {
                    // Decided by the fallback, not by the store.
                    counts.unreachable.fetch_add(1, Ordering::Relaxed);
                }
                // A call that never waits would keep its worker thread
                // from the runtime's other tasks (the channel of
                // announcements, the batch's flush).
                tokio::task::yield_now().await;
            }
        }));
        if self.cached {
            // The successes batched are sent within a staleness.
            runtime.block_on(async { tokio::time::sleep(2 * STALENESS).await });
        }
        say(&format!(
            "calls={calls} run={} rejected={} errors={} unreachable={} trips={} cpu={:.2} \
             seconds={:.4}",
            counts.run.load(Ordering::Relaxed),
            counts.rejected.load(Ordering::Relaxed),
            counts.errors.load(Ordering::Relaxed),
            counts.unreachable.load(Ordering::Relaxed),
            store.round_trips() - trips,
            cpu_seconds() - cpu,
            time.as_secs_f64(),
        ));
        Ok(())
    }
}

/// A load process's calls by what became of them.
#[derive(Default)]
struct Counts {
    /// Calls begun.
    sequence: AtomicU64,
    run: AtomicU64,
    rejected: AtomicU64,
    errors: AtomicU64,
    /// Calls after which the store was found unreachable (decided by the
    /// fallback, the local circuit).
    unreachable: AtomicU64,
}

impl Counts {
    fn add(&self, result: &Result<(), Error<FailureKind>>) {
        let counter = match result {
            Ok(()) | Err(Error::Inner(_)) => &self.run,
            Err(Error::Refused(Refusal::Open(_))) => &self.rejected,
            Err(_) => &self.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The spread rows' circuit: cached with a 5 s staleness (only
/// announcements change a mirror within it, so a lost one shows as a
/// delay of up to 5 s), open for a minute (until closed by hand).
fn spread_fuse(url: &str, name: &str) -> Result<(Arc<SharedFuse>, Counted), String> {
    let config = Config::builder()
        .open_duration(Duration::from_mins(1))
        .build()
        .map_err(|e| e.to_string())?;
    let store = store(url)?;
    let fuse = fuse_breaker::Fuse::builder(name)
        .store(store.clone())
        .config(config)
        .cached(Duration::from_secs(5))
        .build();
    Ok((Arc::new(fuse), store))
}

/// Gets ready for a spread row: the mirror read, the channel listened to.
fn spread_ready(runtime: &tokio::runtime::Runtime, fuse: &SharedFuse) -> Result<(), String> {
    runtime
        .block_on(fuse.run_async(async { Ok::<_, FailureKind>(()) }))
        .map_err(|e| format!("the first call: {e:?}"))?;
    // The subscription is made on the runtime's tasks: give it time.
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    say("ready");
    Ok(())
}

/// The parent's next line on stdin (`None`: stdin closed).
fn next_line() -> Result<Option<String>, String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) => Ok(None),
        Ok(_) => Ok(Some(line.trim_end().to_owned())),
        Err(e) => Err(format!("stdin: {e}")),
    }
}

/// The process that opens the circuit (`open`) and closes it (`close`)
/// when the parent says so, each time answering when it began to write.
pub(crate) fn opener(url: &str, name: &str) -> Result<(), String> {
    let runtime = runtime()?;
    let (fuse, _) = runtime.block_on(async { spread_fuse(url, name) })?;
    spread_ready(&runtime, &fuse)?;
    while let Some(line) = next_line()? {
        let at = now_nanos();
        let done = match line.as_str() {
            "open" => runtime.block_on(fuse.force_open()),
            "close" => runtime.block_on(fuse.force_closed()),
            _ => break,
        };
        done.map_err(|e| e.to_string())?;
        say(&format!("at={at}"));
    }
    Ok(())
}

/// A process that looks at its mirror every `poll` (an admission the
/// mirror decides, dropped unused: no round trip) until the parent closes
/// its stdin, telling the parent when it first saw the circuit open
/// (`open=`) and closed again (`closed=`); then its round trips.
pub(crate) fn watcher(url: &str, name: &str, poll: Duration) -> Result<(), String> {
    let runtime = runtime()?;
    let (fuse, store) = runtime.block_on(async { spread_fuse(url, name) })?;
    spread_ready(&runtime, &fuse)?;
    let trips = store.round_trips();
    let stop = Arc::new(AtomicBool::new(false));
    let (handle, watching, stopped) = (runtime.handle().clone(), fuse.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let mut open = false;
        while !stopped.load(Ordering::Relaxed) {
            let refused = handle
                .block_on(async { matches!(watching.try_acquire().await, Err(Refusal::Open(_))) });
            if refused != open {
                let what = if refused { "open" } else { "closed" };
                say(&format!("{what}={}", now_nanos()));
                open = refused;
            }
            std::thread::sleep(poll);
        }
    });
    let read = next_line();
    stop.store(true, Ordering::Relaxed);
    thread.join().map_err(|_| "the watching thread panicked")?;
    read?;
    say(&format!("trips={}", store.round_trips() - trips));
    Ok(())
}
