//! What the admin API says of a circuit: [`CircuitView`] (one circuit at
//! one instant, wall-clock times), [`CircuitList`] (a page of them) and
//! [`TransitionView`] (one event of the stream). The `fuse` command reads
//! the same types back.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use super::config_view::ConfigView;
use super::config_view::{millis, number, one};
use crate::config::Config;
use crate::factor::Factor;
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
/// // The first opening in a row, for the open duration (SPEC §10).
/// assert_eq!((view.openings, view.open_for_ms), (1, Some(30_000)));
/// assert!(view.retry_at.is_some());
///
/// // Under the rate policy: the window's calls and the rule's thresholds.
/// use fuse_breaker::{Config, config::Policy};
/// let rate = Config::builder().policy(Policy::Rate).failure_rate(25).build()?;
/// let view = CircuitView::of(&Fuse::new("search", rate));
/// assert_eq!((view.config.policy.as_str(), view.config.failure_rate), ("rate", 25));
/// assert_eq!((view.calls, view.failed, view.slow), (0, 0, 0));
///
/// // Every call admitted, unless a closed circuit grades its admission
/// // (SPEC §11): then the share, and why.
/// assert_eq!((view.admission.to_f64(), view.graded_by), (1.0, None));
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
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
    /// [`failed`](Self::failed) and [`slow`](Self::slow)); while a shared
    /// circuit is open, the failures that opened it, as its payload keeps
    /// them (milon/fuse's opening keeps its threshold's worth).
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
    /// Milliseconds until the next call probes (open only): until
    /// [`retry_at`](Self::retry_at), 0 once it has passed.
    pub half_open_in_ms: Option<u64>,
    /// How long this opening lasts from [`opened_at`](Self::opened_at), in
    /// milliseconds (open only; SPEC §10: the backoff, the jitter and any
    /// hint of the server applied; absent from an older API's answer).
    #[serde(default)]
    pub open_for_ms: Option<u64>,
    /// When the opening ends and the next call probes, RFC 3339 in UTC
    /// (open only): `opened_at` plus `open_for_ms`.
    #[serde(default)]
    pub retry_at: Option<String>,
    /// Whether [`open_for_ms`](Self::open_for_ms),
    /// [`half_open_in_ms`](Self::half_open_in_ms) and
    /// [`retry_at`](Self::retry_at) are assumed from this process's
    /// `open_duration` ([`config`](Self::config)) because the shared
    /// circuit's payload does not say when its opening ends (a circuit
    /// milon/fuse opened); `false` when they are known (absent from an
    /// older API's answer).
    #[serde(default)]
    pub open_for_assumed: bool,
    /// How many times in a row the circuit has opened, this opening
    /// included: 1 for an opening from closed or by a forced open, one
    /// more for each failed probe (SPEC §10's n + 1); 0 while closed.
    #[serde(default)]
    pub openings: u32,
    /// A shared circuit's quorum (SPEC §8): how many distinct processes
    /// reported the failures in its window, counted up to
    /// [`config.min_reporters`](ConfigView::min_reporters); 0 while open or
    /// half-open, for an in-process circuit, and in an older API's answer.
    #[serde(default)]
    pub reporters: u32,
    /// The share of calls the circuit admits (SPEC §11), a JSON number
    /// from 0 to 1: 1 unless it is closed and grades its admission (a
    /// ramp-up after it recovered, or throttling; 1 when an older API
    /// leaves it out).
    #[serde(default = "one", with = "number")]
    pub admission: Factor,
    /// Why a closed circuit admits fewer than all calls: `ramp_up` or
    /// `throttle` ([`Grading::as_str`](crate::Grading::as_str)); `None`
    /// when it admits every call.
    #[serde(default)]
    pub graded_by: Option<String>,
    /// Under throttling ([`config.throttle_k`](ConfigView::throttle_k)):
    /// the calls that asked in the window while closed, admitted or
    /// throttled; 0 otherwise.
    #[serde(default)]
    pub requests: u64,
    /// Under throttling: the admitted calls in the window whose verdict
    /// was a success; 0 otherwise.
    #[serde(default)]
    pub accepts: u64,
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
///     r#"{"key": "fuse:billing", "from": "half_open", "to": "open",
///         "reason": "probe_failed", "at": "2026-12-01T20:01:02.345Z",
///         "openings": 2, "open_for_ms": 60000}"#,
/// )?;
/// assert_eq!((event.to.as_str(), event.openings, event.open_for_ms), ("open", 2, Some(60_000)));
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
    /// How many times in a row the circuit has opened after the change
    /// (see [`CircuitView::openings`]; absent from an older API's event).
    #[serde(default)]
    pub openings: u32,
    /// For a change to `open`: how long the opening lasts, in
    /// milliseconds.
    #[serde(default)]
    pub open_for_ms: Option<u64>,
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
    /// Its snapshot, what a shared circuit's payload holds besides (the
    /// failures that opened it, whether its end is assumed: see
    /// [`Held`](crate::store::Held)), `now` on the snapshot's time base and
    /// the same instant on the wall clock.
    Snapshot {
        snapshot: &'a Snapshot,
        opening_failures: &'a [Duration],
        open_for_assumed: bool,
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
                opening_failures: &[],
                open_for_assumed: false,
                now: Duration::from_nanos(fuse.now()),
                wall: SystemTime::now(),
            },
            config: fuse.config(),
            store_error: None,
        })
    }

    pub(super) fn read(reading: &Reading<'_>) -> Self {
        let config = reading.config;
        let empty = |state: &str| CircuitView {
            key: reading.key.to_owned(),
            name: reading.name.to_owned(),
            operation: reading.operation.map(str::to_owned),
            shared: reading.shared,
            state: state.to_owned(),
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
            open_for_ms: None,
            retry_at: None,
            open_for_assumed: false,
            openings: 0,
            reporters: 0,
            admission: Factor::ONE,
            graded_by: None,
            requests: 0,
            accepts: 0,
            config: ConfigView::of(config),
            store_error: reading.store_error.clone(),
            overwritten: None,
        };
        let (snapshot, opening_failures, open_for_assumed, now, wall) = match reading.found {
            Found::Snapshot {
                snapshot,
                opening_failures,
                open_for_assumed,
                now,
                wall,
            } => (snapshot, opening_failures, open_for_assumed, now, wall),
            #[cfg(feature = "store")]
            Found::Nothing(state) => return empty(state),
        };
        let open = snapshot.state == State::Open;
        // While open, the failures that opened it (a shared circuit's
        // payload keeps them).
        let failures = if open {
            opening_failures
        } else {
            &snapshot.failures
        };
        // A snapshot of an open circuit has its opening's duration; the
        // open duration stands in should one not.
        let opening = snapshot.opened_at.filter(|_| open).map(|at| {
            let open_for = snapshot.open_for.unwrap_or(config.open_duration());
            (open_for, at.saturating_add(open_for))
        });
        CircuitView {
            failures: failures.len(),
            failure_ages_ms: failures
                .iter()
                .map(|at| millis(now.saturating_sub(*at)))
                .collect(),
            calls: snapshot.calls,
            failed: snapshot.failed,
            slow: snapshot.slow,
            probes_in_flight: snapshot.half_open_inflight,
            probe_successes: snapshot.half_open_successes,
            opened_at: snapshot
                .opened_at
                .and_then(|at| rfc3339(wall_clock(at, now, wall)).or_else(|| rfc3339(Some(wall)))),
            open_for_ms: opening.map(|(open_for, _)| millis(open_for)),
            half_open_in_ms: opening.map(|(_, retry)| millis(retry.saturating_sub(now))),
            retry_at: opening.and_then(|(_, retry)| rfc3339(wall_clock(retry, now, wall))),
            open_for_assumed: open_for_assumed && open,
            openings: snapshot.openings,
            reporters: snapshot.reporters,
            admission: snapshot.admission,
            graded_by: snapshot.graded_by.map(|why| why.as_str().to_owned()),
            requests: snapshot.requests,
            accepts: snapshot.accepts,
            ..empty(snapshot.state.as_str())
        }
    }
}

/// The wall-clock time of `at`, a time on the base of `now`, which is
/// `wall` on the wall clock; `None` past what a `SystemTime` holds.
fn wall_clock(at: Duration, now: Duration, wall: SystemTime) -> Option<SystemTime> {
    match at.checked_sub(now) {
        Some(later) => wall.checked_add(later),
        None => wall.checked_sub(now.saturating_sub(at)),
    }
}

/// `time` in RFC 3339 with milliseconds, in UTC; `None` for a time no
/// such date holds (before 1970, or after 9999).
fn rfc3339(time: Option<SystemTime>) -> Option<String> {
    use std::fmt::Write as _;

    let time = time.filter(|time| *time >= SystemTime::UNIX_EPOCH)?;
    let mut text = String::new();
    write!(text, "{}", humantime::format_rfc3339_millis(time)).ok()?;
    Some(text)
}

impl TransitionView {
    /// `transition` as the event stream sends it, told now.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use fuse_breaker::{Fuse, events::Transition, admin::TransitionView};
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
            at: rfc3339(Some(SystemTime::now())).unwrap_or_default(),
            openings: transition.openings,
            open_for_ms: transition.open_for.map(millis),
        }
    }
}

#[cfg(test)]
mod tests;
