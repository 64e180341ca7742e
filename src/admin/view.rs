//! What the admin API says of a circuit: [`CircuitView`] (one circuit at
//! one instant, wall-clock times), [`CircuitList`] (a page of them) and
//! [`TransitionView`] (one event of the stream). The `fuse` command reads
//! the same types back.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use super::config_view::ConfigView;
use super::config_view::millis;
use crate::config::Config;
use crate::snapshot::{Snapshot, State};
use crate::transition::Transition;

/// One circuit as `GET /circuits/{key}` gives it.
///
/// ```
/// use fuse_breaker::{Fuse, admin::CircuitView};
///
/// let fuse = Fuse::new("billing", Default::default());
/// fuse.force_open();
/// let view = CircuitView::of(&fuse);
/// assert_eq!((view.key.as_str(), view.state.as_str()), ("fuse:billing", "open"));
/// assert!(view.opened_at.is_some());
/// assert!(view.half_open_in_ms.is_some());
///
/// // Under the rate policy: the window's calls and the rule's thresholds.
/// use fuse_breaker::{Config, Policy};
/// let rate = Config::builder().policy(Policy::Rate).failure_rate(25).build()?;
/// let view = CircuitView::of(&Fuse::new("search", rate));
/// assert_eq!((view.config.policy.as_str(), view.config.failure_rate), ("rate", 25));
/// assert_eq!((view.calls, view.failed, view.slow), (0, 0, 0));
/// # Ok::<(), fuse_breaker::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CircuitView {
    /// The circuit's key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Its operation, if any.
    pub operation: Option<String>,
    /// Whether its state lives in a shared store (for the whole fleet).
    pub shared: bool,
    /// `closed`, `open` or `half_open`; for a shared circuit, also
    /// `unreadable` (the store holds under its key what is not a circuit)
    /// or `unread` (its store was not read for this answer, as the API
    /// bounds the reads a list makes): [`store_error`](Self::store_error)
    /// then says what, and the other fields are empty.
    pub state: String,
    /// Counted failures inside the window (under the `count` policy;
    /// zero under `rate`, whose window is [`calls`](Self::calls),
    /// [`failed`](Self::failed) and [`slow`](Self::slow)).
    pub failures: usize,
    /// How long ago each of them was, in milliseconds, oldest first.
    pub failure_ages_ms: Vec<u64>,
    /// Under the `rate` policy ([`config.policy`](ConfigView::policy)):
    /// the calls in the window (zero unless closed; absent from an older
    /// API's answer).
    #[serde(default)]
    pub calls: u64,
    /// Under `rate`: the counted failures among those calls.
    #[serde(default)]
    pub failed: u64,
    /// Under `rate`: the slow calls among them, failed or not.
    #[serde(default)]
    pub slow: u64,
    /// Probes running now (half-open only).
    pub probes_in_flight: u32,
    /// Probes the half-open circuit lets run at once.
    pub probes_allowed: u32,
    /// Probes that succeeded so far (half-open only).
    pub probe_successes: u32,
    /// When the circuit opened, RFC 3339 in UTC; `None` while closed.
    pub opened_at: Option<String>,
    /// Milliseconds until the next call probes (open only).
    pub half_open_in_ms: Option<u64>,
    /// The circuit's configuration.
    pub config: ConfigView,
    /// Why the store could not be read (shared circuits only). When it did
    /// not answer, the other fields are this process's fallback circuit;
    /// when the state is `unreadable` or `unread`, they are empty.
    pub store_error: Option<String>,
    /// In the answer to an open, a close or a reset of a shared circuit
    /// whose key held what is not a circuit: what was wrong with what the
    /// change replaced (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overwritten: Option<String>,
}

/// A page of circuits, as `GET /circuits` gives it.
///
/// ```
/// let list: fuse_breaker::admin::CircuitList = serde_json::from_str(
///     r#"{"circuits": [], "total": 0, "next": null, "writable": false}"#,
/// )?;
/// assert!(list.circuits.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CircuitList {
    /// The circuits of the page, by key.
    pub circuits: Vec<CircuitView>,
    /// How many circuits the API serves in all.
    pub total: usize,
    /// The key to pass as `after` for the next page; `None` on the last.
    pub next: Option<String>,
    /// Whether open, close and reset are on (the application set a token).
    pub writable: bool,
}

/// One transition as the event stream (`GET /events`) sends it.
///
/// ```
/// let event: fuse_breaker::admin::TransitionView = serde_json::from_str(
///     r#"{"key": "fuse:billing", "from": "closed", "to": "open",
///         "reason": "threshold_reached", "at": "2026-12-01T20:01:02.345Z"}"#,
/// )?;
/// assert_eq!(event.to, "open");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TransitionView {
    /// The circuit's key.
    pub key: String,
    /// The state before.
    pub from: String,
    /// The state after.
    pub to: String,
    /// Why (`threshold_reached`, `forced`, ...).
    pub reason: String,
    /// When it was told, RFC 3339 in UTC.
    pub at: String,
}

/// The state of a shared circuit whose key holds what is not a circuit.
#[cfg(feature = "store")]
pub(super) const UNREADABLE: &str = "unreadable";
/// The state of a shared circuit its store was not read for.
#[cfg(feature = "store")]
pub(super) const UNREAD: &str = "unread";

/// A circuit at one instant, with what the view needs around it.
pub(super) struct Reading<'a> {
    pub(super) key: &'a str,
    pub(super) name: &'a str,
    pub(super) operation: Option<&'a str>,
    pub(super) shared: bool,
    pub(super) found: Found<'a>,
    pub(super) config: &'a Config,
    pub(super) store_error: Option<String>,
}

/// What was read of a circuit.
pub(super) enum Found<'a> {
    /// Its snapshot, `now` on the snapshot's time base and the same
    /// instant on the wall clock.
    Snapshot {
        snapshot: &'a Snapshot,
        now: Duration,
        wall: SystemTime,
    },
    /// No snapshot (shared circuits only): the state that says why
    /// (`unreadable`, `unread`).
    #[cfg(feature = "store")]
    Nothing(&'static str),
}

impl CircuitView {
    /// An in-process circuit as the API shows it now.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// let view = fuse_breaker::admin::CircuitView::of(&fuse);
    /// assert_eq!((view.state.as_str(), view.failures, view.shared), ("closed", 0, false));
    /// ```
    pub fn of(fuse: &crate::Fuse) -> Self {
        let snapshot = fuse.snapshot();
        CircuitView::read(&Reading {
            key: fuse.key(),
            name: fuse.name(),
            operation: fuse.operation(),
            shared: false,
            found: Found::Snapshot {
                snapshot: &snapshot,
                now: Duration::from_nanos(fuse.now()),
                wall: SystemTime::now(),
            },
            config: fuse.config(),
            store_error: None,
        })
    }

    pub(super) fn read(reading: &Reading<'_>) -> Self {
        let config = reading.config;
        let mut view = CircuitView {
            key: reading.key.to_owned(),
            name: reading.name.to_owned(),
            operation: reading.operation.map(str::to_owned),
            shared: reading.shared,
            state: String::new(),
            failures: 0,
            failure_ages_ms: Vec::new(),
            calls: 0,
            failed: 0,
            slow: 0,
            probes_in_flight: 0,
            probes_allowed: config.half_open_probes(),
            probe_successes: 0,
            opened_at: None,
            half_open_in_ms: None,
            config: ConfigView::of(config),
            store_error: reading.store_error.clone(),
            overwritten: None,
        };
        let (snapshot, now, wall) = match reading.found {
            Found::Snapshot {
                snapshot,
                now,
                wall,
            } => (snapshot, now, wall),
            #[cfg(feature = "store")]
            Found::Nothing(state) => {
                state.clone_into(&mut view.state);
                return view;
            }
        };
        snapshot.state.as_str().clone_into(&mut view.state);
        view.failures = snapshot.failures.len();
        view.failure_ages_ms = snapshot
            .failures
            .iter()
            .map(|at| millis(now.saturating_sub(*at)))
            .collect();
        view.calls = snapshot.calls;
        view.failed = snapshot.failed;
        view.slow = snapshot.slow;
        view.probes_in_flight = snapshot.half_open_inflight;
        view.probe_successes = snapshot.half_open_successes;
        view.opened_at = snapshot.opened_at.map(|at| {
            let wall = wall.checked_sub(now.saturating_sub(at)).unwrap_or(wall);
            humantime::format_rfc3339_millis(wall).to_string()
        });
        view.half_open_in_ms = snapshot
            .opened_at
            .filter(|_| snapshot.state == State::Open)
            .map(|at| millis((at + config.open_duration()).saturating_sub(now)));
        view
    }
}

impl TransitionView {
    /// `transition` as the event stream sends it, told now.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use fuse_breaker::{Fuse, Transition, admin::TransitionView};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let fuse = Fuse::new("billing", Default::default());
    /// let log = seen.clone();
    /// fuse.on_transition(move |t: &Transition| log.lock().unwrap().push(TransitionView::of(t)));
    /// fuse.force_open();
    /// let view = &seen.lock().unwrap()[0];
    /// assert_eq!((view.from.as_str(), view.to.as_str(), view.reason.as_str()), ("closed", "open", "forced"));
    /// ```
    pub fn of(transition: &Transition<'_>) -> Self {
        TransitionView {
            key: transition.key.to_owned(),
            from: transition.from.as_str().to_owned(),
            to: transition.to.as_str().to_owned(),
            reason: transition.reason.as_str().to_owned(),
            at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn a_rate_circuit_s_window_and_thresholds_are_shown() {
        let config = Config::builder()
            .policy(Policy::Rate)
            .failure_rate(50)
            .minimum_calls(20)
            .slow_call_duration(Duration::from_secs(2))
            .build()
            .unwrap();
        let mut snapshot = crate::Fuse::new("search", config.clone()).snapshot();
        (snapshot.calls, snapshot.failed, snapshot.slow) = (40, 12, 3);
        let view = CircuitView::read(&Reading {
            key: "fuse:search",
            name: "search",
            operation: None,
            shared: false,
            found: Found::Snapshot {
                snapshot: &snapshot,
                now: Duration::from_secs(100),
                wall: SystemTime::now(),
            },
            config: &config,
            store_error: None,
        });
        assert_eq!((view.calls, view.failed, view.slow), (40, 12, 3));
        assert_eq!((view.failures, view.state.as_str()), (0, "closed"));
        assert!(view.config.is_rate());
        assert_eq!(view.config.slow_call_duration_ms, Some(2000));
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(
            (&json["calls"], &json["failed"], &json["slow"]),
            (&40.into(), &12.into(), &3.into())
        );
        assert_eq!(json["config"]["policy"], "rate");
        assert_eq!(serde_json::from_value::<CircuitView>(json).unwrap(), view);
    }

    #[test]
    fn an_older_api_s_circuit_reads_as_a_count_circuit() {
        let old = serde_json::json!({
            "key": "fuse:billing", "name": "billing", "operation": null, "shared": false,
            "state": "closed", "failures": 1, "failure_ages_ms": [20], "probes_in_flight": 0,
            "probes_allowed": 2, "probe_successes": 0, "opened_at": null, "half_open_in_ms": null,
            "config": {"failure_threshold": 8, "failure_window_ms": 60000,
                       "open_duration_ms": 30000, "half_open_probes": 2},
            "store_error": null,
        });
        let view: CircuitView = serde_json::from_value(old).unwrap();
        assert_eq!(
            (view.failures, view.calls, view.failed, view.slow),
            (1, 0, 0, 0)
        );
        assert_eq!(view.config.policy, "count");
    }
}
