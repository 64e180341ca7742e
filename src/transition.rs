//! [`Transition`] and [`Reason`]: what a state change of a circuit is
//! reported as. A leaf: the model names its reasons with it, and listeners
//! (the user's, the `tracing` and `metrics` sinks) receive it.

use std::fmt;
use std::time::Duration;

use crate::snapshot::State;

/// Why a circuit changed state.
///
/// ```
/// use fuse_breaker::{Config, Fuse, events::Reason};
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let fuse = Fuse::new("billing", Config::builder().failure_threshold(1).build()?);
/// let log = seen.clone();
/// fuse.on_transition(move |t: &fuse_breaker::events::Transition| log.lock().unwrap().push(t.reason));
/// fuse.try_acquire()?.failure();
/// fuse.force_closed();
/// assert_eq!(*seen.lock().unwrap(), [Reason::ThresholdReached, Reason::Forced]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// `Closed -> Open`: the closed-state rule held (SPEC §9): counted
    /// failures inside the window reached the threshold (policy `count`),
    /// or the share of failed or slow calls reached its rate (`rate`).
    ThresholdReached,
    /// `HalfOpen -> Open`: a probe failed.
    ProbeFailed,
    /// `Open -> HalfOpen`: the first call after the cooldown.
    CooldownEnded,
    /// `HalfOpen -> Closed`: enough probes succeeded.
    ProbesPassed,
    /// `force_open` or `force_closed`.
    Forced,
    /// `reset`.
    Reset,
}

impl Reason {
    /// The reason as logs and metrics spell it: `threshold_reached`, ...
    ///
    /// ```
    /// assert_eq!(fuse_breaker::events::Reason::ProbeFailed.as_str(), "probe_failed");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ThresholdReached => "threshold_reached",
            Reason::ProbeFailed => "probe_failed",
            Reason::CooldownEnded => "cooldown_ended",
            Reason::ProbesPassed => "probes_passed",
            Reason::Forced => "forced",
            Reason::Reset => "reset",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One state change of one circuit.
///
/// `at` is on the circuit's time base (see [`Snapshot`](crate::Snapshot)).
/// A manual change in the same state (`force_open` of an open circuit)
/// is a transition too: it starts a new epoch.
///
/// ```
/// use fuse_breaker::{Fuse, events::Reason, State, events::Transition};
/// use std::sync::{Arc, Mutex};
///
/// let last = Arc::new(Mutex::new(None));
/// let fuse = Fuse::new("billing", Default::default());
/// let sink = last.clone();
/// fuse.on_transition(move |t: &Transition| {
///     *sink.lock().unwrap() = Some((t.key.to_owned(), t.from, t.to, t.reason));
/// });
/// fuse.force_open();
/// let t = last.lock().unwrap().clone().expect("one transition");
/// assert_eq!(t, ("fuse:billing".to_owned(), State::Closed, State::Open, Reason::Forced));
///
/// // An opening tells which one in a row it is, and how long it lasts.
/// let opening = Arc::new(Mutex::new(None));
/// let sink = opening.clone();
/// fuse.on_transition(move |t: &Transition| *sink.lock().unwrap() = Some((t.openings, t.open_for)));
/// fuse.force_open();
/// let open_for = Some(fuse.config().open_duration());
/// assert_eq!(*opening.lock().unwrap(), Some((1, open_for)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Transition<'a> {
    /// The circuit's key.
    pub key: &'a str,
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// Why.
    pub reason: Reason,
    /// When, on the circuit's time base.
    pub at: Duration,
    /// How many times in a row the circuit has opened, as
    /// [`Snapshot::openings`](crate::Snapshot::openings) reads after the
    /// change: for a change to `Open`, which opening in a row it is (1
    /// from `Closed` or by `force_open`, one more for each failed probe;
    /// SPEC §10's n + 1); 0 for a change to `Closed`.
    pub openings: u32,
    /// For a change to `Open`: how long this opening lasts, as
    /// [`Snapshot::open_for`](crate::Snapshot::open_for) reads after the
    /// change (SPEC §10); `None` otherwise, or when the circuit has moved
    /// on before the listeners were told.
    pub open_for: Option<Duration>,
}
