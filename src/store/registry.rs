//! [`SharedRegistry`]: shared circuits by name and operation, in one store.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Store;
use super::shared::SharedFuse;
use crate::config::Config;
use crate::events::Listener;
use crate::fallback::Fallback;
use crate::registry::DEFAULT_MAX_CIRCUITS;

/// Shared circuits by name (and operation), all in one [`Store`] with one
/// configuration: what the reqwest middleware's per-host circuits use when
/// a fleet shares them.
///
/// A circuit's state is in the store, so the registry only keeps the
/// handles this process uses: at most `max_circuits` of them (default
/// [`DEFAULT_MAX_CIRCUITS`]); past that, making a new one drops the oldest
/// handle nobody else holds. Dropping one loses nothing shared (the next
/// lookup makes a new handle on the same key); only its local fallback
/// circuit starts over. Lookups take a lock: each call of a shared circuit
/// makes a round trip to the store anyway.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedRegistry};
///
/// let registry = SharedRegistry::new(Arc::new(MemoryStore::new()), Default::default());
/// let billing = registry.get("billing");
/// assert!(Arc::ptr_eq(&billing, &registry.get("billing")));
/// assert_eq!(registry.get_operation("billing", "refund").key(), "fuse:billing:refund");
/// assert_eq!(registry.len(), 2);
/// ```
pub struct SharedRegistry {
    store: Arc<dyn Store>,
    config: Config,
    /// The configurations of names that do not use `config`.
    breakers: HashMap<String, Config>,
    app: Option<String>,
    lease: Option<Duration>,
    fallback: Fallback,
    staleness: Option<Duration>,
    max_circuits: usize,
    handles: Mutex<Handles>,
    /// Listeners of every circuit's transitions, given to each one made.
    listeners: Mutex<Vec<Arc<dyn Listener>>>,
}

#[derive(Default)]
struct Handles {
    by_name: HashMap<(String, String), Arc<SharedFuse>>,
    /// Names in the order their handles were made.
    order: VecDeque<(String, String)>,
}

impl SharedRegistry {
    /// A registry of circuits in `store` with `config`, the local fallback
    /// and the default capacity.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()),
    ///     fuse_breaker::Config::default(),
    /// );
    /// assert!(registry.is_empty());
    /// ```
    pub fn new(store: Arc<dyn Store>, config: Config) -> Self {
        SharedRegistry {
            store,
            config,
            breakers: HashMap::new(),
            app: None,
            lease: None,
            fallback: Fallback::default(),
            staleness: None,
            max_circuits: DEFAULT_MAX_CIRCUITS,
            handles: Mutex::default(),
            listeners: Mutex::default(),
        }
    }

    /// The configuration of the circuits named `name` (every operation of
    /// it), in place of the registry's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::Config;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::new(Arc::new(MemoryStore::new()), Config::default())
    ///     .breaker("billing", Config::builder().failure_threshold(2).build()?);
    /// assert_eq!(registry.get("billing").config().failure_threshold(), 2);
    /// assert_eq!(registry.get("search").config().failure_threshold(), 8);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    #[must_use]
    pub fn breaker(mut self, name: impl Into<String>, config: Config) -> Self {
        self.breakers.insert(name.into(), config);
        self
    }

    /// The app segment of every key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()), Default::default()).app("shop");
    /// assert_eq!(registry.get("billing").key(), "fuse:shop:billing");
    /// ```
    #[must_use]
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// Every circuit's probe lease (default: the open duration).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()), Default::default())
    ///     .lease(Duration::from_secs(5));
    /// assert_eq!(registry.get("billing").lease(), Duration::from_secs(5));
    /// ```
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Every circuit's fallback while the store does not answer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{Fallback, MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::new(Arc::new(MemoryStore::new()), Default::default())
    ///     .fallback(Fallback::Reject);
    /// assert_eq!(registry.get("billing").fallback(), Fallback::Reject);
    /// ```
    #[must_use]
    pub fn fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Every circuit in cached mode, deciding from its mirror while it is
    /// younger than `staleness` (see [`SharedFuseBuilder::cached`](super::SharedFuseBuilder::cached)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::new(Arc::new(MemoryStore::new()), Default::default())
    ///     .cached(Duration::from_millis(50));
    /// assert_eq!(registry.get("billing").staleness(), Some(Duration::from_millis(50)));
    /// ```
    #[must_use]
    pub fn cached(mut self, staleness: Duration) -> Self {
        self.staleness = Some(staleness);
        self
    }

    /// How many handles the registry keeps at most (at least 1).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = SharedRegistry::new(Arc::new(MemoryStore::new()), Default::default())
    ///     .max_circuits(2);
    /// for host in ["a", "b", "c"] {
    ///     registry.get(host);
    /// }
    /// assert_eq!(registry.len(), 2);
    /// ```
    #[must_use]
    pub fn max_circuits(mut self, max_circuits: usize) -> Self {
        self.max_circuits = max_circuits.max(1);
        self
    }

    /// The circuit `name`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()), Default::default());
    /// assert_eq!(registry.get("billing").key(), "fuse:billing");
    /// ```
    pub fn get(&self, name: &str) -> Arc<SharedFuse> {
        self.get_operation(name, "")
    }

    /// The circuit of `operation` of `name` (`""`: the name's own).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()), Default::default());
    /// assert_eq!(registry.get_operation("billing", "charge").key(), "fuse:billing:charge");
    /// ```
    pub fn get_operation(&self, name: &str, operation: &str) -> Arc<SharedFuse> {
        let mut held = self.lock_handles();
        let key = (name.to_owned(), operation.to_owned());
        if let Some(fuse) = held.by_name.get(&key) {
            return fuse.clone();
        }
        if held.by_name.len() >= self.max_circuits {
            held.make_room();
        }
        let fuse = Arc::new(self.build(name, operation));
        held.by_name.insert(key.clone(), fuse.clone());
        held.order.push_back(key);
        fuse
    }

    /// The circuits whose handles the registry keeps, sorted by key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()), Default::default());
    /// registry.get("search");
    /// registry.get_operation("billing", "charge");
    /// let keys: Vec<_> = registry.circuits().iter().map(|fuse| fuse.key().to_owned()).collect();
    /// assert_eq!(keys, ["fuse:billing:charge", "fuse:search"]);
    /// ```
    pub fn circuits(&self) -> Vec<Arc<SharedFuse>> {
        let mut circuits: Vec<_> = self.lock_handles().by_name.values().cloned().collect();
        circuits.sort_unstable_by(|a, b| a.key().cmp(b.key()));
        circuits
    }

    /// Registers a listener for the transitions this process makes in every
    /// circuit of this registry, those it keeps and those to come.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    ///
    /// # futures::executor::block_on(async {
    /// let registry = SharedRegistry::new(Arc::new(MemoryStore::new()), Default::default());
    /// let billing = registry.get("billing");
    /// let seen = Arc::new(AtomicUsize::new(0));
    /// let count = seen.clone();
    /// registry.on_transition(move |_: &fuse_breaker::Transition| { count.fetch_add(1, Ordering::Relaxed); });
    /// billing.force_open().await?;
    /// registry.get("search").force_open().await?;
    /// assert_eq!(seen.load(Ordering::Relaxed), 2);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn on_transition(&self, listener: impl Listener) {
        let listener: Arc<dyn Listener> = Arc::new(listener);
        let held = self.lock_handles();
        for fuse in held.by_name.values() {
            fuse.on_transition(listener.clone());
        }
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(listener);
    }

    /// How many handles the registry keeps.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()), Default::default());
    /// registry.get("billing");
    /// assert_eq!(registry.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.lock_handles().by_name.len()
    }

    /// Whether the registry keeps no handle.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()), Default::default());
    /// assert!(registry.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock_handles(&self) -> std::sync::MutexGuard<'_, Handles> {
        self.handles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Builds a circuit (under the `handles` lock, which `on_transition` takes
    /// before the listeners').
    fn build(&self, name: &str, operation: &str) -> SharedFuse {
        let config = self.breakers.get(name).unwrap_or(&self.config);
        let mut builder = SharedFuse::builder(name, self.store.clone())
            .config(config.clone())
            .fallback(self.fallback);
        if let Some(app) = &self.app {
            builder = builder.app(app);
        }
        if !operation.is_empty() {
            builder = builder.operation(operation);
        }
        if let Some(lease) = self.lease {
            builder = builder.lease(lease);
        }
        if let Some(staleness) = self.staleness {
            builder = builder.cached(staleness);
        }
        let fuse = builder.build();
        for listener in self
            .listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            fuse.on_transition(listener.clone());
        }
        fuse
    }
}

impl Handles {
    /// Drops the oldest handle nobody else holds; when every one is held,
    /// the oldest all the same (its holders keep a working circuit).
    fn make_room(&mut self) {
        let free = self.order.iter().position(|key| {
            self.by_name
                .get(key)
                .is_some_and(|fuse| Arc::strong_count(fuse) == 1)
        });
        let at = free.unwrap_or(0);
        if let Some(key) = self.order.remove(at) {
            self.by_name.remove(&key);
        }
    }
}

impl fmt::Debug for SharedRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRegistry")
            .field("store", &self.store.name())
            .field("circuits", &self.len())
            .field("max_circuits", &self.max_circuits)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn a_full_registry_drops_the_oldest_handle_nobody_holds() {
        let registry =
            SharedRegistry::new(Arc::new(MemoryStore::new()), Config::default()).max_circuits(2);
        let held = registry.get("a");
        let b = registry.get("b");
        drop(b);
        registry.get("c");
        assert_eq!(registry.len(), 2);
        assert!(Arc::ptr_eq(&held, &registry.get("a")), "the held one stays");
        // Every handle held: the oldest goes all the same.
        let c = registry.get("c");
        registry.get("d");
        assert_eq!(registry.len(), 2);
        assert!(
            !Arc::ptr_eq(&held, &registry.get("a")),
            "a new handle on a's key"
        );
        drop(c);
    }
}
