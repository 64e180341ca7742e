//! Metrics and span events through the OpenTelemetry API (feature
//! `opentelemetry`): the facts of the `metrics` feature's series, under
//! OpenTelemetry's names, for an application that exports through an
//! OpenTelemetry SDK; and events on the span of the call that made them.
//!
//! The crate depends on the API crate only (`opentelemetry`, features
//! `metrics` and `trace`): the application installs its SDK, its
//! exporter and its global providers. A circuit resolves
//! `opentelemetry::global::meter("fuse_breaker")` when it is built:
//! install the meter provider before building circuits (as with the
//! `metrics` recorder); a circuit built before is still observed by the
//! provider installed later, but counts its transitions and openings
//! where it resolved them.
//!
//! # Metrics
//!
//! OpenTelemetry has no semantic convention for circuit breakers yet
//! (open-telemetry/semantic-conventions#2355). These names follow the
//! nearest precedents (`resilience.*` as .NET's Polly names its
//! telemetry, one state instrument with a state attribute as `hw.status`
//! does) and are **provisional**: they will follow the convention once it
//! is settled, in a release that says so in its changelog.
//!
//! | instrument | kind | unit | attributes | value |
//! | --- | --- | --- | --- | --- |
//! | `resilience.circuit_breaker.calls` | counter (observable) | `{call}` | `resilience.circuit_breaker.call.outcome`: `success`, `failure` (counted failures), `ignored` (ignored errors, panics, dropped permits and futures), `rejected` (by an open or full half-open circuit), `throttled` (shed by a closed circuit's graded admission, SPEC §11) | the calls of each outcome |
//! | `resilience.circuit_breaker.state` | up-down counter (observable) | `{circuit}` | `resilience.circuit_breaker.state`: `closed`, `open`, `half_open` | 1 for the circuit's state, 0 for the others (summed over circuits: how many are in each state) |
//! | `resilience.circuit_breaker.transitions` | counter | `{transition}` | `resilience.circuit_breaker.transition.from`, `.to` (states), `.reason` (`threshold_reached`, `probe_failed`, `cooldown_ended`, `probes_passed`, `forced`, `reset`) | state changes |
//! | `resilience.circuit_breaker.openings` | counter | `{opening}` | `resilience.circuit_breaker.opening.n`: SPEC §10's n of the opening, `0` to `8`, then `9+` | openings |
//! | `resilience.circuit_breaker.opening.duration` | gauge (observable) | `s` | | how long the current opening lasts (backoff, jitter and a server's hint applied); 0 unless open |
//!
//! Every measurement carries `resilience.circuit_breaker.id`: the
//! circuit's key (`fuse:billing`, `fuse:billing:charge`).
//!
//! The calls admitted are those of the outcomes `success`, `failure`
//! and `ignored`: a call is counted once, when it ends.
//!
//! The counts of calls are kept per circuit and per thread
//! (each thread writes counters of its own, with a load and a store: a
//! closed success writes no shared cache line for this feature) and read
//! by the observable instruments' callbacks when the SDK collects. The
//! state and the opening are read there too, as the circuit's last
//! transition left them (an open circuit whose opening has passed reads
//! `open` until a call arrives). Transitions and openings are counted as
//! they happen, on the thread that made them.
//!
//! # Span events
//!
//! A transition is an event on the active span (`Context::current`, as
//! `Tracer::in_span` or `Context::attach` set it) of the thread that made
//! it: the call whose verdict or admission changed the state, under the
//! names circuit breakers' event APIs commonly give these changes:
//!
//! | event | when | attributes besides `resilience.circuit_breaker.id` |
//! | --- | --- | --- |
//! | `circuit_opened` | to `open` | `resilience.circuit_breaker.state`, `.transition.from`, `.transition.reason`, `.opening.n`, `.opening.duration` (seconds), and `resilience.circuit_breaker.probe.result` = `failure` when a probe failed |
//! | `circuit_half_opened` | to `half_open`: the call is a probe | `.state`, `.transition.from`, `.transition.reason` |
//! | `circuit_closed` | to `closed` | `.state`, `.transition.from`, `.transition.reason`, and `.probe.result` = `success` when probes closed it |
//! | `circuit_rejected` | a call refused | `.state` (as last known), `.call.outcome` (`rejected` or `throttled`), `resilience.circuit_breaker.retry_after` (seconds) |
//!
//! A refused call also marks its span: the attribute
//! `resilience.circuit_breaker.rejected` = `true` and an `Error` status
//! naming the circuit (`circuit fuse:billing is open`). Nothing is built
//! when no span records.
//!
//! With the `tracing` feature and `tracing-opentelemetry`, the `tracing`
//! events of the transitions reach the OpenTelemetry span of the
//! `tracing` span they happen in, as that layer turns events into span
//! events; the span events above go to OpenTelemetry's own active span,
//! which `tracing` spans do not set.

mod instruments;
mod span;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};

use opentelemetry::KeyValue;

use crate::events::Listener;
use crate::lanes::Count;
use crate::snapshot::State;
use crate::transition::Transition;
use crate::verdict::Verdict;

/// The attribute that names the circuit.
const ID: &str = "resilience.circuit_breaker.id";
/// The attribute of a state.
const STATE: &str = "resilience.circuit_breaker.state";
/// The attribute of a call's outcome.
const OUTCOME: &str = "resilience.circuit_breaker.call.outcome";
/// The attributes of a transition.
const FROM: &str = "resilience.circuit_breaker.transition.from";
const TO: &str = "resilience.circuit_breaker.transition.to";
const REASON: &str = "resilience.circuit_breaker.transition.reason";
/// The attribute of an opening's n.
const OPENING_N: &str = "resilience.circuit_breaker.opening.n";

/// The values of [`OPENING_N`]: the n of the opening up to 8, then one
/// value for all the others.
const NS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9+"];

/// The value of [`OPENING_N`] of an opening that is the `openings`-th in
/// a row.
fn opening_n(openings: u32) -> &'static str {
    let n = usize::try_from(openings.saturating_sub(1)).unwrap_or(usize::MAX);
    NS[n.min(NS.len() - 1)]
}

/// The states, in the order of their codes in [`Counts::state`].
const STATES: [State; 3] = [State::Closed, State::Open, State::HalfOpen];

fn code(state: State) -> u8 {
    match state {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
    }
}

/// What one circuit has counted, read by the observable instruments.
#[derive(Debug)]
struct Counts {
    /// The circuit's key, as the value of [`ID`].
    id: KeyValue,
    succeeded: Count,
    rejected: Count,
    throttled: Count,
    failed: AtomicU64,
    ignored: AtomicU64,
    /// The state the last transition left, by [`code`].
    state: AtomicU8,
    /// How long the current opening lasts, in nanoseconds; 0 unless open.
    opening: AtomicU64,
}

impl Counts {
    fn new(key: &str) -> Self {
        Counts {
            id: KeyValue::new(ID, Arc::<str>::from(key)),
            succeeded: Count::new(),
            rejected: Count::new(),
            throttled: Count::new(),
            failed: AtomicU64::new(0),
            ignored: AtomicU64::new(0),
            state: AtomicU8::new(0),
            opening: AtomicU64::new(0),
        }
    }

    /// The calls of each outcome, by the value of [`OUTCOME`].
    fn calls(&self) -> [(&'static str, u64); 5] {
        [
            ("success", self.succeeded.sum()),
            // Relaxed: counts; nothing is ordered by them.
            ("failure", self.failed.load(Relaxed)),
            ("ignored", self.ignored.load(Relaxed)),
            ("rejected", self.rejected.sum()),
            ("throttled", self.throttled.sum()),
        ]
    }

    /// The state the last transition left.
    fn state(&self) -> State {
        // Relaxed: a gauge's value, read on its own.
        STATES[usize::from(self.state.load(Relaxed)).min(2)]
    }
}

/// One circuit's OpenTelemetry sink: a listener every circuit registers
/// when it is built (`sinks`), which the circuit also tells of its calls.
#[derive(Debug)]
pub(crate) struct Otel {
    counts: Arc<Counts>,
    /// Its place among the circuits the observable instruments read.
    live: u64,
    instruments: Arc<instruments::Instruments>,
}

impl Otel {
    /// The sink of the circuit `key`, on the instruments of the global
    /// meter provider in place now.
    pub(crate) fn new(key: &str) -> Self {
        let counts = Arc::new(Counts::new(key));
        let live = instruments::observe(counts.clone());
        Otel {
            counts,
            live,
            instruments: instruments::resolve(),
        }
    }
}

/// The calls a circuit tells its sink of, at the points where the
/// `metrics` feature counts them (`permit.rs`).
impl Otel {
    /// A call ended with `verdict` (a success: this thread's counter
    /// only).
    #[inline]
    pub(crate) fn ended(&self, verdict: Verdict) {
        match verdict {
            Verdict::Success => self.counts.succeeded.add_one(),
            // Relaxed: counts; nothing is ordered by them.
            Verdict::Failure => {
                self.counts.failed.fetch_add(1, Relaxed);
            }
            Verdict::Ignore => {
                self.counts.ignored.fetch_add(1, Relaxed);
            }
        }
    }

    /// The circuit refused a call that may come back in `retry_after`
    /// nanoseconds (or that graded admission shed, SPEC §11, as
    /// `crate::error::shed_by` reads it): counted by why, an event on the
    /// active span, and the span marked.
    pub(crate) fn refused(&self, retry_after: u64) {
        let shed = crate::error::shed_by(retry_after);
        if shed.is_some() {
            self.counts.throttled.add_one();
        } else {
            self.counts.rejected.add_one();
        }
        span::refused(&self.counts, shed, retry_after);
    }
}

impl Listener for Otel {
    fn on_transition(&self, transition: &Transition) {
        let counts = &self.counts;
        let opening = transition
            .open_for
            .filter(|_| transition.to == State::Open)
            .map_or(0, |open_for| {
                u64::try_from(open_for.as_nanos()).unwrap_or(u64::MAX)
            });
        // Relaxed: gauges' values, each read on its own.
        counts.opening.store(opening, Relaxed);
        counts.state.store(code(transition.to), Relaxed);
        self.instruments.transition(&counts.id, transition);
        span::transition(&counts.id, transition);
    }
}

impl Drop for Otel {
    /// The circuit is gone: the observable instruments no longer read it.
    fn drop(&mut self) {
        instruments::forget(self.live);
    }
}

#[cfg(test)]
mod tests;
