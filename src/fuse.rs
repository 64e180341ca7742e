//! [`Fuse`], one circuit, and its [`FuseBuilder`].

use std::fmt;

use crate::backing::{Backing, Local};
use crate::config::Config;
use crate::engine::Engine;
use crate::events::Listener;
use crate::model;
use crate::slot::Slot;
use crate::snapshot::{Snapshot, State};
use crate::transition::Reason;
use std::sync::Arc;

/// One circuit protecting one dependency.
///
/// `Send + Sync`: share it (by reference or in an `Arc`) between every
/// thread and task that calls the dependency. Admission and verdicts are
/// lock-free; on a closed circuit without failures they are atomic loads.
///
/// ```
/// use fuse_breaker::{Config, Error, Fuse};
///
/// let fuse = Fuse::new("billing-sdk", Config::default());
/// let charged = fuse.run(|| Ok::<_, std::io::Error>("charged"));
/// assert_eq!(charged.ok(), Some("charged"));
///
/// fuse.force_open();
/// let rejected = fuse.run(|| -> Result<(), std::io::Error> { unreachable!("not called") });
/// assert!(matches!(rejected, Err(Error::Open(_))));
/// ```
pub struct Fuse<B: Backing = Local> {
    /// Where the circuit's state lives.
    pub(crate) backing: B,
}

impl<B: Backing> Fuse<B> {
    /// The circuit's name.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Fuse::new("billing", Default::default()).name(), "billing");
    /// ```
    pub fn name(&self) -> &str {
        self.backing.names().name()
    }

    /// The circuit's operation, if it has one (an empty operation is none).
    ///
    /// ```
    /// use fuse_breaker::Fuse;
    /// assert_eq!(Fuse::builder("billing").operation("refund").build().operation(), Some("refund"));
    /// assert_eq!(Fuse::builder("billing").operation("").build().operation(), None);
    /// ```
    pub fn operation(&self) -> Option<&str> {
        self.backing.names().operation()
    }

    /// The circuit's key: `prefix:app:name:operation`, empty pieces left
    /// out (SPEC §1); a shared circuit's key in its store.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::builder("billing").app("").operation("refund").build();
    /// assert_eq!(fuse.key(), "fuse:billing:refund");
    /// ```
    pub fn key(&self) -> &str {
        self.backing.names().key()
    }

    /// The circuit's configuration.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// assert_eq!(fuse.config().failure_threshold(), 8);
    /// ```
    pub fn config(&self) -> &Config {
        self.backing.config()
    }

    /// Registers a listener for this circuit's transitions: called once per
    /// transition, on the thread that made it, after the new state is in
    /// place. Calls that change nothing never run listeners. A shared
    /// circuit's listeners also hear of its store
    /// (`Listener::on_store`).
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use fuse_breaker::{Fuse, State, events::Transition};
    ///
    /// let states = Arc::new(Mutex::new(Vec::new()));
    /// let fuse = Fuse::new("billing", Default::default());
    /// let log = states.clone();
    /// fuse.on_transition(move |t: &Transition| log.lock().unwrap().push(t.to));
    /// fuse.force_open();
    /// fuse.force_closed();
    /// assert_eq!(*states.lock().unwrap(), [State::Open, State::Closed]);
    /// ```
    pub fn on_transition(&self, listener: impl Listener) {
        self.backing.listen(Arc::new(listener));
    }

    /// The circuit's time now, on its local clock.
    pub(crate) fn now(&self) -> u64 {
        self.backing.now()
    }

    /// Notes a registry lookup (a load, and a store at most once between
    /// two sweeps).
    #[inline]
    pub(crate) fn mark(&self) {
        self.backing.mark();
    }

    /// Whether a lookup noted the circuit since the last take.
    pub(crate) fn take_mark(&self) -> bool {
        self.backing.take_mark()
    }

    /// Whether retiring the circuit from a registry loses nothing.
    pub(crate) fn quiet(&self) -> bool {
        self.backing.quiet()
    }

    /// Publishes this circuit's admission count to the `metrics` recorder
    /// and, under the `rate` policy, the calls, failed calls and slow calls
    /// in its window as gauges, and with a ramp-up or throttling (SPEC
    /// §11) the share of calls it admits (`fuse_admission`) (feature
    /// `metrics`; the other counts are published as they happen, and
    /// admissions also on every transition). With the `opentelemetry`
    /// feature, the window and the admitted share are set for its
    /// observable instruments (`resilience.circuit_breaker.window.calls`,
    /// `resilience.circuit_breaker.admission`) from the same snapshot. A
    /// shared circuit publishes its counts: its window and state are the
    /// store's.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.try_acquire()?.success();
    /// fuse.publish_metrics();
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
    pub fn publish_metrics(&self) {
        crate::backing::sealed::Sealed::publish(&self.backing);
    }
}

impl Fuse {
    #[inline]
    pub(crate) fn engine(&self) -> Engine<'_> {
        Engine::new(self.backing.slot, &self.backing.occupant)
    }

    /// The circuit's slot, for the permits that outlive a borrow of it.
    #[inline]
    pub(crate) fn slot(&self) -> &'static Slot {
        self.backing.slot
    }

    /// The circuit's tag in its slot: how an owned permit tells its own
    /// circuit from a later one in the same slot.
    #[inline]
    pub(crate) fn tag(&self) -> u32 {
        self.backing.occupant.tag()
    }

    /// How many writes the circuit's state word and records have
    /// taken. Only in loom builds (`--cfg fuse_loom`), for the models of
    /// `loom-tests/`; not part of the API.
    #[cfg(fuse_loom)]
    #[doc(hidden)]
    pub fn loom_writes(&self) -> usize {
        self.engine().writes()
    }

    /// Moves this circuit, fresh and not shared yet, to the closed epoch
    /// `epoch` with its claim counter at `claims`, its records left
    /// `record_age` epochs behind (zero: untouched). Only in loom builds
    /// (`--cfg fuse_loom`), for the wrap-around models of `loom-tests/`;
    /// not part of the API.
    #[cfg(fuse_loom)]
    #[doc(hidden)]
    pub fn loom_start(&self, epoch: u32, claims: u32, record_age: u32) {
        let ages = (record_age > 0).then_some((record_age, record_age));
        self.engine()
            .start_at(crate::epoch::Epoch::new(epoch), claims, ages);
    }

    /// The sinks of the features that count (which a shared circuit
    /// whose local circuit this is shares).
    #[cfg(any(feature = "metrics", feature = "opentelemetry", feature = "store"))]
    #[inline]
    pub(crate) fn sinks(&self) -> &crate::sinks::Sinks {
        self.backing.occupant.sinks()
    }

    /// The circuit's time, for the `metrics` feature's durations.
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
    #[inline]
    pub(crate) fn time(&self) -> &crate::clock::Time {
        self.backing.occupant.time()
    }

    /// The copy of the circuit's names a rejection carries.
    #[inline]
    pub(crate) fn label(&self) -> &crate::names::Label {
        self.backing.occupant.names().label()
    }

    /// The current state; only reads (an open circuit whose cooldown has
    /// passed reads `Open` until a call arrives).
    ///
    /// ```
    /// use fuse_breaker::{Fuse, State};
    /// let fuse = Fuse::new("billing", Default::default());
    /// assert_eq!(fuse.state(), State::Closed);
    /// ```
    pub fn state(&self) -> State {
        self.engine().state()
    }

    /// Everything the circuit knows now; only reads.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// let snap = fuse.snapshot();
    /// assert!(snap.failures.is_empty());
    /// assert_eq!(snap.opened_at, None);
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        self.engine().snapshot()
    }

    /// Opens the circuit now, whatever its state; after the open duration
    /// the next call probes. Permits granted before become stale.
    ///
    /// ```
    /// use fuse_breaker::{Fuse, State};
    /// let fuse = Fuse::new("billing", Default::default());
    /// fuse.force_open();
    /// assert_eq!(fuse.state(), State::Open);
    /// ```
    pub fn force_open(&self) {
        self.engine().force(model::force_open, Reason::Forced);
    }

    /// Closes the circuit and clears its failures. Permits granted before
    /// become stale.
    ///
    /// ```
    /// use fuse_breaker::{Fuse, State};
    /// let fuse = Fuse::new("billing", Default::default());
    /// fuse.force_open();
    /// fuse.force_closed();
    /// assert_eq!(fuse.state(), State::Closed);
    /// ```
    pub fn force_closed(&self) {
        self.engine().force(model::force_closed, Reason::Forced);
    }

    /// Forgets the circuit: the next read is a fresh closed circuit.
    /// Permits granted before become stale.
    ///
    /// ```
    /// use fuse_breaker::{Fuse, State};
    /// let fuse = Fuse::new("billing", Default::default());
    /// fuse.try_acquire()?.failure();
    /// fuse.reset();
    /// assert!(fuse.snapshot().failures.is_empty());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn reset(&self) {
        self.engine().force(model::reset, Reason::Reset);
    }
}

impl<B: Backing> fmt::Debug for Fuse<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fuse")
            .field("key", &self.key())
            .field("backing", &self.backing)
            .field("config", self.config())
            .finish()
    }
}
