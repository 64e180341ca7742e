//! A dependency goes down and comes back, behind a [`Fuse`].
//!
//! Run it with `cargo run --example demo` (add `--release` for representative
//! latency figures). It takes about 4 s of real time on one thread.
//!
//! The simulated dependency, `Inventory`, answers in about 1 ms while healthy
//! (and now and then with a "not found" business error, which the circuit
//! ignores). From 0.8 s to 2.6 s it refuses every connection
//! (`ErrorKind::ConnectionRefused`, a counted failure); after that it is
//! healthy again. One loop calls it every ~6 ms through a circuit with short
//! durations: threshold 5, failure window 1 s, open duration 400 ms doubling
//! after each failed probe up to 1.6 s and shortened at random by up to a
//! quarter (SPEC §10's backoff and jitter), 2 probes.
//!
//! The timeline shows, every 250 ms, how many calls were admitted, rejected,
//! failed (counted) and ignored, and the state at the end of that stretch,
//! with a line of its own for every state change:
//!
//! 1. **`closed -> open`**: the fifth counted failure inside the window opens
//!    the circuit.
//! 2. **rejections**: while open, calls are rejected with an
//!    [`OpenError`](fuse_breaker::OpenError) and the dependency is not called
//!    at all; the first rejection of each opening prints its `retry_after`.
//! 3. **`open -> half_open`**: the first call after the cooldown is let
//!    through as a probe. While the dependency is still down that probe fails
//!    and the circuit goes straight back to open (`half_open -> open`) for
//!    longer: each opening in a row lasts twice the last (up to 1.6 s), less
//!    a random share of up to a quarter drawn once per opening, so that many
//!    processes do not all probe at one instant. Each opening prints its
//!    place in the row and its duration.
//! 4. **`half_open -> closed`**: once the dependency is back, two successful
//!    probes close the circuit and traffic flows again.
//!
//! The summary compares the calls the dependency really received with the
//! calls rejected without running, and reports the decision latency: the time
//! spent in [`Fuse::try_acquire`] plus the verdict (`permit.success()`,
//! `failure()` or `ignore()`), measured with [`Instant`] around those two
//! steps only, never around the dependency call. The loop spells out what
//! [`Fuse::run`] does (admit, call, classify, give the verdict) so that the
//! two halves can be timed separately. Calls are milliseconds apart, so each
//! decision runs on cold caches: these figures are an upper bound, well above
//! what a hot loop measures.

use std::io;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use fuse_breaker::{Config, Fuse, OpenError, Permit, State, Verdict, classify::Classify};

/// Counted failures inside the window that open the circuit.
const THRESHOLD: u32 = 5;
/// How long a counted failure counts.
const WINDOW: Duration = Duration::from_secs(1);
/// How long an open circuit first rejects calls before probing.
const OPEN_FOR: Duration = Duration::from_millis(400);
/// Each failed probe doubles the next opening...
const BACKOFF: f64 = 2.0;
/// ...up to this.
const MAX_OPEN_FOR: Duration = Duration::from_millis(1600);
/// Each opening is shortened by a random share of up to this much of itself.
const JITTER: f64 = 0.25;
/// Probes allowed while half-open, and successes needed to close.
const PROBES: u32 = 2;

/// When the dependency starts refusing connections.
const DOWN_AT: Duration = Duration::from_millis(800);
/// When the dependency is healthy again.
const UP_AT: Duration = Duration::from_millis(2600);
/// Latency of a healthy answer.
const LATENCY: Duration = Duration::from_millis(1);
/// Every n-th request received is answered with an ignored business error.
const BUSINESS_ERROR_EVERY: u64 = 25;

/// Length of one row of the timeline.
const BUCKET: Duration = Duration::from_millis(250);
/// Number of rows: 16 x 250 ms = 4 s.
const BUCKETS: u32 = 16;
/// Pause between two calls.
const PACE: Duration = Duration::from_millis(5);

fn main() {
    let fuse = circuit();
    let config = fuse.config();
    println!(
        "circuit {}: threshold {}, window {:?}, open {:?} (x{} per failed probe, \
         at most {:?}, jitter {}), {} probes",
        fuse.key(),
        config.failure_threshold(),
        config.failure_window(),
        config.open_duration(),
        config.open_backoff(),
        config.max_open_duration(),
        config.open_jitter(),
        config.half_open_probes(),
    );
    println!(
        "dependency: healthy, refusing connections from {:.1}s to {:.1}s, then healthy\n",
        DOWN_AT.as_secs_f64(),
        UP_AT.as_secs_f64(),
    );
    println!(
        "{:>8}  {:>8}  {:>8}  {:>8}  {:>8}  state",
        "elapsed", "admitted", "rejected", "failed", "ignored"
    );

    let mut demo = Demo::new(fuse);
    for row in 1..=BUCKETS {
        let end = BUCKET * row;
        while demo.start.elapsed() < end {
            demo.call_once();
            thread::sleep(PACE);
        }
        demo.end_bucket(end);
    }
    demo.summary();
}

/// The demo's circuit: `inventory`/`lookup` with the short settings above,
/// or, given a configuration file as argument (feature `config-file`),
/// from the registry that file describes (with `FUSE_*` variables applied):
///
/// ```sh
/// cargo run --example demo --features config-file -- examples/fuse.toml
/// ```
fn circuit() -> Arc<Fuse> {
    if let Some(path) = std::env::args().nth(1) {
        return from_file(&path);
    }
    let config = Config::builder()
        .failure_threshold(THRESHOLD)
        .failure_window(WINDOW)
        .open_duration(OPEN_FOR)
        .open_backoff(BACKOFF)
        .max_open_duration(MAX_OPEN_FOR)
        .open_jitter(JITTER)
        .half_open_probes(PROBES)
        .build()
        .expect("the demo's settings are inside the documented limits");
    Arc::new(
        Fuse::builder("inventory")
            .operation("lookup")
            .config(config)
            .build(),
    )
}

#[cfg(feature = "config-file")]
fn from_file(path: &str) -> Arc<Fuse> {
    let registry = fuse_breaker::settings::Settings::from_file(path)
        .and_then(fuse_breaker::settings::Settings::with_env)
        .and_then(|settings| settings.registry());
    match registry {
        Ok(registry) => {
            println!("configuration: {path}");
            registry.get_operation("inventory", "lookup")
        }
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(2);
        }
    }
}

#[cfg(not(feature = "config-file"))]
fn from_file(path: &str) -> Arc<Fuse> {
    eprintln!(
        "reading {path} needs the config-file feature: \
         cargo run --example demo --features config-file -- {path}"
    );
    std::process::exit(2);
}

/// The simulated dependency: its health depends on the time since `start`.
struct Inventory {
    start: Instant,
    /// Requests that actually reached the dependency.
    received: u64,
}

impl Inventory {
    fn call(&mut self) -> io::Result<u64> {
        self.received += 1;
        let now = self.start.elapsed();
        if (DOWN_AT..UP_AT).contains(&now) {
            // Refused connections fail fast: no latency.
            return Err(io::Error::from(io::ErrorKind::ConnectionRefused));
        }
        thread::sleep(LATENCY);
        if self.received.is_multiple_of(BUSINESS_ERROR_EVERY) {
            // A business answer, not an outage: the circuit ignores it.
            return Err(io::Error::new(io::ErrorKind::NotFound, "item not found"));
        }
        Ok(self.received)
    }
}

/// Ends `permit` the way [`Fuse::run`] does: `Ok` is a success, an error is
/// a counted failure if the configuration counts its kind, ignored
/// otherwise; returns the verdict.
fn settle<T, E: Classify>(fuse: &Fuse, permit: Permit<'_>, result: &Result<T, E>) -> Verdict {
    let config = fuse.config();
    let verdict = Verdict::for_outcome(
        result,
        |_| Verdict::Success,
        |err| Verdict::for_kind(err.failure_kind(), config),
    );
    permit.conclude(verdict);
    verdict
}

/// Call counts, per row of the timeline and in total.
#[derive(Clone, Copy, Default)]
struct Counts {
    admitted: u64,
    rejected: u64,
    ok: u64,
    failed: u64,
    ignored: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.admitted += other.admitted;
        self.rejected += other.rejected;
        self.ok += other.ok;
        self.failed += other.failed;
        self.ignored += other.ignored;
    }
}

/// Follows the circuit's state and prints a line for every change.
struct Timeline {
    start: Instant,
    /// The state seen at the last observation.
    state: State,
    /// Every state change seen: when, from, to.
    transitions: Vec<(Duration, State, State)>,
    /// Counted failures since the last success or state change.
    failure_streak: u32,
    /// Whether the first rejection of the current opening was printed.
    rejection_reported: bool,
    /// The circuit's settings, to explain its transitions.
    window: Duration,
    probes: u32,
    /// How long each opening lasted (as drawn when it opened).
    openings: Vec<Duration>,
}

impl Timeline {
    /// Notes how an admitted call ended.
    fn record(&mut self, outcome: Verdict) {
        match outcome {
            Verdict::Success => self.failure_streak = 0,
            Verdict::Failure => self.failure_streak += 1,
            Verdict::Ignore => {}
        }
    }

    /// Prints a line if the state of `fuse` differs from the state seen
    /// last; an opening also prints its place in the row and its duration.
    fn observe(&mut self, fuse: &Fuse, error: Option<&io::Error>) {
        let before = self.state;
        let snapshot = fuse.snapshot();
        let now = snapshot.state;
        if now == before {
            return;
        }
        let at = self.start.elapsed();
        let opening = match snapshot.open_for {
            Some(open_for) => {
                self.openings.push(open_for);
                format!(
                    "opening {} in a row, for {}",
                    snapshot.openings,
                    ms(open_for)
                )
            }
            None => String::new(),
        };
        let why = match (before, now) {
            (State::Closed, State::Open) => {
                format!(
                    "{} counted failures within {:?}; {}",
                    self.failure_streak, self.window, opening
                )
            }
            (State::Open, State::HalfOpen) => {
                let last = self.openings.last().copied().unwrap_or_default();
                format!("cooldown of {} over: this call is a probe", ms(last))
            }
            (State::HalfOpen, State::Open) => match error {
                Some(err) => format!("probe failed: {err}; {opening}"),
                None => format!("probe failed; {opening}"),
            },
            (State::HalfOpen, State::Closed) => format!("{} probes succeeded", self.probes),
            _ => String::new(),
        };
        println!("{}  state {before} -> {now}  ({why})", secs(at));
        self.transitions.push((at, before, now));
        self.state = now;
        self.failure_streak = 0;
        if now == State::Open {
            self.rejection_reported = false;
        }
    }

    /// Prints the end of a probe that left the circuit half-open.
    fn probe_ended(&self, outcome: Verdict) {
        let what = match outcome {
            Verdict::Success => "succeeded",
            Verdict::Failure => "failed",
            Verdict::Ignore => "ended with an ignored error",
        };
        println!(
            "{}  probe {what}; still half_open",
            secs(self.start.elapsed())
        );
    }

    /// Prints the first rejection of each opening, with its `retry_after`.
    fn rejected(&mut self, open: &OpenError) {
        if !self.rejection_reported {
            self.rejection_reported = true;
            println!(
                "{}  rejected without calling the dependency: retry after {}",
                secs(self.start.elapsed()),
                ms(open.retry_after()),
            );
        }
    }

    /// `closed -> open -> half_open -> ...`
    fn path(&self) -> String {
        let first = self.transitions.first().map(|&(_, from, _)| from);
        first
            .into_iter()
            .chain(self.transitions.iter().map(|&(_, _, to)| to))
            .map(State::as_str)
            .collect::<Vec<_>>()
            .join(" -> ")
    }
}

/// The circuit, the dependency and everything the demo measures.
struct Demo {
    fuse: Arc<Fuse>,
    dependency: Inventory,
    start: Instant,
    timeline: Timeline,
    bucket: Counts,
    total: Counts,
    /// Admission + verdict of admitted calls, in nanoseconds.
    admitted_ns: Vec<u64>,
    /// Admission of rejected calls, in nanoseconds.
    rejected_ns: Vec<u64>,
}

impl Demo {
    fn new(fuse: Arc<Fuse>) -> Self {
        let start = Instant::now();
        Demo {
            timeline: Timeline {
                start,
                state: fuse.state(),
                window: fuse.config().failure_window(),
                probes: fuse.config().half_open_probes(),
                openings: Vec::new(),
                transitions: Vec::new(),
                failure_streak: 0,
                rejection_reported: false,
            },
            fuse,
            dependency: Inventory { start, received: 0 },
            start,
            bucket: Counts::default(),
            total: Counts::default(),
            admitted_ns: Vec::new(),
            rejected_ns: Vec::new(),
        }
    }

    /// One call: admission (timed), the dependency (not timed), the verdict
    /// (timed), then a look at the state.
    fn call_once(&mut self) {
        let admit_start = Instant::now();
        let admission = self.fuse.try_acquire();
        let admit_time = admit_start.elapsed();

        let permit = match admission {
            Ok(permit) => permit,
            Err(open) => {
                self.rejected_ns.push(nanos(admit_time));
                self.bucket.rejected += 1;
                self.timeline.rejected(&open);
                return;
            }
        };

        // A probe granted by an open circuit has moved it to half-open.
        self.timeline.observe(&self.fuse, None);

        let probe = permit.is_probe();
        // The dependency call itself is outside both timed sections.
        let result = self.dependency.call();

        let verdict_start = Instant::now();
        let outcome = settle(&self.fuse, permit, &result);
        let verdict_time = verdict_start.elapsed();
        self.admitted_ns.push(nanos(admit_time + verdict_time));

        self.bucket.admitted += 1;
        match outcome {
            Verdict::Success => self.bucket.ok += 1,
            Verdict::Failure => self.bucket.failed += 1,
            Verdict::Ignore => self.bucket.ignored += 1,
        }
        self.timeline.record(outcome);
        let state = self.fuse.state();
        if probe && state == State::HalfOpen {
            self.timeline.probe_ended(outcome);
        }
        self.timeline.observe(&self.fuse, result.as_ref().err());
    }

    /// Prints the row of the stretch that ends at `end` and starts a new one.
    fn end_bucket(&mut self, end: Duration) {
        let b = self.bucket;
        println!(
            "{}  {:>8}  {:>8}  {:>8}  {:>8}  {}",
            secs(end),
            b.admitted,
            b.rejected,
            b.failed,
            b.ignored,
            self.fuse.state(),
        );
        self.total.add(b);
        self.bucket = Counts::default();
    }

    fn summary(&mut self) {
        let t = self.total;
        println!("\nsummary after {}", secs(self.start.elapsed()));
        println!("  calls attempted          {:>6}", t.admitted + t.rejected);
        println!(
            "  admitted (ran)           {:>6}  ok {}, counted failures {}, ignored {}",
            t.admitted, t.ok, t.failed, t.ignored
        );
        println!("  rejected (did not run)   {:>6}", t.rejected);
        println!(
            "  dependency received      {:>6}  ({})",
            self.dependency.received,
            if self.dependency.received == t.admitted {
                "exactly the admitted calls"
            } else {
                "MISMATCH with the admitted calls"
            }
        );
        println!(
            "  state changes            {:>6}  {}",
            self.timeline.transitions.len(),
            self.timeline.path()
        );
        let openings: Vec<String> = self.timeline.openings.iter().map(|&d| ms(d)).collect();
        println!(
            "  openings                 {:>6}  {}",
            openings.len(),
            openings.join(", ")
        );

        println!(
            "\ndecision latency: try_acquire + verdict, dependency call excluded ({})",
            if cfg!(debug_assertions) {
                "debug build; use --release for optimised figures"
            } else {
                "release build"
            }
        );
        println!(
            "  {:<30}{:>7}  {:>8}  {:>8}  {:>8}",
            "", "calls", "p50 ns", "p99 ns", "max ns"
        );
        let mut all = [self.admitted_ns.as_slice(), self.rejected_ns.as_slice()].concat();
        print_latency("admitted (acquire + verdict)", &mut self.admitted_ns);
        print_latency("rejected (acquire only)", &mut self.rejected_ns);
        print_latency("all calls", &mut all);
        println!(
            "  (calls are ~6 ms apart, so every decision starts on cold caches; the \
             figures also include the cost of reading Instant)"
        );
    }
}

/// Prints p50 / p99 / max of `samples` (sorted in place).
fn print_latency(label: &str, samples: &mut [u64]) {
    samples.sort_unstable();
    let show = |p: Option<u64>| p.map_or_else(|| "-".to_owned(), |ns| ns.to_string());
    println!(
        "  {label:<30}{:>7}  {:>8}  {:>8}  {:>8}",
        samples.len(),
        show(percentile(samples, 50)),
        show(percentile(samples, 99)),
        show(samples.last().copied()),
    );
}

/// The nearest-rank percentile `pct` (0..=100) of `sorted` samples.
fn percentile(sorted: &[u64], pct: usize) -> Option<u64> {
    let rank = (sorted.len() * pct).div_ceil(100);
    sorted.get(rank.saturating_sub(1)).copied()
}

/// Nanoseconds of a short duration.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `  1.032s`: a time since the start, in the timeline's first column.
fn secs(d: Duration) -> String {
    format!("{:>7.3}s", d.as_secs_f64())
}

/// `499.2 ms`
fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
