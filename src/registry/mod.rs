//! [`Registry`]: named circuits, created on first use and shared.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use quanta::Clock;

use crate::backing::sealed::Sealed;
use crate::backing::{Backing, Local};
use crate::builder::FuseBuilder;
use crate::config::Config;
use crate::error::OpenError;
use crate::events::{Listener, Listeners};
use crate::fuse::Fuse;
use crate::limits::OVERFLOW_NAME;
use crate::permit::OwnedPermit;
use crate::sync::Tally;

mod builder;
mod checked;
mod held;
mod map;
mod reload;

pub use builder::RegistryBuilder;
pub(crate) use checked::Configs;
#[cfg(feature = "config-file")]
pub(crate) use checked::check_max_circuits;
use held::{Created, Held};
use map::{Circuits, Lookup, Pair, each_circuit};

/// The circuits of one application: created on first use from the defaults
/// and the per-name overrides, then shared, one per key.
///
/// A circuit is its key (SPEC §1), so lookups whose keys coincide share
/// one circuit: `get("a:b")` and `get_operation("a", "b")`, or
/// `get_operation("a:b", "c")` and `get_operation("a", "b:c")` (all
/// `fuse:a:b:c`-style keys are joined from verbatim pieces), or `get("x")`
/// and `get_operation("", "x")`. That circuit is the one the first of them
/// created, with that one's configuration, and
/// [`circuits`](Self::circuits) lists it once, under the name and
/// operation it was created with.
///
/// Looking up an existing circuit is lock-free and allocates nothing; a
/// new circuit costs the same at the thousandth and the millionth (the map
/// is a concurrent hash map that resizes a little at each insertion, not
/// all at once). Keep the `Arc<Fuse>` you get where you can: cloning it is
/// the only shared write of a lookup.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::{Config, config::Overrides, Registry};
///
/// let registry = Registry::builder()
///     .app("shop")
///     .defaults(Config::default())
///     .overrides("billing", Overrides { failure_threshold: Some(3), ..Overrides::default() })
///     .build()?;
///
/// let charge = registry.get_operation("billing", "charge");
/// assert_eq!(charge.key(), "fuse:shop:billing:charge");
/// assert_eq!(charge.config().failure_threshold(), 3);
/// assert!(Arc::ptr_eq(&charge, &registry.get_operation("billing", "charge")));
/// assert!(!Arc::ptr_eq(&charge, &registry.get_operation("billing", "refund")));
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
/// ```
pub struct Registry<B: Backing = Local> {
    /// The settings of each name, replaced whole by a reload.
    configs: arc_swap::ArcSwap<Configs>,
    app: Option<String>,
    clock: Option<Clock>,
    coarse_clock: bool,
    circuits: Circuits<B>,
    listeners: Arc<Listeners>,
    /// Every circuit by key and the sweep order; taken while creating
    /// (never by a lookup of an existing name and operation).
    held: Mutex<Held<B>>,
    capacity: usize,
    idle_after: Option<Duration>,
    /// Made the first time the registry is full.
    overflow: OnceLock<Arc<Fuse<B>>>,
    overflows: Tally,
    retired: Tally,
    /// What only its backing's circuits are built with.
    options: <B as Sealed>::Options,
    /// Builds one of its circuits.
    make: fn(FuseBuilder<B>) -> Fuse<B>,
}

impl Registry {
    /// A registry whose circuits all use `defaults`.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// assert_eq!(registry.get("billing").key(), "fuse:billing");
    /// ```
    pub fn new(defaults: Config) -> Self {
        RegistryBuilder::default().defaults(defaults).build_valid()
    }

    /// A builder: defaults, per-name overrides, app, clock.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().app("shop").build()?;
    /// assert_eq!(registry.get("billing").key(), "fuse:shop:billing");
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// A permit of the circuit of `name` and `operation` (`""` for none),
    /// created on first use, or the rejection of an open circuit: what
    /// [`get_operation`](Self::get_operation) and
    /// [`Fuse::try_acquire_owned`] do, without cloning the circuit's `Arc`.
    /// For an existing circuit it writes no memory another thread reads or
    /// writes on a closed circuit without failures: the integrations call
    /// it on every request.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// let permit = registry.try_acquire("billing", "charge")?;
    /// assert_eq!(permit.config().failure_threshold(), 8);
    /// permit.success();
    /// registry.get_operation("billing", "charge").force_open();
    /// assert!(registry.try_acquire("billing", "charge").is_err());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, name: &str, operation: &str) -> Result<OwnedPermit, OpenError> {
        if let Some(fuse) = self.circuits.pin().get(&Lookup { name, operation }) {
            fuse.mark();
            return fuse.try_acquire_owned();
        }
        self.create(name, operation, None).try_acquire_owned()
    }
}

impl<B: Backing> Registry<B> {
    /// The circuit named `name` (no operation), created on first use.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// let a = registry.get("billing");
    /// let b = registry.get("billing");
    /// assert!(std::sync::Arc::ptr_eq(&a, &b));
    /// ```
    pub fn get(&self, name: &str) -> Arc<Fuse<B>> {
        self.lookup(name, "", None)
    }

    /// The circuit of `operation` of `name`, created on first use: each
    /// operation is a circuit of its own.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// assert_eq!(registry.get_operation("billing", "refund").key(), "fuse:billing:refund");
    /// ```
    pub fn get_operation(&self, name: &str, operation: &str) -> Arc<Fuse<B>> {
        self.lookup(name, operation, None)
    }

    /// The circuit of `name` and `operation` if the registry holds it.
    #[cfg(feature = "persist")]
    pub(crate) fn existing(&self, name: &str, operation: &str) -> Option<Arc<Fuse<B>>> {
        self.circuits
            .pin()
            .get(&Lookup { name, operation })
            .cloned()
    }

    /// The circuit of `name` (and `operation`, if not empty), created with
    /// `config` if it does not exist yet: an explicit configuration wins
    /// over the named overrides. An existing circuit keeps the
    /// configuration it was created with.
    ///
    /// ```
    /// use fuse_breaker::{Config, Registry};
    /// let registry = Registry::new(Config::default());
    /// let config = Config::builder().failure_threshold(1).build()?;
    /// let fuse = registry.get_with_config("billing", "", config);
    /// assert_eq!(fuse.config().failure_threshold(), 1);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn get_with_config(&self, name: &str, operation: &str, config: Config) -> Arc<Fuse<B>> {
        self.lookup(name, operation, Some(config))
    }

    /// The app every key of the registry names, if any.
    #[cfg(feature = "config-file")]
    pub(crate) fn app(&self) -> Option<&str> {
        self.app.as_deref()
    }

    /// The configuration a new circuit named `name` gets: the defaults with
    /// that name's overrides.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// assert_eq!(registry.config_for("anything").failure_threshold(), 8);
    /// ```
    pub fn config_for(&self, name: &str) -> &'static Config {
        self.configs.load().of(name)
    }

    /// Every circuit the registry holds, sorted by key: each once, under
    /// the name and operation it was created with (the overflow circuit
    /// aside). With the `metrics` or the `opentelemetry` feature, listing
    /// also publishes each circuit's admission count, and a `rate`
    /// circuit's calls, failed and slow calls in its window as gauges
    /// (and a graded circuit's admitted share), as
    /// `Fuse::publish_metrics` does. A circuit the list holds is not idle
    /// (see [`RegistryBuilder::idle_after`]): drop the list once read.
    ///
    /// ```
    /// use fuse_breaker::{Registry, State};
    ///
    /// let registry = Registry::new(Default::default());
    /// registry.get("billing").force_open();
    /// registry.get_operation("search", "query");
    /// let listed = registry.circuits();
    /// assert_eq!(listed.len(), 2);
    /// assert_eq!(listed[0].key(), "fuse:billing");
    /// assert_eq!(listed[0].snapshot().state, State::Open);
    /// assert_eq!(listed[1].operation(), Some("query"));
    ///
    /// // A circuit names itself.
    /// let registry = Registry::new(Default::default());
    /// registry.get_operation("billing", "charge").force_open();
    /// let fuse = &registry.circuits()[0];
    /// assert_eq!(fuse.key(), "fuse:billing:charge");
    /// assert_eq!((fuse.name(), fuse.operation()), ("billing", Some("charge")));
    /// assert_eq!(fuse.snapshot().state, State::Open);
    /// ```
    pub fn circuits(&self) -> Vec<Arc<Fuse<B>>> {
        let circuits = self.circuits.pin();
        let mut listed: Vec<Arc<Fuse<B>>> = each_circuit(&circuits).cloned().collect();
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        for fuse in &listed {
            fuse.backing.publish();
        }
        listed.sort_unstable_by(|a, b| a.key().cmp(b.key()));
        listed
    }

    /// Up to `limit` circuits by key after `after` (the overflow circuit
    /// too once made), and how many circuits there are in all: a range of
    /// the circuits' ordered index, for the admin API's pages.
    #[cfg(feature = "admin")]
    pub(crate) fn page(&self, after: Option<&str>, limit: usize) -> (Vec<Arc<Fuse<B>>>, usize) {
        let mut page = Vec::new();
        let held = self.lock_held();
        held.visit_after(after, |fuse| {
            page.push(fuse.clone());
            page.len() < limit
        });
        let total = held.len();
        drop(held);
        let Some(overflow) = self.overflow.get() else {
            return (page, total);
        };
        if after.is_none_or(|after| overflow.key() > after) {
            let at = page.partition_point(|fuse| fuse.key() < overflow.key());
            page.insert(at, overflow.clone());
            page.truncate(limit);
        }
        (page, total + 1)
    }

    /// The circuit whose key is `key`, the overflow circuit's too.
    #[cfg(feature = "admin")]
    pub(crate) fn by_key(&self, key: &str) -> Option<Arc<Fuse<B>>> {
        self.lock_held().get(key).or_else(|| {
            self.overflow
                .get()
                .filter(|fuse| fuse.key() == key)
                .cloned()
        })
    }

    /// Registers a listener for the transitions of every circuit of this
    /// registry, those that exist and those to come.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use fuse_breaker::{Registry, events::Transition};
    ///
    /// let registry = Registry::new(Default::default());
    /// let keys = Arc::new(Mutex::new(Vec::new()));
    /// let log = keys.clone();
    /// registry.on_transition(move |t: &Transition| log.lock().unwrap().push(t.key.to_owned()));
    /// registry.get("billing").force_open();
    /// registry.get("search").force_open();
    /// assert_eq!(*keys.lock().unwrap(), ["fuse:billing", "fuse:search"]);
    /// ```
    pub fn on_transition(&self, listener: impl Listener) {
        self.listeners
            .add(&(Arc::new(listener) as Arc<dyn Listener>));
    }

    /// How many circuits the registry holds (the overflow circuit aside).
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// registry.get("billing");
    /// registry.get_operation("billing", "refund");
    /// assert_eq!(registry.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.lock_held().len()
    }

    /// Whether the registry holds no circuit.
    ///
    /// ```
    /// assert!(fuse_breaker::Registry::new(Default::default()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most circuits the registry holds
    /// ([`RegistryBuilder::max_circuits`]).
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().max_circuits(2).build()?;
    /// assert_eq!(registry.capacity(), 2);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many lookups of a new name or operation found the registry full,
    /// every circuit it looked at busy, and got the overflow circuit.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().max_circuits(1).build()?;
    /// registry.get("billing").force_open(); // busy: open
    /// let other = registry.get("search");
    /// assert_eq!(other.name(), fuse_breaker::config::OVERFLOW_NAME);
    /// assert_eq!(registry.overflows(), 1);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn overflows(&self) -> u64 {
        self.overflows.get()
    }

    /// How many idle circuits the registry has retired.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (clock, mock) = quanta::Clock::mock();
    /// let registry = fuse_breaker::Registry::builder()
    ///     .clock(clock)
    ///     .idle_after(Duration::from_secs(60))
    ///     .build()?;
    /// drop(registry.get("billing"));
    /// mock.increment(Duration::from_secs(61));
    /// registry.get("search"); // each creation looks for idle circuits
    /// assert_eq!(registry.retired(), 1);
    /// assert_eq!(registry.len(), 1);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn retired(&self) -> u64 {
        self.retired.get()
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, Held<B>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lookup(&self, name: &str, operation: &str, config: Option<Config>) -> Arc<Fuse<B>> {
        if let Some(fuse) = self.circuits.pin().get(&Lookup { name, operation }) {
            fuse.mark();
            return fuse.clone();
        }
        self.create(name, operation, config)
    }

    /// The builder of the circuit of `name` and `operation`.
    fn circuit_builder(
        &self,
        name: &str,
        operation: &str,
        config: Option<Config>,
    ) -> FuseBuilder<B> {
        let config = config.unwrap_or_else(|| self.config_for(name).clone());
        let mut builder = Fuse::builder(name)
            .config(config)
            .coarse_clock(self.coarse_clock)
            .shared_listeners(self.listeners.clone());
        if let Some(app) = &self.app {
            builder = builder.app(app.clone());
        }
        if !operation.is_empty() {
            builder = builder.operation(operation);
        }
        if let Some(clock) = &self.clock {
            builder = builder.clock(clock.clone());
        }
        builder.backed(self.options.clone())
    }

    /// Creates the circuit of `name` and `operation`, or, if another name
    /// and operation already made a circuit with the same key, makes this
    /// pair a second way to reach that one; retires idle circuits on the
    /// way (see `held`). Creations are serialised by one mutex; lookups
    /// never take it.
    #[cold]
    fn create(&self, name: &str, operation: &str, config: Option<Config>) -> Arc<Fuse<B>> {
        self.create_with(name, operation, config, |builder| builder)
    }

    /// [`create`](Self::create), the circuit's builder given to `adjust`
    /// first (a restore, SPEC §12).
    #[cold]
    pub(crate) fn create_with(
        &self,
        name: &str,
        operation: &str,
        config: Option<Config>,
        adjust: impl FnOnce(FuseBuilder<B>) -> FuseBuilder<B>,
    ) -> Arc<Fuse<B>> {
        let mut held = self.lock_held();
        let circuits = self.circuits.pin();
        if let Some(fuse) = circuits.get(&Lookup { name, operation }) {
            return fuse.clone();
        }
        let builder = adjust(self.circuit_builder(name, operation, config));
        let key = builder.names().key().to_owned();
        let pair = Pair {
            name: name.into(),
            operation: operation.into(),
        };
        let (created, retired) = held.create(
            &circuits,
            pair,
            &key,
            self.capacity,
            self.idle_after,
            || (self.make)(builder),
        );
        self.retired.add(retired as u64);
        match created {
            Created::Circuit(fuse) => fuse,
            Created::Full => {
                drop(held);
                self.overflowed(name, operation)
            }
        }
    }

    /// The overflow circuit, for a new name of a full registry.
    #[cold]
    fn overflowed(&self, name: &str, operation: &str) -> Arc<Fuse<B>> {
        let before = self.overflows.add(1);
        #[cfg(feature = "metrics")]
        metrics::counter!("fuse_registry_overflow_total").increment(1);
        #[cfg(feature = "tracing")]
        if before == 0 {
            tracing::warn!(
                target: "fuse_breaker",
                name,
                operation,
                capacity = self.capacity,
                "registry full: calls of new names go through its overflow circuit"
            );
        }
        let _ = (name, operation, before);
        self.overflow
            .get_or_init(|| Arc::new((self.make)(self.circuit_builder(OVERFLOW_NAME, "", None))))
            .clone()
    }
}

impl<B: Backing> fmt::Debug for Registry<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("app", &self.app)
            .field("defaults", self.configs.load().defaults())
            .field("overridden", &self.configs.load().named())
            .field("circuits", &each_circuit(&self.circuits.pin()).count())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}
