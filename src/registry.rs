//! [`Registry`]: named circuits, created on first use and shared.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use foldhash::fast::RandomState;
use quanta::Clock;

use crate::config::{Config, ConfigError};
use crate::error::OpenError;
use crate::events::{Listener, Listeners};
use crate::fuse::Fuse;
use crate::overrides::Overrides;
use crate::permit::OwnedPermit;
use crate::snapshot::Snapshot;

/// (name, operation) -> circuit, in a concurrent hash map built for reads
/// (papaya: lock-free lookups, incremental resizing, so a new circuit
/// costs the same whatever the number of circuits). Hashed with foldhash
/// (randomly seeded, a few times faster than the standard `SipHash` on
/// short names).
type Circuits = papaya::HashMap<Pair, Arc<Fuse>, RandomState>;

/// Where a circuit was looked up from: its name and operation (`""` for
/// none).
#[derive(Debug, PartialEq, Eq)]
struct Pair {
    name: Box<str>,
    operation: Box<str>,
}

/// A [`Pair`] borrowed for a lookup: hashes and compares as the pair does.
#[derive(Clone, Copy)]
struct Lookup<'a> {
    name: &'a str,
    operation: &'a str,
}

impl Hash for Pair {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Lookup {
            name: &self.name,
            operation: &self.operation,
        }
        .hash(state);
    }
}

impl Hash for Lookup<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // `str`'s hash ends each piece with a marker: ("a", "bc") and
        // ("ab", "c") differ.
        self.name.hash(state);
        self.operation.hash(state);
    }
}

impl papaya::Equivalent<Pair> for Lookup<'_> {
    fn equivalent(&self, pair: &Pair) -> bool {
        same(&pair.name, self.name) && same(&pair.operation, self.operation)
    }
}

/// `a == b` for the short texts of names, eight bytes at a time. The
/// standard comparison calls the C library's `memcmp`; measured on an
/// Intel Xeon (KVM), glibc's AVX-512 version spent about 80 ns on each
/// comparison of a short name, three quarters of a lookup (100 ns, now
/// 28 ns).
#[inline]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    let words_equal = x.by_ref().zip(y.by_ref()).all(|(x, y)| {
        u64::from_ne_bytes(x.try_into().unwrap_or_default())
            == u64::from_ne_bytes(y.try_into().unwrap_or_default())
    });
    words_equal && x.remainder().iter().zip(y.remainder()).all(|(x, y)| x == y)
}

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
/// use fuse_breaker::{Config, Overrides, Registry};
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
/// # Ok::<(), fuse_breaker::ConfigError>(())
/// ```
pub struct Registry {
    defaults: Config,
    configs: HashMap<String, Config>,
    app: Option<String>,
    clock: Option<Clock>,
    coarse_clock: bool,
    circuits: Circuits,
    listeners: Arc<Listeners>,
    /// Every circuit by key; held while creating (never taken by a lookup
    /// of an existing name and operation).
    by_key: Mutex<HashMap<Box<str>, Arc<Fuse>, RandomState>>,
}

/// One circuit of a [`Registry`], as [`Registry::circuits`] lists it.
///
/// ```
/// use fuse_breaker::{Registry, State};
///
/// let registry = Registry::new(Default::default());
/// registry.get_operation("billing", "charge").force_open();
/// let info = &registry.circuits()[0];
/// assert_eq!(info.key, "fuse:billing:charge");
/// assert_eq!((info.name.as_str(), info.operation.as_deref()), ("billing", Some("charge")));
/// assert_eq!(info.snapshot.state, State::Open);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CircuitInfo {
    /// The circuit's key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Its operation, if any.
    pub operation: Option<String>,
    /// Its snapshot when listed.
    pub snapshot: Snapshot,
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
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The circuit named `name` (no operation), created on first use.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// let a = registry.get("billing");
    /// let b = registry.get("billing");
    /// assert!(std::sync::Arc::ptr_eq(&a, &b));
    /// ```
    pub fn get(&self, name: &str) -> Arc<Fuse> {
        self.lookup(name, "", None)
    }

    /// The circuit of `operation` of `name`, created on first use: each
    /// operation is a circuit of its own.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// assert_eq!(registry.get_operation("billing", "refund").key(), "fuse:billing:refund");
    /// ```
    pub fn get_operation(&self, name: &str, operation: &str) -> Arc<Fuse> {
        self.lookup(name, operation, None)
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
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn get_with_config(&self, name: &str, operation: &str, config: Config) -> Arc<Fuse> {
        self.lookup(name, operation, Some(config))
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
            return fuse.try_acquire_owned();
        }
        self.create(name, operation, None).try_acquire_owned()
    }

    /// The configuration a new circuit named `name` gets: the defaults with
    /// that name's overrides.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// assert_eq!(registry.config_for("anything").failure_threshold(), 8);
    /// ```
    pub fn config_for(&self, name: &str) -> &Config {
        self.configs.get(name).unwrap_or(&self.defaults)
    }

    /// Every circuit created so far, sorted by key, with its snapshot (with
    /// the `metrics` feature, listing also publishes each circuit's
    /// admission count).
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// registry.get("billing").force_open();
    /// registry.get_operation("search", "query");
    /// let listed = registry.circuits();
    /// assert_eq!(listed.len(), 2);
    /// assert_eq!(listed[0].key, "fuse:billing");
    /// assert_eq!(listed[0].snapshot.state, fuse_breaker::State::Open);
    /// assert_eq!(listed[1].operation.as_deref(), Some("query"));
    /// ```
    pub fn circuits(&self) -> Vec<CircuitInfo> {
        let circuits = self.circuits.pin();
        let mut listed: Vec<CircuitInfo> = each_circuit(&circuits)
            .map(|fuse| {
                #[cfg(feature = "metrics")]
                fuse.publish_metrics();
                CircuitInfo {
                    key: fuse.key().to_owned(),
                    name: fuse.name().to_owned(),
                    operation: fuse.operation().map(str::to_owned),
                    snapshot: fuse.snapshot(),
                }
            })
            .collect();
        listed.sort_by(|a, b| a.key.cmp(&b.key));
        listed
    }

    /// Registers a listener for the transitions of every circuit of this
    /// registry, those that exist and those to come.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use fuse_breaker::{Registry, Transition};
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

    fn lookup(&self, name: &str, operation: &str, config: Option<Config>) -> Arc<Fuse> {
        let found = self
            .circuits
            .pin()
            .get(&Lookup { name, operation })
            .cloned();
        found.unwrap_or_else(|| self.create(name, operation, config))
    }

    /// Creates the circuit of `name` and `operation`, or, if another name
    /// and operation already made a circuit with the same key, makes this
    /// pair a second way to reach that one. Creations are serialised by
    /// the key map's mutex; lookups never take it.
    #[cold]
    fn create(&self, name: &str, operation: &str, config: Option<Config>) -> Arc<Fuse> {
        let mut by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        let circuits = self.circuits.pin();
        if let Some(fuse) = circuits.get(&Lookup { name, operation }) {
            return fuse.clone();
        }
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
        let fuse = if let Some(existing) = by_key.get(builder.key().as_str()) {
            existing.clone()
        } else {
            let fuse = Arc::new(builder.build());
            by_key.insert(fuse.key().into(), fuse.clone());
            fuse
        };
        let pair = Pair {
            name: name.into(),
            operation: operation.into(),
        };
        circuits.insert(pair, fuse.clone());
        fuse
    }
}

/// Each circuit of the map once: under the name and operation it was
/// created with, not under the other pairs that share its key.
fn each_circuit<'g, G: papaya::Guard>(
    circuits: &'g papaya::HashMapRef<'_, Pair, Arc<Fuse>, RandomState, G>,
) -> impl Iterator<Item = &'g Arc<Fuse>> {
    circuits.iter().filter_map(|(pair, fuse)| {
        let own = fuse.name() == &*pair.name && fuse.operation().unwrap_or("") == &*pair.operation;
        own.then_some(fuse)
    })
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("app", &self.app)
            .field("defaults", &self.defaults)
            .field("overridden", &self.configs.keys().collect::<Vec<_>>())
            .field("circuits", &each_circuit(&self.circuits.pin()).count())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Registry`]; [`build`](Self::build) validates every override
/// against the defaults.
///
/// ```
/// use fuse_breaker::{Overrides, Registry};
/// let err = Registry::builder()
///     .overrides("billing", Overrides { failure_threshold: Some(0), ..Overrides::default() })
///     .build()
///     .unwrap_err();
/// assert_eq!(err.setting(), "failure_threshold");
/// ```
#[derive(Debug, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RegistryBuilder {
    defaults: Option<Config>,
    overrides: Vec<(String, Overrides)>,
    app: Option<String>,
    clock: Option<Clock>,
    coarse_clock: bool,
}

impl RegistryBuilder {
    /// The configuration of every circuit without overrides (default:
    /// [`Config::default`]).
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().failure_threshold(4).build()?;
    /// let registry = fuse_breaker::Registry::builder().defaults(config).build()?;
    /// assert_eq!(registry.get("x").config().failure_threshold(), 4);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn defaults(mut self, defaults: Config) -> Self {
        self.defaults = Some(defaults);
        self
    }

    /// Overrides for the circuits named `name` (all their operations).
    /// Given twice for one name, the later wins.
    ///
    /// ```
    /// use fuse_breaker::{Overrides, Registry};
    /// let registry = Registry::builder()
    ///     .overrides("billing", Overrides { half_open_probes: Some(5), ..Overrides::default() })
    ///     .build()?;
    /// assert_eq!(registry.get_operation("billing", "charge").config().half_open_probes(), 5);
    /// assert_eq!(registry.get("search").config().half_open_probes(), 2);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn overrides(mut self, name: impl Into<String>, overrides: Overrides) -> Self {
        self.overrides.push((name.into(), overrides));
        self
    }

    /// The application piece of every key.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().app("punt").build()?;
    /// assert_eq!(registry.get("billing").key(), "fuse:punt:billing");
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// The clock of every circuit (default: the real clock).
    ///
    /// ```
    /// let (clock, _mock) = quanta::Clock::mock();
    /// let registry = fuse_breaker::Registry::builder().clock(clock).build()?;
    /// registry.get("billing").force_open();
    /// assert_eq!(registry.get("billing").snapshot().opened_at, Some(std::time::Duration::ZERO));
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Whether every circuit reads its clock coarsely (see
    /// [`FuseBuilder::coarse_clock`](crate::FuseBuilder::coarse_clock)).
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().coarse_clock(true).build()?;
    /// assert_eq!(registry.get("billing").state(), fuse_breaker::State::Closed);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn coarse_clock(mut self, coarse: bool) -> Self {
        self.coarse_clock = coarse;
        self
    }

    /// The registry, or the first override that makes an invalid
    /// configuration.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().build()?;
    /// assert!(registry.circuits().is_empty());
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<Registry, ConfigError> {
        let defaults = self.defaults.clone().unwrap_or_default();
        let mut configs = HashMap::new();
        for (name, overrides) in &self.overrides {
            configs.insert(name.clone(), overrides.apply(&defaults)?);
        }
        Ok(self.finish(defaults, configs))
    }

    /// `build` for a builder without overrides, which cannot fail.
    fn build_valid(self) -> Registry {
        let defaults = self.defaults.clone().unwrap_or_default();
        self.finish(defaults, HashMap::new())
    }

    fn finish(self, defaults: Config, configs: HashMap<String, Config>) -> Registry {
        Registry {
            defaults,
            configs,
            app: self.app,
            clock: self.clock,
            coarse_clock: self.coarse_clock,
            circuits: Circuits::default(),
            listeners: Arc::default(),
            by_key: Mutex::default(),
        }
    }
}
