//! The series of the `resilience4j` naming scheme
//! ([`MetricNames::Resilience4j`](crate::MetricNames)): the names, label
//! keys and values and units resilience4j's Micrometer binding gives a
//! circuit breaker in Prometheus, each labelled `name` with the circuit's
//! key.
//!
//! | series | kind | value |
//! | --- | --- | --- |
//! | `resilience4j_circuitbreaker_state{state}` | gauge | 1 for the circuit's state, 0 for the others: `closed`, `open`, `half_open`, and resilience4j's `forced_open`, `disabled`, `metrics_only` (always 0: a Fuse circuit forced open is `open` for its opening) |
//! | `resilience4j_circuitbreaker_calls_seconds_count{kind}` | counter | calls that ended, by `kind`: `successful`, `failed` (counted failures), `ignored` (ignored errors, panics, dropped permits) |
//! | `resilience4j_circuitbreaker_calls_seconds_sum{kind}` | gauge | how long they took, in seconds, summed |
//! | `resilience4j_circuitbreaker_calls_seconds_bucket{kind,le}` | counter | how many took at most `le` seconds (0.005 to 10, and `+Inf`): the histogram resilience4j's dashboard reads percentiles from |
//! | `resilience4j_circuitbreaker_calls_seconds_max{kind}` | gauge | the longest call, in seconds, of those that ended in the last 80 to 120 s of the circuit's clock (three periods of 40 s; resilience4j's decays over two minutes in three steps), 0 when none did; set when the counts are published by `publish_metrics` or a registry's listing |
//! | `resilience4j_circuitbreaker_not_permitted_calls_total{kind="not_permitted"}` | counter | calls refused: rejected by an open or full half-open circuit, or shed by graded admission |
//! | `resilience4j_circuitbreaker_buffered_calls{kind}` | gauge | the calls in the window, `failed` and `successful` (under `count`, the failures in the window and 0) |
//! | `resilience4j_circuitbreaker_failure_rate` | gauge | the window's failed calls in percent; -1 while the window holds fewer than `minimum_calls` calls, and always under `count` (which has no rate) |
//! | `resilience4j_circuitbreaker_slow_call_rate` | gauge | the window's slow calls in percent, -1 as above, and without a `slow_call_duration` |
//! | `resilience4j_circuitbreaker_slow_calls{kind}` | gauge | the window's slow calls, `successful` and `failed` (0 under `count` and without a `slow_call_duration`); not for a shared circuit, whose store keeps slow calls but not their verdicts |
//!
//! The series exist from the moment the circuit is built (the state
//! gauge reads `closed` 1 before any call), but for the slow calls, which
//! come with the window's first publication: install the recorder and the
//! scheme first. Every call is timed (a clock read when admitted, another
//! when it ends), and the calls that ended are counted per thread, by
//! kind and bucket, and published, like admissions, when the circuit
//! changes state, when a registry lists it and on `publish_metrics`; the
//! gauges of the window are published then too.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use metrics::{Counter, Gauge, counter, gauge};

use super::durations::Durations;
use crate::config::Config;
use crate::snapshot::{Snapshot, State};
use crate::verdict::Verdict;

/// resilience4j's states, in the order of [`Series::states`], by the
/// value of their label `state`.
const STATES: [&str; 6] = [
    "closed",
    "open",
    "half_open",
    "forced_open",
    "disabled",
    "metrics_only",
];

/// The index in [`STATES`] of a Fuse circuit's `state`.
fn index(state: State) -> usize {
    match state {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
    }
}

/// One circuit's series under the `resilience4j` scheme.
pub(super) struct Series {
    states: [Gauge; 6],
    successful: Durations,
    failed: Durations,
    ignored: Durations,
    not_permitted: Counter,
    buffered_failed: Gauge,
    buffered_successful: Gauge,
    failure_rate: Gauge,
    slow_call_rate: Gauge,
    /// The window's slow calls, `successful` and `failed`: made by the
    /// first window that tells them apart (an in-process circuit's).
    slow_calls: OnceLock<[Gauge; 2]>,
    /// The state last set, as its index in [`STATES`].
    state: AtomicU64,
}

impl Series {
    /// The series of the circuit `key`, made now, reading closed with an
    /// empty window.
    pub(super) fn new(key: &str) -> Self {
        let name = || key.to_owned();
        let calls = |kind: &'static str| Durations::new(key, kind);
        let buffered = |kind: &'static str| {
            gauge!(
                "resilience4j_circuitbreaker_buffered_calls",
                "name" => name(),
                "kind" => kind
            )
        };
        let series = Series {
            states: STATES.map(|state| {
                gauge!(
                    "resilience4j_circuitbreaker_state",
                    "name" => name(),
                    "state" => state
                )
            }),
            successful: calls("successful"),
            failed: calls("failed"),
            ignored: calls("ignored"),
            not_permitted: counter!(
                "resilience4j_circuitbreaker_not_permitted_calls_total",
                "name" => name(),
                "kind" => "not_permitted"
            ),
            buffered_failed: buffered("failed"),
            buffered_successful: buffered("successful"),
            failure_rate: gauge!("resilience4j_circuitbreaker_failure_rate", "name" => name()),
            slow_call_rate: gauge!("resilience4j_circuitbreaker_slow_call_rate", "name" => name()),
            slow_calls: OnceLock::new(),
            state: AtomicU64::new(0),
        };
        series.state(State::Closed);
        series.empty();
        series
    }

    /// Whether the state gauges show `state`.
    pub(super) fn shows(&self, state: State) -> bool {
        index(state) as u64 == self.state.load(Relaxed)
    }

    /// Sets the state gauges: 1 for `state`, 0 for every other.
    pub(super) fn state(&self, state: State) {
        let at = index(state);
        for (i, gauge) in self.states.iter().enumerate() {
            gauge.set(if i == at { 1.0 } else { 0.0 });
        }
        self.state.store(at as u64, Relaxed);
    }

    /// The window of a new epoch: nothing buffered, no rate yet.
    pub(super) fn empty(&self) {
        self.buffered_failed.set(0.0);
        self.buffered_successful.set(0.0);
        self.failure_rate.set(-1.0);
        self.slow_call_rate.set(-1.0);
        if let Some(slow_calls) = self.slow_calls.get() {
            for gauge in slow_calls {
                gauge.set(0.0);
            }
        }
    }

    /// A call refused (rejected or shed).
    pub(super) fn not_permitted(&self) {
        self.not_permitted.increment(1);
    }

    /// A call that ended with `verdict` at `now` after `nanos`: this
    /// thread's counters (and its period's longest call, if longer).
    #[inline]
    pub(super) fn ended(&self, verdict: Verdict, nanos: u64, now: u64) {
        match verdict {
            Verdict::Success => self.successful.add(nanos, now),
            Verdict::Failure => self.failed.add(nanos, now),
            Verdict::Ignore => self.ignored.add(nanos, now),
        }
    }

    /// Publishes the calls that ended (summed over the threads), and,
    /// given the time on the circuit's clock, the longest of the last
    /// two minutes or so.
    pub(super) fn publish(&self, now: Option<u64>) {
        self.successful.publish(now);
        self.failed.publish(now);
        self.ignored.publish(now);
    }

    /// The window and state of `snapshot`, a circuit under `config`.
    pub(super) fn window(&self, snapshot: &Snapshot, config: &Config, key: &str) {
        if !self.shows(snapshot.state) {
            self.state(snapshot.state);
        }
        if let Some(failed) = snapshot.slow_failed {
            let [successful_gauge, failed_gauge] = self.slow_calls.get_or_init(|| {
                ["successful", "failed"].map(|kind| {
                    gauge!(
                        "resilience4j_circuitbreaker_slow_calls",
                        "name" => key.to_owned(),
                        "kind" => kind
                    )
                })
            });
            successful_gauge.set(value(snapshot.slow.saturating_sub(failed)));
            failed_gauge.set(value(failed));
        }
        if !config.policy().counts_calls() {
            let failures = u64::try_from(snapshot.failures.len()).unwrap_or(u64::MAX);
            self.buffered_failed.set(value(failures));
            self.buffered_successful.set(0.0);
            self.failure_rate.set(-1.0);
            self.slow_call_rate.set(-1.0);
            return;
        }
        self.buffered_failed.set(value(snapshot.failed));
        self.buffered_successful
            .set(value(snapshot.calls.saturating_sub(snapshot.failed)));
        let enough = snapshot.calls >= u64::from(config.minimum_calls()) && snapshot.calls > 0;
        self.failure_rate
            .set(percent(snapshot.failed, snapshot.calls, enough));
        let timed = config.slow_call_duration().is_some();
        self.slow_call_rate
            .set(percent(snapshot.slow, snapshot.calls, enough && timed));
    }
}

/// `part` of `whole` in percent, or -1 when there is no rate to tell.
fn percent(part: u64, whole: u64, known: bool) -> f64 {
    if known {
        value(part) * 100.0 / value(whole)
    } else {
        -1.0
    }
}

/// A count as a gauge's value (exact up to 2^53).
#[allow(clippy::cast_precision_loss)]
fn value(count: u64) -> f64 {
    count as f64
}
