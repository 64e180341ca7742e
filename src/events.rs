//! State-change events: [`Transition`], [`Reason`] and [`Listener`].
//!
//! A transition is reported once, on the thread whose compare-and-swap made
//! it, after the new state is in place. Nothing here runs on a call that
//! does not change the state, and listeners are read without a lock.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::snapshot::State;

/// Why a circuit changed state.
///
/// ```
/// use fuse_breaker::{Config, Fuse, Reason};
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let fuse = Fuse::new("billing", Config::builder().failure_threshold(1).build()?);
/// let log = seen.clone();
/// fuse.on_transition(move |t: &fuse_breaker::Transition| log.lock().unwrap().push(t.reason));
/// fuse.try_acquire()?.failure();
/// fuse.force_closed();
/// assert_eq!(*seen.lock().unwrap(), [Reason::ThresholdReached, Reason::Forced]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// `Closed -> Open`: counted failures inside the window reached the threshold.
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
    /// assert_eq!(fuse_breaker::Reason::ProbeFailed.as_str(), "probe_failed");
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
/// use fuse_breaker::{Fuse, Reason, State, Transition};
/// use std::sync::{Arc, Mutex};
///
/// let last = Arc::new(Mutex::new(None));
/// let fuse = Fuse::new("billing", Default::default());
/// let sink = last.clone();
/// fuse.on_transition(move |t: &Transition| *sink.lock().unwrap() = Some(*t));
/// fuse.force_open();
/// let t = last.lock().unwrap().expect("one transition");
/// assert_eq!((t.key, t.from, t.to, t.reason), ("fuse:billing", State::Closed, State::Open, Reason::Forced));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Transition {
    /// The circuit's key.
    pub key: &'static str,
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// Why.
    pub reason: Reason,
    /// When, on the circuit's time base.
    pub at: Duration,
}

/// Receives the transitions of the circuits it is registered with, on the
/// thread that made each one. Any `Fn(&Transition) + Send + Sync` is one.
///
/// Keep it short: it runs inside the call that changed the state, after
/// the change is in place, and holds no lock, so other callers of the
/// circuit go on while it runs, and it may call back into the circuit
/// (take a permit, read a snapshot, force a state, add a listener).
///
/// A listener that panics propagates the panic to the call that made the
/// transition; the transition has happened all the same, and listeners
/// after it in the list miss that one transition. No probe slot is lost:
/// if the call was the admission that moved the circuit to half-open, the
/// probe it took is given an ignore verdict as the panic unwinds, so the
/// next call probes.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use fuse_breaker::{Fuse, Listener, Transition};
///
/// struct Count(AtomicUsize);
/// impl Listener for Count {
///     fn on_transition(&self, _: &Transition) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// let count = std::sync::Arc::new(Count(AtomicUsize::new(0)));
/// let fuse = Fuse::new("billing", Default::default());
/// fuse.on_transition(count.clone());
/// fuse.force_open();
/// fuse.reset();
/// assert_eq!(count.0.load(Ordering::Relaxed), 2);
/// ```
pub trait Listener: Send + Sync + 'static {
    /// Called once per transition.
    fn on_transition(&self, transition: &Transition);
}

impl<F> Listener for F
where
    F: Fn(&Transition) + Send + Sync + 'static,
{
    fn on_transition(&self, transition: &Transition) {
        self(transition);
    }
}

impl<L: Listener + ?Sized> Listener for Arc<L> {
    fn on_transition(&self, transition: &Transition) {
        (**self).on_transition(transition);
    }
}

/// A set of listeners, read without a lock (copy on write on registration).
#[derive(Default)]
pub(crate) struct Listeners {
    /// Set once the first listener is added: until then a transition does
    /// not even load the list.
    any: AtomicBool,
    list: ArcSwap<Vec<Arc<dyn Listener>>>,
}

impl Listeners {
    pub(crate) fn add(&self, listener: &Arc<dyn Listener>) {
        self.list.rcu(|list| {
            let mut list = Vec::clone(list);
            list.push(Arc::clone(listener));
            list
        });
        // Release: a thread that sees the flag sees the list it guards.
        self.any.store(true, Ordering::Release);
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        // Acquire: pairs with the release in `add`.
        !self.any.load(Ordering::Acquire)
    }

    pub(crate) fn emit(&self, transition: &Transition) {
        if self.is_empty() {
            return;
        }
        for listener in self.list.load().iter() {
            listener.on_transition(transition);
        }
    }
}

impl fmt::Debug for Listeners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listeners")
            .field("any", &!self.is_empty())
            .field("count", &self.list.load().len())
            .finish()
    }
}

/// Where a circuit reports its transitions: its own listeners and those of
/// the registry that made it.
#[derive(Debug, Default)]
pub(crate) struct Events {
    pub(crate) own: Listeners,
    pub(crate) shared: Option<Arc<Listeners>>,
    #[cfg(feature = "metrics")]
    pub(crate) telemetry: crate::telemetry::Telemetry,
}

impl Events {
    /// Whether a transition has anyone to tell (including the `tracing` and
    /// `metrics` features, which always listen).
    #[inline]
    pub(crate) fn wanted(&self) -> bool {
        cfg!(feature = "tracing")
            || cfg!(feature = "metrics")
            || !self.own.is_empty()
            || self
                .shared
                .as_ref()
                .is_some_and(|shared| !shared.is_empty())
    }

    pub(crate) fn emit(&self, transition: &Transition) {
        #[cfg(feature = "tracing")]
        tracing::info!(
            target: "fuse_breaker",
            key = transition.key,
            from = transition.from.as_str(),
            to = transition.to.as_str(),
            reason = transition.reason.as_str(),
            at_ns = u64::try_from(transition.at.as_nanos()).unwrap_or(u64::MAX),
            "circuit {} {} -> {} ({})",
            transition.key,
            transition.from,
            transition.to,
            transition.reason,
        );
        #[cfg(feature = "metrics")]
        self.telemetry.transition(transition);
        self.own.emit(transition);
        if let Some(shared) = &self.shared {
            shared.emit(transition);
        }
    }
}
