//! Counters and a state gauge through the `metrics` facade (feature
//! `metrics`), labelled by the circuit's key, under the crate's own names
//! (below) or resilience4j's ([`MetricNames`], see `resilience4j.rs`).
//!
//! | metric | kind | counts |
//! | --- | --- | --- |
//! | `fuse_calls_admitted_total` | counter | permits granted, counted when their call ends (with its verdict: a success, a failure or an ignore) |
//! | `fuse_calls_rejected_total` | counter | calls rejected by an open (or full half-open) circuit |
//! | `fuse_calls_throttled_total` | counter | calls a closed circuit shed (SPEC §11), also labelled `reason`: `ramp_up` or `throttle`; not counted in `fuse_calls_rejected_total` |
//! | `fuse_successes_total` | counter | success verdicts |
//! | `fuse_failures_total` | counter | counted-failure verdicts |
//! | `fuse_ignored_total` | counter | ignore verdicts (ignored errors, panics, dropped permits and futures) |
//! | `fuse_transitions_total` | counter | state changes, also labelled `to` and `reason` |
//! | `fuse_state` | gauge | 0 closed, 1 open, 2 half-open |
//! | `fuse_openings_total` | counter | openings, also labelled `n`: SPEC §10's n of the opening (`0` from closed or by `force_open`, one more for each failed probe in a row), `0` to `8`, then `9+` |
//! | `fuse_opening_seconds` | gauge | how long the current opening lasts (SPEC §10: backoff, jitter and any hint of the server applied); 0 unless open |
//! | `fuse_window_calls` | gauge | `rate` policy: calls in the window (SPEC §9) |
//! | `fuse_window_failed_calls` | gauge | `rate` policy: counted failures among them |
//! | `fuse_window_slow_calls` | gauge | `rate` policy: slow calls among them, failed or not |
//! | `fuse_admission` | gauge | a circuit with `ramp_up` or `throttle_k` (SPEC §11): the share of calls it admits, 0 to 1 (1 unless closed and graded) |
//! | `fuse_store_unreachable_total` | counter | outages of a shared circuit's store (feature `store`), also labelled `store` |
//! | `fuse_store_reachable` | gauge | 1 while a shared circuit's store answers, 0 while its fallback decides |
//! | `fuse_hints_malformed_total` | counter | servers' hints of when to come back (`Retry-After`, `grpc-retry-pushback-ms`) that the tower layer or the reqwest middleware could not read and ignored, also labelled `header` |
//!
//! Transitions reach the metrics as they reach any listener: a circuit
//! built with the feature registers its `Telemetry` among its own
//! listeners. A success is the one count on the closed-success path, so
//! it is kept in per-thread counters (`lanes`: each thread writes counters
//! of its own, with a load and a store), and a call is counted once, when
//! it ends: the calls admitted are those that ended, successes, failures
//! and ignores. Both are published as absolute values when the circuit
//! changes state, when a registry lists it, and on
//! [`Fuse::publish_metrics`](crate::Fuse::publish_metrics).
//! The window gauges of a `rate` circuit are published with it, from the
//! circuit's snapshot (a `count` circuit has none), and set to zero on
//! every transition, which empties the window. The opening's count and
//! gauge are set from the transition itself, which tells the opening's n
//! and duration.
//! The admission gauge is published with them, from the snapshot, for a
//! circuit whose configuration grades its admission (a circuit that
//! grades nothing has none); a transition sets it to 1, or to the ramp's
//! floor when a probe closes the circuit (its ramp starts). The other
//! counts go to the recorder as they happen. Handles are
//! resolved at the first call of each circuit (a restored circuit's when
//! it is built, so that its state gauge shows the state it was restored
//! in rather than closed): install the recorder before traffic starts.
//!
//! A call a closed circuit shed (graded admission, SPEC §11) is counted in
//! `fuse_calls_throttled_total` only: `fuse_calls_rejected_total` stays
//! the count of an open circuit's rejections, so that it still says the
//! dependency is cut off, and a ramp-up after recovery does not read as
//! one. The calls a circuit refused are the sum of the two; those it was
//! asked for, that sum plus `fuse_calls_admitted_total`.

mod durations;
mod graded;
mod resilience4j;
mod scheme;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};

pub use scheme::MetricNames;

use metrics::{Counter, Gauge, counter, gauge};

use crate::clock::Time;
use crate::config::Config;
use crate::events::Listener;
use crate::lanes::Count;
use crate::snapshot::{Snapshot, State};
use crate::transition::Transition;
use crate::verdict::Verdict;

/// The mark of a call's start taken for the metrics alone (the
/// `resilience4j` scheme's durations), on a circuit that does not time
/// its calls: the engine reads such a start as it reads an untimed one
/// (`now - started` saturates at 0: never slow), so timing switched on by
/// a reconfiguration still times only the calls admitted after it (SPEC
/// §12).
const METRICS_ONLY: u64 = 1 << 63;

struct Handles {
    admitted: Counter,
    succeeded: Counter,
    rejected: Counter,
    failures: Counter,
    ignored: Counter,
    state: Gauge,
    opening: Gauge,
}

/// The values of the label `n` of `fuse_openings_total`: the n of the
/// opening up to 8, then one value for all the others, so that a circuit
/// has at most ten of them.
const OPENING_N: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9+"];

/// The label `n` of an opening that is the `openings`-th in a row.
fn opening_n(openings: u32) -> &'static str {
    let n = usize::try_from(openings.saturating_sub(1)).unwrap_or(usize::MAX);
    OPENING_N[n.min(OPENING_N.len() - 1)]
}

/// The gauges of a `rate` circuit's window, made when it is first
/// published.
struct WindowGauges {
    calls: Gauge,
    failed: Gauge,
    slow: Gauge,
}

impl WindowGauges {
    fn set(&self, calls: u64, failed: u64, slow: u64) {
        self.calls.set(gauge_value(calls));
        self.failed.set(gauge_value(failed));
        self.slow.set(gauge_value(slow));
    }
}

/// The value of `fuse_state` for `state`.
fn state_code(state: State) -> u8 {
    match state {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
    }
}

/// A count as a gauge's value (exact up to 2^53).
#[allow(clippy::cast_precision_loss)]
fn gauge_value(count: u64) -> f64 {
    count as f64
}

/// One circuit's metrics.
pub(crate) struct Telemetry {
    key: String,
    /// Calls that ended successfully, counted per thread.
    succeeded: Count,
    /// Calls that ended with a counted failure, and with an ignore: with
    /// the successes, the calls admitted.
    failed: AtomicU64,
    ignored: AtomicU64,
    /// The state the crate's `fuse_state` shows (its code).
    shown: AtomicU8,
    handles: OnceLock<Handles>,
    window: OnceLock<WindowGauges>,
    graded: graded::Graded,
    /// The series of the `resilience4j` scheme, made with the circuit;
    /// `None` under the crate's own, made at the first call.
    resilience4j: Option<Box<resilience4j::Series>>,
}

impl Telemetry {
    /// The metrics of the circuit `key`, named by this process's scheme.
    pub(crate) fn new(key: &str) -> Self {
        Self::named(key, MetricNames::current())
    }

    /// The metrics of the circuit `key`, named by `names`.
    pub(crate) fn named(key: &str, names: MetricNames) -> Self {
        Telemetry {
            key: key.to_owned(),
            succeeded: Count::new(),
            failed: AtomicU64::new(0),
            ignored: AtomicU64::new(0),
            shown: AtomicU8::new(0),
            handles: OnceLock::new(),
            window: OnceLock::new(),
            graded: graded::Graded::default(),
            resilience4j: (names == MetricNames::Resilience4j)
                .then(|| Box::new(resilience4j::Series::new(key))),
        }
    }

    /// Whether a publication of a circuit under `config` sets its
    /// admission gauge ([`admission`](Self::admission)).
    pub(crate) fn publishes_admission(&self, config: &Config) -> bool {
        self.resilience4j.is_none() && self.graded.published(config)
    }

    /// Whether a publication of a circuit under `config` sets the gauges
    /// of its window ([`window`](Self::window)): a `rate` circuit's under
    /// the crate's names, every circuit's under resilience4j's (its state
    /// and rates).
    pub(crate) fn publishes_window(&self, config: &Config) -> bool {
        self.resilience4j.is_some() || config.policy().counts_calls()
    }

    /// Publishes the admitted share of `snapshot`, a circuit under
    /// `config` that grades its admission.
    pub(crate) fn admission(&self, snapshot: &Snapshot, config: &Config) {
        self.graded.publish(&self.key, snapshot, config);
    }

    /// Publishes the window of `snapshot`, a circuit under `config`.
    pub(crate) fn window(&self, snapshot: &Snapshot, config: &Config) {
        if let Some(series) = &self.resilience4j {
            return series.window(snapshot, config, &self.key);
        }
        let gauges = self.window.get_or_init(|| {
            let key = || self.key.clone();
            WindowGauges {
                calls: gauge!("fuse_window_calls", "key" => key()),
                failed: gauge!("fuse_window_failed_calls", "key" => key()),
                slow: gauge!("fuse_window_slow_calls", "key" => key()),
            }
        });
        gauges.set(snapshot.calls, snapshot.failed, snapshot.slow);
    }

    fn handles(&self) -> &Handles {
        self.handles.get_or_init(|| {
            let key = || self.key.clone();
            let handles = Handles {
                admitted: counter!("fuse_calls_admitted_total", "key" => key()),
                succeeded: counter!("fuse_successes_total", "key" => key()),
                rejected: counter!("fuse_calls_rejected_total", "key" => key()),
                failures: counter!("fuse_failures_total", "key" => key()),
                ignored: counter!("fuse_ignored_total", "key" => key()),
                state: gauge!("fuse_state", "key" => key()),
                opening: gauge!("fuse_opening_seconds", "key" => key()),
            };
            handles.state.set(0.0);
            handles.opening.set(0.0);
            handles
        })
    }

    /// Whether the state gauge shows `state` (a circuit starts closed).
    pub(crate) fn shows(&self, state: State) -> bool {
        if let Some(series) = &self.resilience4j {
            return series.shows(state);
        }
        // Relaxed: a gauge's value, read on its own.
        self.shown.load(Relaxed) == state_code(state)
    }

    /// Shows `state`, and an opening `open_for` long while open (the
    /// crate's names; resilience4j's have no opening gauge).
    pub(crate) fn show(&self, state: State, open_for: Option<std::time::Duration>) {
        if let Some(series) = &self.resilience4j {
            return series.state(state);
        }
        let handles = self.handles();
        // Relaxed: a gauge's value, read on its own.
        self.shown.store(state_code(state), Relaxed);
        handles.state.set(f64::from(state_code(state)));
        let opening = open_for.filter(|_| state == State::Open);
        handles
            .opening
            .set(opening.map_or(0.0, |open_for| open_for.as_secs_f64()));
    }

    /// The start of a call admitted untimed: `UNTIMED`, or, under the
    /// `resilience4j` scheme, which times every call, the time on `time`
    /// marked as taken for the metrics only.
    #[inline]
    pub(crate) fn start(&self, time: &Time) -> u64 {
        if self.resilience4j.is_some() {
            Self::timed(time)
        } else {
            crate::clock::UNTIMED
        }
    }

    /// The time on `time`, marked as taken for the metrics only.
    #[inline(never)]
    fn timed(time: &Time) -> u64 {
        time.now() | METRICS_ONLY
    }

    /// A call admitted at `started` (on `time`) ended with `verdict`: a
    /// success under the crate's names is this thread's counter only,
    /// inline; anything else goes out of line.
    #[inline]
    pub(crate) fn ended(&self, verdict: Verdict, started: u64, time: &Time) {
        if verdict == Verdict::Success && self.resilience4j.is_none() {
            self.succeeded.add_one();
        } else {
            self.ended_otherwise(verdict, started, time);
        }
    }

    /// [`ended`](Self::ended) but for a success under the crate's names:
    /// under resilience4j's, the call's duration into this thread's
    /// histogram; a failure or an ignore, counted.
    #[inline(never)]
    fn ended_otherwise(&self, verdict: Verdict, started: u64, time: &Time) {
        if let Some(series) = &self.resilience4j {
            let now = time.now();
            let nanos = if started == crate::clock::UNTIMED {
                0
            } else {
                now.saturating_sub(started & !METRICS_ONLY)
            };
            return series.ended(verdict, nanos, now);
        }
        // Relaxed: counts; nothing is ordered by them.
        match verdict {
            Verdict::Success => self.succeeded.add_one(),
            Verdict::Failure => {
                self.failed.fetch_add(1, Relaxed);
                self.handles().failures.increment(1);
            }
            Verdict::Ignore => {
                self.ignored.fetch_add(1, Relaxed);
                self.handles().ignored.increment(1);
            }
        }
    }

    /// A call refused, to come back in `retry_after` nanoseconds: a
    /// rejection, or a call a closed circuit shed (SPEC §11, as
    /// `crate::error::shed_by` reads it), counted by why, not as a
    /// rejection (under resilience4j's names, each a call not permitted).
    pub(crate) fn refused(&self, retry_after: u64) {
        if let Some(series) = &self.resilience4j {
            return series.not_permitted();
        }
        match crate::error::shed_by(retry_after) {
            Some(why) => self.graded.shed(&self.key, why),
            None => self.handles().rejected.increment(1),
        }
    }

    /// Publishes the counts kept per thread (summed over the threads);
    /// under resilience4j's names, given the time on the circuit's clock
    /// (`now`), also the longest calls of the last periods.
    pub(crate) fn publish(&self, now: Option<u64>) {
        if let Some(series) = &self.resilience4j {
            return series.publish(now);
        }
        let handles = self.handles();
        let succeeded = self.succeeded.sum();
        let ended = [self.failed.load(Relaxed), self.ignored.load(Relaxed)];
        handles
            .admitted
            .absolute(ended.into_iter().fold(succeeded, u64::wrapping_add));
        handles.succeeded.absolute(succeeded);
    }
}

/// The transition half of the sink: a listener each circuit registers.
impl Listener for Telemetry {
    fn on_transition(&self, transition: &Transition) {
        if let Some(series) = &self.resilience4j {
            series.state(transition.to);
            // A new epoch starts with an empty window.
            series.empty();
            return self.publish(None);
        }
        counter!(
            "fuse_transitions_total",
            "key" => self.key.clone(),
            "to" => transition.to.as_str(),
            "reason" => transition.reason.as_str()
        )
        .increment(1);
        self.show(transition.to, transition.open_for);
        if transition.to == State::Open {
            counter!(
                "fuse_openings_total",
                "key" => self.key.clone(),
                "n" => opening_n(transition.openings)
            )
            .increment(1);
        }
        self.publish(None);
        // A new epoch starts with an empty window.
        if let Some(window) = self.window.get() {
            window.set(0, 0, 0);
        }
        self.graded.transition(transition);
    }

    fn on_reconfigure(&self, event: &crate::events::Reconfiguration<'_>) {
        if self.resilience4j.is_some() {
            return;
        }
        counter!(
            "fuse_reconfigurations_total",
            "key" => self.key.clone(),
            "by" => event.by.to_owned()
        )
        .increment(1);
    }

    #[cfg(feature = "store")]
    fn on_store(&self, event: &crate::events::StoreEvent<'_>) {
        if self.resilience4j.is_some() {
            return;
        }
        if event.overwritten.is_some() {
            counter!(
                "fuse_store_overwritten_total",
                "key" => self.key.clone(),
                "store" => event.store.to_owned()
            )
            .increment(1);
            return;
        }
        if !event.reachable {
            counter!(
                "fuse_store_unreachable_total",
                "key" => self.key.clone(),
                "store" => event.store.to_owned()
            )
            .increment(1);
        }
        gauge!("fuse_store_reachable", "key" => self.key.clone())
            .set(f64::from(u8::from(event.reachable)));
    }
}

/// A hint of when to come back, in `header`, that a call of the circuit
/// `key` could not read (rare: resolved on each).
#[cfg(any(feature = "tower", feature = "reqwest"))]
pub(crate) fn hint_malformed(key: &str, header: &'static str) {
    counter!(
        "fuse_hints_malformed_total",
        "key" => key.to_owned(),
        "header" => header
    )
    .increment(1);
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
