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
//! | `resilience.circuit_breaker.window.calls` | gauge (observable) | `{call}` | `resilience.circuit_breaker.window.kind`: `all` (the calls in the window), `failed` (counted failures among them), `slow` (slow calls among them, failed or not) | a `rate` circuit's window (SPEC §9), as last published; absent for a `count` circuit |
//! | `resilience.circuit_breaker.admission` | gauge (observable) | `1` | | the share of calls a closed circuit admits under graded admission (SPEC §11), 0 to 1 (1 unless closed and graded); present once published for a circuit with `ramp_up` or `throttle_k` |
//! | `resilience.circuit_breaker.reconfigurations` | counter | `{reconfiguration}` | `resilience.circuit_breaker.reconfiguration.by`: who asked (`code`, `reload`, `registry`, or what the admin API names its caller) | configurations put in force while the circuit runs (SPEC §12) |
//! | `resilience.circuit_breaker.store.outages` | counter (observable) | `{outage}` | `resilience.circuit_breaker.store.name`: the store's name | a shared circuit's (feature `store`): the times its store stopped answering |
//! | `resilience.circuit_breaker.store.reachable` | gauge (observable) | `1` | `resilience.circuit_breaker.store.name` | a shared circuit's: 1 while its store answers, 0 while its fallback decides |
//!
//! Every measurement carries `resilience.circuit_breaker.id`: the
//! circuit's key (`fuse:billing`, `fuse:billing:charge`).
//!
//! The calls admitted are those of the outcomes `success`, `failure`
//! and `ignored`: a call is counted once, when it ends.
//!
//! The window and the admitted share are published as the `metrics`
//! feature publishes `fuse_window_*` and `fuse_admission`: from the
//! circuit's snapshot, taken once for both features, on
//! [`Fuse::publish_metrics`](crate::Fuse::publish_metrics), when a
//! registry lists the circuit ([`Registry::circuits`](crate::Registry::circuits)),
//! and read by the instruments' callbacks as last published. Every
//! transition sets the window to 0 (a new epoch starts with an empty
//! window) and the admitted share to 1, or to the ramp's floor when a
//! probe closes the circuit (its ramp starts). A shared circuit's window
//! and admission are the store's: it publishes neither; its store's
//! instruments are there from its building (0 outages, reachable), and
//! follow what its listeners are told of the store.
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
#[cfg(feature = "store")]
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering::Relaxed};

use opentelemetry::KeyValue;

use crate::config::Config;
use crate::events::Listener;
use crate::lanes::Count;
use crate::snapshot::{Snapshot, State};
use crate::transition::{Reason, Transition};
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
/// The attribute of a count of the window.
const WINDOW_KIND: &str = "resilience.circuit_breaker.window.kind";
/// The attribute of who asked for a reconfiguration.
const BY: &str = "resilience.circuit_breaker.reconfiguration.by";
/// The attribute of a shared circuit's store.
#[cfg(feature = "store")]
const STORE: &str = "resilience.circuit_breaker.store.name";

/// The value of [`Counts::admission`] until the admitted share is first
/// published: no gauge.
const UNGRADED: u32 = u32::MAX;
/// The admitted share of every call, in millionths.
const ALL: u32 = 1_000_000;

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
    /// A `rate` circuit's window as last published (or emptied by a
    /// transition): its calls, failed calls and slow calls.
    window: [AtomicU64; 3],
    /// Whether the window was published: the gauge reads it only then.
    windowed: AtomicBool,
    /// The admitted share in millionths, as last published or as the
    /// last transition left it; [`UNGRADED`] until first published.
    admission: AtomicU32,
    /// What a ramp admits at its start, in millionths ([`ALL`] without a
    /// ramp), by the configuration last published: what the admitted
    /// share is the moment a probe closes the circuit.
    floor: AtomicU32,
    /// A shared circuit's store, once the circuit is built on it.
    #[cfg(feature = "store")]
    store: OnceLock<StoreHealth>,
}

/// What a shared circuit's sink knows of its store.
#[cfg(feature = "store")]
#[derive(Debug)]
struct StoreHealth {
    /// The store's name, as the value of [`STORE`].
    name: KeyValue,
    outages: AtomicU64,
    reachable: AtomicBool,
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
            window: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            windowed: AtomicBool::new(false),
            admission: AtomicU32::new(UNGRADED),
            floor: AtomicU32::new(ALL),
            #[cfg(feature = "store")]
            store: OnceLock::new(),
        }
    }

    /// The window's counts by the value of [`WINDOW_KIND`], once
    /// published.
    fn window(&self) -> Option<[(&'static str, u64); 3]> {
        // Relaxed: gauges' values, each read on its own.
        self.windowed.load(Relaxed).then(|| {
            let [calls, failed, slow] = &self.window;
            [
                ("all", calls.load(Relaxed)),
                ("failed", failed.load(Relaxed)),
                ("slow", slow.load(Relaxed)),
            ]
        })
    }

    /// The admitted share, 0 to 1, once published.
    fn admission(&self) -> Option<f64> {
        // Relaxed: a gauge's value, read on its own.
        let millionths = self.admission.load(Relaxed);
        (millionths != UNGRADED).then(|| f64::from(millionths) / f64::from(ALL))
    }

    /// A shared circuit's store: its name, its outages, and whether it
    /// answers.
    #[cfg(feature = "store")]
    fn store(&self) -> Option<(&KeyValue, u64, bool)> {
        self.store.get().map(|store| {
            // Relaxed: a count and a gauge's value, each read on its own.
            (
                &store.name,
                store.outages.load(Relaxed),
                store.reachable.load(Relaxed),
            )
        })
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

/// What a publication of the circuit (`Sinks::publish`) sets: its
/// window and its admitted share, from its snapshot.
impl Otel {
    /// Whether a publication of a circuit under `config` sets its window:
    /// a `rate` circuit's.
    #[allow(clippy::unused_self)]
    pub(crate) fn publishes_window(&self, config: &Config) -> bool {
        config.policy().counts_calls()
    }

    /// Whether a publication of a circuit under `config` sets its
    /// admitted share: its configuration grades admission (SPEC §11), or
    /// did when the share was first published.
    pub(crate) fn publishes_admission(&self, config: &Config) -> bool {
        config.ramp_up().is_some()
            || config.throttle_k().is_some()
            || self.counts.admission().is_some()
    }

    /// Sets the window from `snapshot`.
    pub(crate) fn window(&self, snapshot: &Snapshot) {
        let counts = &self.counts;
        let [calls, failed, slow] = &counts.window;
        // Relaxed: gauges' values, each read on its own.
        calls.store(snapshot.calls, Relaxed);
        failed.store(snapshot.failed, Relaxed);
        slow.store(snapshot.slow, Relaxed);
        counts.windowed.store(true, Relaxed);
    }

    /// Sets the admitted share from `snapshot`, a circuit under `config`.
    pub(crate) fn admission(&self, snapshot: &Snapshot, config: &Config) {
        let floor = config
            .ramp_up()
            .map_or(ALL, |_| config.ramp_up_floor().min(100) * (ALL / 100));
        // Relaxed: gauges' values, each read on its own.
        self.counts.floor.store(floor, Relaxed);
        self.counts
            .admission
            .store(snapshot.admission.millionths().min(ALL), Relaxed);
    }

    /// The circuit is shared through the store `store`: its store's
    /// instruments read it from now on (no outage, reachable).
    #[cfg(feature = "store")]
    pub(crate) fn beside(&self, store: &str) {
        self.counts.store.get_or_init(|| StoreHealth {
            name: KeyValue::new(STORE, Arc::<str>::from(store)),
            outages: AtomicU64::new(0),
            reachable: AtomicBool::new(true),
        });
    }

    /// A transition: the window is empty (a new epoch), and the admitted
    /// share, once published, is 1, or the ramp's floor when a probe
    /// closes the circuit.
    fn restart(&self, transition: &Transition<'_>) {
        let counts = &self.counts;
        // Relaxed: gauges' values, each read on its own.
        if counts.windowed.load(Relaxed) {
            for count in &counts.window {
                count.store(0, Relaxed);
            }
        }
        if counts.admission.load(Relaxed) != UNGRADED {
            let ramps = transition.from == State::HalfOpen
                && transition.to == State::Closed
                && transition.reason == Reason::ProbesPassed;
            let share = if ramps {
                counts.floor.load(Relaxed)
            } else {
                ALL
            };
            counts.admission.store(share, Relaxed);
        }
    }
}

impl Otel {
    /// Whether the state instrument reads `state` (a circuit starts
    /// closed).
    pub(crate) fn shows(&self, state: State) -> bool {
        self.counts.state() == state
    }

    /// Shows `state`, and an opening `open_for` long while open: what a
    /// transition says, or a restored circuit's snapshot.
    pub(crate) fn show(&self, state: State, open_for: Option<std::time::Duration>) {
        let opening = open_for
            .filter(|_| state == State::Open)
            .map_or(0, |open_for| {
                u64::try_from(open_for.as_nanos()).unwrap_or(u64::MAX)
            });
        // Relaxed: gauges' values, each read on its own.
        self.counts.opening.store(opening, Relaxed);
        self.counts.state.store(code(state), Relaxed);
    }
}

impl Listener for Otel {
    fn on_transition(&self, transition: &Transition) {
        let counts = &self.counts;
        self.show(transition.to, transition.open_for);
        self.restart(transition);
        self.instruments.transition(&counts.id, transition);
        span::transition(&counts.id, transition);
    }

    fn on_reconfigure(&self, event: &crate::events::Reconfiguration<'_>) {
        self.instruments.reconfigured(&self.counts.id, event.by);
    }

    #[cfg(feature = "store")]
    fn on_store(&self, event: &crate::events::StoreEvent<'_>) {
        // An overwritten payload is no news of the store's health.
        if event.overwritten.is_some() {
            return;
        }
        self.beside(event.store);
        if let Some(store) = self.counts.store.get() {
            // Relaxed: a count and a gauge's value, each read on its own.
            if !event.reachable {
                store.outages.fetch_add(1, Relaxed);
            }
            store.reachable.store(event.reachable, Relaxed);
        }
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
