//! State-change events: [`Listener`], the [`Transition`]s it hears (and
//! their [`Reason`]s), and where a circuit sends them.
//!
//! A transition is reported once, on the thread whose compare-and-swap made
//! it, after the new state is in place. Nothing here runs on a call that
//! does not change the state, and listeners are read without a lock. The
//! `tracing` and `metrics` features are listeners too (sinks a circuit
//! registers when it is built, see `sinks`), so every transition goes one
//! way. A shared circuit's store outages reach the same listeners as
//! [`StoreEvent`]s (feature `store`): the event is the core's, so the core
//! knows nothing of stores.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;

pub use crate::transition::{Reason, Transition};
pub use reconfiguration::{Change, Reconfiguration};

mod reconfiguration;

#[cfg(feature = "store")]
use crate::fallback::Fallback;

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
/// use fuse_breaker::{Fuse, events::Listener, events::Transition};
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

    /// Called when the circuit's settings are replaced while it runs
    /// (SPEC §12), once per change that replaced any setting. The default
    /// does nothing.
    ///
    /// ```
    /// use fuse_breaker::events::{Listener, Reconfiguration, Transition};
    /// struct Log;
    /// impl Listener for Log {
    ///     fn on_transition(&self, _: &Transition) {}
    ///     fn on_reconfigure(&self, event: &Reconfiguration) {
    ///         eprintln!("{} reconfigured by {}", event.key, event.by);
    ///     }
    /// }
    /// ```
    fn on_reconfigure(&self, event: &Reconfiguration<'_>) {
        let _ = event;
    }

    /// Called when a shared circuit's store stops answering (its fallback
    /// decides from then on) and when it answers again (feature `store`).
    /// The default does nothing.
    ///
    /// ```
    /// use fuse_breaker::events::StoreEvent;
    /// use fuse_breaker::{events::Listener, events::Transition};
    ///
    /// struct Pager;
    /// impl Listener for Pager {
    ///     fn on_transition(&self, _: &Transition) {}
    ///     fn on_store(&self, event: &StoreEvent) {
    ///         if !event.reachable {
    ///             eprintln!("{} lost its store {}", event.key, event.store);
    ///         }
    ///     }
    /// }
    /// ```
    #[cfg(feature = "store")]
    fn on_store(&self, event: &StoreEvent<'_>) {
        let _ = event;
    }
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

    fn on_reconfigure(&self, event: &Reconfiguration<'_>) {
        (**self).on_reconfigure(event);
    }

    #[cfg(feature = "store")]
    fn on_store(&self, event: &StoreEvent<'_>) {
        (**self).on_store(event);
    }
}

/// A shared circuit's store stopped answering (its [`Fallback`] decides
/// from then on) or answers again, or an operator's change replaced what
/// was not a circuit under its key: what [`Listener::on_store`] receives
/// (and, with their features, the `tracing` sink and the metrics). Reached
/// as `fuse_breaker::events::StoreEvent`; its errors are the store's
/// ([`store_error`](Self::store_error) and
/// [`unreadable`](Self::unreadable) give them as their own types).
///
/// ```
/// use fuse_breaker::config::Fallback;
/// use fuse_breaker::events::StoreEvent;
/// fn page(event: &StoreEvent) -> bool {
///     !event.reachable && event.fallback == Fallback::Reject
/// }
/// ```
#[cfg(feature = "store")]
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct StoreEvent<'a> {
    /// The circuit's key.
    pub key: &'a str,
    /// The store's name.
    pub store: &'a str,
    /// `false`: the store stopped answering; `true`: it answers again.
    pub reachable: bool,
    /// What decides while it does not answer.
    pub fallback: Fallback,
    /// The error that began the outage (a `StoreError`).
    pub error: Option<&'a (dyn std::error::Error + Send + Sync + 'static)>,
    /// An operator's change (`force_open`, `force_closed`, `reset` of a
    /// shared circuit) replaced a payload that was not a circuit: what was
    /// wrong with it (a `PayloadError`; `reachable` is `true`: the store
    /// answered).
    pub overwritten: Option<&'a (dyn std::error::Error + Send + Sync + 'static)>,
    /// The store's primary moved (a failover: see
    /// [`Changes::failovers`](crate::store::Changes::failovers)) and answers
    /// at this address now (`reachable` is `true`): told once per move, by
    /// the first round trip of this circuit that finds it.
    pub failover: Option<&'a str>,
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

    /// How many listeners there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.list.load().len()
    }

    pub(crate) fn emit(&self, transition: &Transition) {
        if self.is_empty() {
            return;
        }
        for listener in self.list.load().iter() {
            listener.on_transition(transition);
        }
    }

    /// Tells every listener of a reconfiguration.
    pub(crate) fn emit_reconfigure(&self, event: &Reconfiguration<'_>) {
        for listener in self.list.load().iter() {
            listener.on_reconfigure(event);
        }
    }

    /// Tells every listener of a store's outage or return.
    #[cfg(feature = "store")]
    pub(crate) fn emit_store(&self, event: &StoreEvent<'_>) {
        for listener in self.list.load().iter() {
            listener.on_store(event);
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

/// Where a circuit reports its transitions: its own listeners (the sinks
/// of the `tracing` and `metrics` features first, when they are on) and
/// those of the registry that made it.
#[derive(Debug, Default)]
pub(crate) struct Events {
    pub(crate) own: Listeners,
    pub(crate) shared: Option<Arc<Listeners>>,
}

impl Events {
    /// Whether a transition has anyone to tell.
    #[inline]
    pub(crate) fn wanted(&self) -> bool {
        !self.own.is_empty()
            || self
                .shared
                .as_ref()
                .is_some_and(|shared| !shared.is_empty())
    }

    pub(crate) fn emit(&self, transition: &Transition) {
        self.own.emit(transition);
        if let Some(shared) = &self.shared {
            shared.emit(transition);
        }
    }

    /// Tells every listener of a reconfiguration.
    pub(crate) fn emit_reconfigure(&self, event: &Reconfiguration<'_>) {
        self.own.emit_reconfigure(event);
        if let Some(shared) = &self.shared {
            shared.emit_reconfigure(event);
        }
    }

    /// Tells every listener of a store's outage or return.
    #[cfg(feature = "store")]
    pub(crate) fn emit_store(&self, event: &StoreEvent<'_>) {
        self.own.emit_store(event);
        if let Some(shared) = &self.shared {
            shared.emit_store(event);
        }
    }
}
