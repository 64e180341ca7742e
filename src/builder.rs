//! [`FuseBuilder`]: a circuit's names, configuration, clock and backing,
//! and the circuit built from them.

use std::sync::Arc;

use quanta::Clock;

use crate::backing::sealed::Sealed;
use crate::backing::{Backing, Local};
use crate::config::{Config, DEFAULT_KEY_PREFIX};
use crate::events::{Events, Listeners};
use crate::fuse::Fuse;
use crate::slot::{Occupant, Slot};

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
///
/// The same builder makes a circuit shared through a store
/// (`store`, feature `store`): the setters below are
/// every circuit's, whatever its [`Backing`].
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Debug)]
pub struct FuseBuilder<B: Backing = Local> {
    pub(crate) name: String,
    pub(crate) app: Option<String>,
    pub(crate) operation: Option<String>,
    pub(crate) config: Option<Config>,
    pub(crate) clock: Option<Clock>,
    pub(crate) coarse_clock: bool,
    pub(crate) jitter_seed: Option<u64>,
    pub(crate) listeners: Option<Arc<Listeners>>,
    /// The saved circuit to put back (SPEC §12; in-process circuits).
    pub(crate) restore: Option<crate::SavedCircuit>,
    /// What only this backing is built with.
    pub(crate) options: <B as Sealed>::Options,
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
        FuseBuilder::new(name.into())
    }
}

impl FuseBuilder {
    /// A builder of the local circuit `name` with everything else default.
    pub(crate) fn new(name: String) -> Self {
        FuseBuilder {
            name,
            app: None,
            operation: None,
            config: None,
            clock: None,
            coarse_clock: false,
            jitter_seed: None,
            listeners: None,
            restore: None,
            options: (),
        }
    }
}

impl<B: Backing> FuseBuilder<B> {
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
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
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
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// The names the circuit will have.
    pub(crate) fn names(&self) -> crate::names::Names {
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

    /// This builder for another backing, built with `options`.
    #[cfg_attr(not(feature = "store"), allow(dead_code))]
    pub(crate) fn backed<C: Backing>(self, options: <C as Sealed>::Options) -> FuseBuilder<C> {
        self.split(options).0
    }

    /// This builder for another backing, built with `options`, and the
    /// options this one held.
    #[cfg_attr(not(feature = "store"), allow(dead_code))]
    pub(crate) fn split<C: Backing>(
        self,
        options: <C as Sealed>::Options,
    ) -> (FuseBuilder<C>, <B as Sealed>::Options) {
        let builder = FuseBuilder {
            name: self.name,
            app: self.app,
            operation: self.operation,
            config: self.config,
            clock: self.clock,
            coarse_clock: self.coarse_clock,
            jitter_seed: self.jitter_seed,
            listeners: self.listeners,
            restore: self.restore,
            options,
        };
        (builder, self.options)
    }
}

impl FuseBuilder {
    /// Builds the circuit in the state `saved` describes (SPEC §12): open
    /// for what remained of its opening on the wall clock, keeping how many
    /// openings in a row it is, or closed with its window, in a new epoch
    /// (see [`SavedCircuit`](crate::SavedCircuit)). The saved circuit's
    /// name is not checked: restore what was saved under this one.
    ///
    /// ```
    /// use fuse_breaker::{Fuse, State};
    /// let saved = Fuse::new("billing", Default::default());
    /// saved.force_open();
    /// let fuse = Fuse::builder("billing").restore(&saved.save()).build();
    /// assert_eq!(fuse.state(), State::Open);
    /// ```
    pub fn restore(mut self, saved: &crate::SavedCircuit) -> Self {
        self.restore = Some(saved.clone());
        self
    }

    /// The circuit, closed with no failures (or as [`restore`](Self::restore)
    /// says).
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
        let fuse = Fuse {
            backing: Local::new(slot, occupant),
        };
        if let Some(saved) = &self.restore {
            fuse.restore(saved);
        }
        fuse
    }
}
