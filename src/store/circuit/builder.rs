//! [`SharedFuseBuilder`]: a shared circuit's key, configuration, lease,
//! fallback and mode, and the circuit built from them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, nanos};
use crate::events::Listeners;
use crate::fallback::Fallback;
use crate::fuse::Fuse;
use crate::names::Names;
use crate::store::Store;
use crate::store::cache::Cache;
use crate::store::cache::refresh::Reader;
use crate::store::circuit::health::Health;
use crate::store::circuit::shared::SharedFuse;
use crate::store::circuit::step::Turns;
use crate::store::model::payload;

/// Builds a [`SharedFuse`]: its key's parts, configuration, lease and
/// fallback.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use fuse_breaker::store::{Fallback, MemoryStore, SharedFuse};
///
/// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
///     .app("shop")
///     .operation("charge")
///     .lease(Duration::from_secs(10))
///     .fallback(Fallback::Reject)
///     .build();
/// assert_eq!(fuse.key(), "fuse:shop:billing:charge");
/// ```
#[must_use]
pub struct SharedFuseBuilder {
    name: String,
    app: Option<String>,
    operation: Option<String>,
    config: Config,
    store: Arc<dyn Store>,
    lease: Option<Duration>,
    fallback: Fallback,
    staleness: Option<Duration>,
}

impl fmt::Debug for SharedFuseBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuseBuilder")
            .field("name", &self.name)
            .field("store", &self.store.name())
            .finish_non_exhaustive()
    }
}

impl SharedFuseBuilder {
    /// The app segment of the key.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).app("shop").build();
    /// assert_eq!(fuse.key(), "fuse:shop:billing");
    /// ```
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// The operation segment of the key.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).operation("refund").build();
    /// assert_eq!(fuse.key(), "fuse:billing:refund");
    /// ```
    pub fn operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// The configuration (every process sharing the key should use the
    /// same one).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let config = fuse_breaker::Config::builder().failure_threshold(3).build()?;
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).config(config).build();
    /// assert_eq!(fuse.config().failure_threshold(), 3);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// How long a probe holds its slot without a verdict before it counts
    /// as an ignore verdict (default: the configuration's
    /// [`probe_timeout`](crate::Config::probe_timeout), SPEC §10).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
    ///     .lease(Duration::from_secs(5))
    ///     .build();
    /// assert_eq!(fuse.lease(), Duration::from_secs(5));
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// What decides while the store does not answer (default
    /// [`Fallback::Local`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{Fallback, MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
    ///     .fallback(Fallback::Allow)
    ///     .build();
    /// assert_eq!(fuse.fallback(), Fallback::Allow);
    /// ```
    pub fn fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Cached mode: decide from this process's mirror of the circuit (the
    /// newest reading of the key, kept from every round trip) while it is
    /// younger than `staleness`. Then a closed circuit with no failures
    /// admits and takes successes with no round trip, and an open one
    /// rejects locally until its retry time; half-open admissions, probe
    /// verdicts and failures still go to the store. The difference from
    /// strict mode: a success the mirror showed nothing to clear for is
    /// not sent, so failures another process recorded less than
    /// `staleness` ago may survive it. Transitions are announced through
    /// stores that can ([`Store::changes`]: Redis pub/sub, the memory
    /// store), so another process's opening or closing replaces the
    /// mirror as soon as it arrives; through one that cannot, it is seen
    /// up to `staleness` late. The mirror is dropped when the store does
    /// not answer and when its channel of announcements drops. The common case (a quiet closed
    /// circuit) measures its age on the process's coarse clock, which
    /// ticks every millisecond: the bound holds to that tick (and to how
    /// late an overloaded machine runs the clock's thread).
    ///
    /// Under the `rate` policy a closed success changes the fleet's window:
    /// it is counted in a batch with no round trip and sent with the next
    /// step on the key (a failure or a slow call, which go at once, or the
    /// first admission after `staleness`), and, for a circuit built inside
    /// a tokio runtime with the `redis` or `sql` feature, by a task of the
    /// circuit's own once per `staleness` when no call comes
    /// ([`SharedFuse::unsent`] tells how many wait).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
    ///     .cached(Duration::from_millis(100))
    ///     .build();
    /// assert_eq!(fuse.staleness(), Some(Duration::from_millis(100)));
    /// ```
    pub fn cached(mut self, staleness: Duration) -> Self {
        self.staleness = Some(staleness);
        self
    }

    /// The shared circuit.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.name(), "billing");
    /// ```
    pub fn build(self) -> SharedFuse {
        let prefix = self.config.key_prefix().to_owned();
        let names = Names::new(
            &prefix,
            self.app.as_deref(),
            &self.name,
            self.operation.as_deref(),
        );
        let mut local = Fuse::builder(&self.name).config(self.config.clone());
        if let Some(app) = &self.app {
            local = local.app(app);
        }
        if let Some(operation) = &self.operation {
            local = local.operation(operation);
        }
        let ttl = Duration::from_nanos(self.config.ttl_nanos());
        let listeners = Listeners::default();
        // The sinks of the features, ahead of any listener the user adds.
        crate::sinks::install(&listeners, names.key());
        let lease = self.lease.unwrap_or(self.config.probe_timeout());
        let cache = self.staleness.map(|staleness| {
            let reader = Reader::here(
                self.store.clone(),
                nanos(lease),
                payload::width(&self.config),
                self.config.open_nanos(),
            );
            let cache = Arc::new(Cache::new(names.key(), &self.config, staleness, reader));
            if let Some(changes) = self.store.changes() {
                changes.watch(names.key(), &cache);
            }
            #[cfg(any(feature = "redis", feature = "sql"))]
            crate::store::cache::flush::Flush {
                store: self.store.clone(),
                key: names.key().to_owned(),
                config: self.config.clone(),
                lease,
                ttl,
            }
            .start(&cache);
            cache
        });
        SharedFuse {
            names,
            lease,
            ttl,
            config: self.config,
            store: self.store,
            fallback: self.fallback,
            local: local.build(),
            listeners,
            health: Health::default(),
            turns: Turns::new(),
            cache,
            // A number a store's increment holds exactly (Redis's Lua
            // numbers are doubles), never the anonymous 0.
            reporter: crate::random::next() % crate::store::Increment::MAX + 1,
        }
    }
}

impl SharedFuse {
    /// A builder for the circuit `name` in `store`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.key(), "fuse:billing");
    /// ```
    pub fn builder(name: impl Into<String>, store: Arc<dyn Store>) -> SharedFuseBuilder {
        SharedFuseBuilder {
            name: name.into(),
            app: None,
            operation: None,
            config: Config::default(),
            store,
            lease: None,
            fallback: Fallback::default(),
            staleness: None,
        }
    }
}
