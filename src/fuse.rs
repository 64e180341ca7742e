//! [`Fuse`], one circuit, and its [`FuseBuilder`].

use std::fmt;

use quanta::Clock;

use crate::config::{Config, DEFAULT_KEY_PREFIX};
use crate::engine::Engine;
use crate::events::{Events, Listener, Listeners};
use crate::model;
use crate::names;
use crate::slot::{Occupant, Slot};
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
pub struct Fuse {
    /// The circuit's atomics, in memory its permits may outlive it in.
    slot: &'static Slot,
    /// Everything else the engine reads.
    occupant: Arc<Occupant>,
    /// Set by a registry's lookups, taken by its sweeps.
    used: crate::sync::UseMark,
}

impl Drop for Fuse {
    /// Frees the circuit's slot for a later circuit; permits still out
    /// become stale.
    fn drop(&mut self) {
        self.engine().retire();
        self.slot.vacate();
    }
}

impl Fuse {
    /// A circuit named `name` with this configuration and the real clock.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", fuse_breaker::Config::default());
    /// assert_eq!(fuse.key(), "fuse:billing");
    /// ```
    pub fn new(name: impl Into<String>, config: Config) -> Self {
        Fuse::builder(name).config(config).build()
    }

    /// A builder for a circuit with an app, an operation, a configuration
    /// or a clock of its own.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::builder("billing")
    ///     .app("punt")
    ///     .operation("charge")
    ///     .build();
    /// assert_eq!(fuse.key(), "fuse:punt:billing:charge");
    /// ```
    pub fn builder(name: impl Into<String>) -> FuseBuilder {
        FuseBuilder {
            name: name.into(),
            app: None,
            operation: None,
            config: None,
            clock: None,
            coarse_clock: false,
            jitter_seed: None,
            listeners: None,
        }
    }

    #[inline]
    pub(crate) fn engine(&self) -> Engine<'_> {
        Engine::new(self.slot, &self.occupant)
    }

    /// The circuit's slot, for the permits that outlive a borrow of it.
    #[inline]
    pub(crate) fn slot(&self) -> &'static Slot {
        self.slot
    }

    /// The circuit's tag in its slot: how an owned permit tells its own
    /// circuit from a later one in the same slot.
    #[inline]
    pub(crate) fn tag(&self) -> u32 {
        self.occupant.tag()
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

    /// The circuit's name.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Fuse::new("billing", Default::default()).name(), "billing");
    /// ```
    pub fn name(&self) -> &str {
        self.occupant.names().name()
    }

    /// The circuit's operation, if it has one (an empty operation is none).
    ///
    /// ```
    /// use fuse_breaker::Fuse;
    /// assert_eq!(Fuse::builder("billing").operation("refund").build().operation(), Some("refund"));
    /// assert_eq!(Fuse::builder("billing").operation("").build().operation(), None);
    /// ```
    pub fn operation(&self) -> Option<&str> {
        self.occupant.names().operation()
    }

    /// The circuit's key: `prefix:app:name:operation`, empty pieces left out.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::builder("billing").app("").operation("refund").build();
    /// assert_eq!(fuse.key(), "fuse:billing:refund");
    /// ```
    pub fn key(&self) -> &str {
        self.occupant.names().key()
    }

    /// The `metrics` feature's counts of this circuit.
    #[cfg(feature = "metrics")]
    #[inline]
    pub(crate) fn telemetry(&self) -> &crate::telemetry::Telemetry {
        self.occupant.telemetry()
    }

    /// Notes a registry lookup (a load, and a store at most once between
    /// two sweeps).
    #[inline]
    pub(crate) fn mark(&self) {
        self.used.set();
    }

    /// Whether a lookup noted the circuit since the last take.
    pub(crate) fn take_mark(&self) -> bool {
        self.used.take()
    }

    /// The circuit's time now, on its own clock.
    pub(crate) fn now(&self) -> u64 {
        self.occupant.time().now()
    }

    /// The copy of the circuit's names a rejection carries.
    #[inline]
    pub(crate) fn label(&self) -> &crate::names::Label {
        self.occupant.names().label()
    }

    /// The circuit's configuration.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// assert_eq!(fuse.config().failure_threshold(), 8);
    /// ```
    pub fn config(&self) -> &Config {
        self.engine().config()
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

    /// Registers a listener for this circuit's transitions: called once per
    /// transition, on the thread that made it, after the new state is in
    /// place. Calls that change nothing never run listeners.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use fuse_breaker::{Fuse, State, Transition};
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
        self.occupant
            .events()
            .own
            .add(&(Arc::new(listener) as Arc<dyn Listener>));
    }

    /// Publishes this circuit's admission count to the `metrics` recorder
    /// and, under the `rate` policy, the calls, failed calls and slow calls
    /// in its window as gauges (feature `metrics`; the other counts are
    /// published as they happen, and admissions also on every transition).
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.try_acquire()?.success();
    /// fuse.publish_metrics();
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        let telemetry = self.telemetry();
        telemetry.publish();
        if self.config().policy() == crate::Policy::Rate {
            telemetry.window(&self.snapshot());
        }
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

impl fmt::Debug for Fuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fuse")
            .field("key", &self.key())
            .field("state", &self.state())
            .field("coarse_clock", &self.occupant.time().is_coarse())
            .field("config", self.config())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Fuse`]: name, optional app and operation (pieces of the key),
/// configuration and clock.
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::{Config, Fuse};
///
/// let (clock, mock) = quanta::Clock::mock();
/// let fuse = Fuse::builder("billing")
///     .app("shop")
///     .operation("refund")
///     .config(Config::builder().failure_threshold(1).build()?)
///     .clock(clock)
///     .build();
/// mock.increment(Duration::from_secs(1));
/// fuse.try_acquire()?.failure();
/// assert_eq!(fuse.snapshot().opened_at, Some(Duration::from_secs(1)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct FuseBuilder {
    name: String,
    app: Option<String>,
    operation: Option<String>,
    config: Option<Config>,
    clock: Option<Clock>,
    coarse_clock: bool,
    jitter_seed: Option<u64>,
    listeners: Option<Arc<Listeners>>,
}

impl FuseBuilder {
    /// The application piece of the key, for several applications sharing
    /// a store.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::builder("billing").app("punt").build();
    /// assert_eq!(fuse.key(), "fuse:punt:billing");
    /// ```
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// The operation piece of the key, so that operations of one dependency
    /// trip separately.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::builder("billing").operation("charge").build();
    /// assert_eq!(fuse.key(), "fuse:billing:charge");
    /// ```
    pub fn operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// The configuration (default: [`Config::default`]).
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().key_prefix("cb").build()?;
    /// let fuse = fuse_breaker::Fuse::builder("billing").config(config).build();
    /// assert_eq!(fuse.key(), "cb:billing");
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// The clock (default: `quanta::Clock::new()`); `quanta::Clock::mock()`
    /// drives the circuit by hand in tests.
    ///
    /// ```
    /// let (clock, _mock) = quanta::Clock::mock();
    /// let fuse = fuse_breaker::Fuse::builder("billing").clock(clock).build();
    /// assert_eq!(fuse.snapshot().opened_at, None);
    /// ```
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Reads the time coarsely (default: precisely): one atomic load of the
    /// process's coarse time, refreshed every millisecond by an upkeep
    /// thread, instead of a clock read. An open circuit then rejects at the
    /// cost of a few loads, and a failure costs one clock read less; times
    /// lag the clock by up to a millisecond (a cooldown may end, and a
    /// failure age out of the window, up to a millisecond late or early).
    ///
    /// The upkeep thread (`fuse-coarse-clock`) is started once per process,
    /// at the first circuit that asks for it, and runs for the life of the
    /// process; if it cannot be started, the circuit reads its clock
    /// precisely. With a [`clock`](Self::clock) of your own, coarse reading
    /// is that clock's `quanta` recent time (quanta's upkeep thread is
    /// started, or the program's own is used); with a mock clock both
    /// readings are the mock's time.
    ///
    /// ```
    /// use fuse_breaker::Fuse;
    /// let fuse = Fuse::builder("billing").coarse_clock(true).build();
    /// fuse.force_open();
    /// let rejected = fuse.try_acquire().unwrap_err();
    /// assert!(rejected.retry_after() <= fuse.config().open_duration());
    /// ```
    pub fn coarse_clock(mut self, coarse: bool) -> Self {
        self.coarse_clock = coarse;
        self
    }

    /// The seed of the draws that shorten the circuit's openings by up to
    /// [`open_jitter`](Config::open_jitter) of themselves (SPEC §10;
    /// default: a random seed per circuit, so that processes come back at
    /// different instants). A circuit draws once per opening, from its seed
    /// and the opening's time: two circuits with one seed and one clock open
    /// for the same durations, which tests of jitter want.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let config = Config::builder().open_jitter(0.5).build()?;
    /// let (clock, _mock) = fuse_breaker::quanta::Clock::mock();
    /// let a = Fuse::builder("a").config(config.clone()).clock(clock.clone()).jitter_seed(7).build();
    /// let b = Fuse::builder("b").config(config).clock(clock).jitter_seed(7).build();
    /// a.force_open();
    /// b.force_open();
    /// assert_eq!(a.snapshot().open_for, b.snapshot().open_for);
    /// assert!(a.snapshot().open_for.unwrap() > Duration::from_secs(15));
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// The key the circuit will have (SPEC §1).
    pub(crate) fn key(&self) -> String {
        let prefix = self
            .config
            .as_ref()
            .map_or(DEFAULT_KEY_PREFIX, Config::key_prefix);
        names::key(
            prefix,
            self.app.as_deref(),
            &self.name,
            self.operation.as_deref(),
        )
    }

    /// The names the circuit will have.
    fn names(&self) -> crate::names::Names {
        let prefix = self
            .config
            .as_ref()
            .map_or(DEFAULT_KEY_PREFIX, Config::key_prefix);
        crate::names::Names::new(
            prefix,
            self.app.as_deref(),
            &self.name,
            self.operation.as_deref(),
        )
    }

    /// Listeners shared with other circuits (a registry's).
    pub(crate) fn shared_listeners(mut self, listeners: Arc<Listeners>) -> Self {
        self.listeners = Some(listeners);
        self
    }

    /// The circuit, closed with no failures.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::builder("billing").build();
    /// assert_eq!(fuse.state(), fuse_breaker::State::Closed);
    /// ```
    pub fn build(self) -> Fuse {
        let names = self.names();
        let config = self.config.unwrap_or_default();
        let events = Events {
            own: Listeners::default(),
            shared: self.listeners,
        };
        let config = crate::config::intern(config);
        let (slot, tag) = Slot::take(config);
        let occupant = Arc::new(Occupant::new(
            slot,
            tag,
            self.clock,
            self.coarse_clock,
            names,
            events,
            self.jitter_seed.unwrap_or_else(crate::random::next),
        ));
        slot.occupy(&occupant);
        Fuse {
            slot,
            occupant,
            used: crate::sync::UseMark::default(),
        }
    }
}
