//! [`SharedRegistryBuilder`].

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::SharedRegistry;
use crate::config::{Config, ConfigError};
use crate::fallback::Fallback;
use crate::overrides::Overrides;
use crate::registry::{Configs, DEFAULT_MAX_CIRCUITS, check_max_circuits};
use crate::store::Store;
use crate::sync::Tally;

/// Builds a [`SharedRegistry`]; [`build`](Self::build) validates every
/// override against the defaults, as [`RegistryBuilder`](crate::RegistryBuilder)
/// does.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::Overrides;
/// use fuse_breaker::store::{MemoryStore, SharedRegistry};
/// let err = SharedRegistry::builder(Arc::new(MemoryStore::new()))
///     .overrides("billing", Overrides { failure_threshold: Some(0), ..Overrides::default() })
///     .build()
///     .unwrap_err();
/// assert_eq!(err.setting(), "failure_threshold");
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct SharedRegistryBuilder {
    store: Arc<dyn Store>,
    defaults: Option<Config>,
    overrides: Vec<(String, Overrides)>,
    app: Option<String>,
    lease: Option<Duration>,
    fallback: Fallback,
    staleness: Option<Duration>,
    max_circuits: Option<usize>,
}

impl SharedRegistryBuilder {
    /// A builder of circuits in `store`, with every default.
    pub(super) fn new(store: Arc<dyn Store>) -> Self {
        SharedRegistryBuilder {
            store,
            defaults: None,
            overrides: Vec::new(),
            app: None,
            lease: None,
            fallback: Fallback::default(),
            staleness: None,
            max_circuits: None,
        }
    }

    /// The configuration of every circuit without overrides (default:
    /// [`Config::default`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let config = fuse_breaker::Config::builder().failure_threshold(4).build()?;
    /// let registry = SharedRegistry::builder(Arc::new(MemoryStore::new()))
    ///     .defaults(config)
    ///     .build()?;
    /// assert_eq!(registry.get("x").config().failure_threshold(), 4);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn defaults(mut self, defaults: Config) -> Self {
        self.defaults = Some(defaults);
        self
    }

    /// Overrides of the defaults for the circuits named `name` (all their
    /// operations); [`Overrides::from`] a [`Config`] gives a whole
    /// configuration. Given twice for one name, the later wins.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::{Config, Overrides};
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let strict = Config::builder().failure_threshold(2).build()?;
    /// let registry = SharedRegistry::builder(Arc::new(MemoryStore::new()))
    ///     .overrides("billing", Overrides::from(strict))
    ///     .overrides("search", Overrides { half_open_probes: Some(5), ..Overrides::default() })
    ///     .build()?;
    /// assert_eq!(registry.get("billing").config().failure_threshold(), 2);
    /// assert_eq!(registry.get("search").config().half_open_probes(), 5);
    /// assert_eq!(registry.get("other").config().failure_threshold(), 8);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn overrides(mut self, name: impl Into<String>, overrides: Overrides) -> Self {
        self.overrides.push((name.into(), overrides));
        self
    }

    /// The application piece of every key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::builder(Arc::new(MemoryStore::new())).app("shop").build()?;
    /// assert_eq!(registry.get("billing").key(), "fuse:shop:billing");
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// How many handles the registry keeps at most (default
    /// [`DEFAULT_MAX_CIRCUITS`], at least 1): a new one beyond it retires
    /// the oldest handle nobody else holds (or, all being held, the oldest),
    /// and [`SharedRegistry::retired`] counts it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let store = Arc::new(MemoryStore::new());
    /// let registry = SharedRegistry::builder(store.clone()).max_circuits(2).build()?;
    /// for host in ["a", "b", "c"] {
    ///     registry.get(host);
    /// }
    /// assert_eq!(registry.len(), 2);
    /// assert!(SharedRegistry::builder(store).max_circuits(0).build().is_err());
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn max_circuits(mut self, max: usize) -> Self {
        self.max_circuits = Some(max);
        self
    }

    /// Every circuit's probe lease (default: the open duration).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::builder(Arc::new(MemoryStore::new()))
    ///     .lease(Duration::from_secs(5))
    ///     .build()?;
    /// assert_eq!(registry.get("billing").lease(), Duration::from_secs(5));
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Every circuit's fallback while the store does not answer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{Fallback, MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::builder(Arc::new(MemoryStore::new()))
    ///     .fallback(Fallback::Reject)
    ///     .build()?;
    /// assert_eq!(registry.get("billing").fallback(), Fallback::Reject);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Every circuit in cached mode, deciding from its mirror while it is
    /// younger than `staleness` (see [`SharedFuseBuilder::cached`](crate::store::SharedFuseBuilder::cached)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::builder(Arc::new(MemoryStore::new()))
    ///     .cached(Duration::from_millis(50))
    ///     .build()?;
    /// assert_eq!(registry.get("billing").staleness(), Some(Duration::from_millis(50)));
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn cached(mut self, staleness: Duration) -> Self {
        self.staleness = Some(staleness);
        self
    }

    /// The registry, or the first override (or capacity) that is invalid.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::builder(Arc::new(MemoryStore::new())).build()?;
    /// assert!(registry.circuits().is_empty());
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<SharedRegistry, ConfigError> {
        if let Some(max) = self.max_circuits {
            check_max_circuits(max)?;
        }
        let configs = Configs::new(self.defaults.unwrap_or_default(), &self.overrides)?;
        Ok(SharedRegistry {
            store: self.store,
            configs,
            app: self.app,
            lease: self.lease,
            fallback: self.fallback,
            staleness: self.staleness,
            capacity: self.max_circuits.unwrap_or(DEFAULT_MAX_CIRCUITS),
            handles: Mutex::default(),
            listeners: Mutex::default(),
            retired: Tally::default(),
        })
    }
}

impl fmt::Debug for SharedRegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRegistryBuilder")
            .field("store", &self.store.name())
            .field("defaults", &self.defaults)
            .field("overrides", &self.overrides)
            .field("app", &self.app)
            .field("max_circuits", &self.max_circuits)
            .finish_non_exhaustive()
    }
}
