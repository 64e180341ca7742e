//! [`SharedRegistry`]: shared circuits by name and operation, in one
//! store; built by [`SharedRegistryBuilder`].

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Store;
use super::circuit::shared::SharedFuse;
use crate::config::Config;
use crate::events::Listener;
use crate::fallback::Fallback;
use crate::registry::{Configs, DEFAULT_MAX_CIRCUITS};
use crate::sync::Tally;

mod builder;

pub use builder::SharedRegistryBuilder;

/// Shared circuits by name (and operation), all in one [`Store`]: what the
/// reqwest middleware's per-host circuits use when a fleet shares them.
/// Built as a [`Registry`](crate::Registry) is, with the same settings
/// where both have them: defaults, per-name [`Overrides`](crate::Overrides), app and
/// capacity (`Registry::builder().store(store)`, [`RegistryBuilder::store`](crate::RegistryBuilder::store)).
///
/// A circuit's state is in the store, so the registry only keeps the
/// handles this process uses: at most `max_circuits` of them (default
/// [`DEFAULT_MAX_CIRCUITS`]); past that, making a new one retires the
/// oldest handle nobody else holds. Retiring one loses nothing shared (the
/// next lookup makes a new handle on the same key); only its local
/// fallback circuit starts over. Lookups take a lock: each call of a
/// shared circuit makes a round trip to the store anyway.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::Overrides;
/// use fuse_breaker::store::{MemoryStore, SharedRegistry};
///
/// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new()))
///     .app("shop")
///     .overrides("billing", Overrides { failure_threshold: Some(3), ..Overrides::default() })
///     .build()?;
/// let billing = registry.get("billing");
/// assert!(Arc::ptr_eq(&billing, &registry.get("billing")));
/// assert_eq!(billing.config().failure_threshold(), 3);
/// assert_eq!(registry.get_operation("billing", "refund").key(), "fuse:shop:billing:refund");
/// assert_eq!(registry.len(), 2);
/// # Ok::<(), fuse_breaker::ConfigError>(())
/// ```
pub struct SharedRegistry {
    store: Arc<dyn Store>,
    configs: Configs,
    app: Option<String>,
    /// The clock of the circuits' local fallbacks.
    clock: Option<quanta::Clock>,
    coarse_clock: bool,
    lease: Option<Duration>,
    fallback: Fallback,
    staleness: Option<Duration>,
    capacity: usize,
    handles: Mutex<Handles>,
    /// Listeners of every circuit's transitions, given to each one made.
    listeners: Mutex<Vec<Arc<dyn Listener>>>,
    retired: Tally,
}

/// The handles the registry keeps.
#[derive(Default)]
struct Handles {
    by_name: HashMap<(String, String), Arc<SharedFuse>>,
    /// Names in the order their handles were made.
    order: VecDeque<(String, String)>,
}

impl SharedRegistry {
    /// A registry of circuits in `store` whose circuits all use `defaults`,
    /// with the local fallback and the default capacity.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = fuse_breaker::store::SharedRegistry::new(
    ///     Arc::new(fuse_breaker::store::MemoryStore::new()),
    ///     fuse_breaker::Config::default(),
    /// );
    /// assert!(registry.is_empty());
    /// ```
    pub fn new(store: Arc<dyn Store>, defaults: Config) -> Self {
        SharedRegistry {
            store,
            configs: Configs::defaults_only(defaults),
            app: None,
            clock: None,
            coarse_clock: false,
            lease: None,
            fallback: Fallback::default(),
            staleness: None,
            capacity: DEFAULT_MAX_CIRCUITS,
            handles: Mutex::default(),
            listeners: Mutex::default(),
            retired: Tally::default(),
        }
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
        let mut handles = self.lock_handles();
        let key = (name.to_owned(), operation.to_owned());
        if let Some(fuse) = handles.by_name.get(&key) {
            return fuse.clone();
        }
        if handles.by_name.len() >= self.capacity && handles.make_room() {
            self.retired.add(1);
        }
        let fuse = Arc::new(self.build(name, operation));
        handles.by_name.insert(key.clone(), fuse.clone());
        handles.order.push_back(key);
        fuse
    }

    /// The configuration a new circuit named `name` gets: the defaults with
    /// that name's overrides.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::Overrides;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new()))
    ///     .overrides("billing", Overrides { failure_threshold: Some(2), ..Overrides::default() })
    ///     .build()?;
    /// assert_eq!(registry.config_for("billing").failure_threshold(), 2);
    /// assert_eq!(registry.config_for("anything").failure_threshold(), 8);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn config_for(&self, name: &str) -> &Config {
        self.configs.of(name)
    }

    /// The circuits whose handles the registry keeps, sorted by key (as
    /// [`Registry::circuits`](crate::Registry::circuits) lists its own).
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

    /// The circuit whose key is `key`, if the registry keeps its handle.
    #[cfg(feature = "admin")]
    pub(crate) fn by_key(&self, key: &str) -> Option<Arc<SharedFuse>> {
        self.lock_handles()
            .by_name
            .values()
            .find(|fuse| fuse.key() == key)
            .cloned()
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
        let handles = self.lock_handles();
        for fuse in handles.by_name.values() {
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

    /// The most handles the registry keeps
    /// ([`RegistryBuilder::max_circuits`](crate::RegistryBuilder::max_circuits)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new())).max_circuits(2).build()?;
    /// assert_eq!(registry.capacity(), 2);
    /// assert_eq!(
    ///     SharedRegistry::new(Arc::new(MemoryStore::new()), Default::default()).capacity(),
    ///     fuse_breaker::DEFAULT_MAX_CIRCUITS,
    /// );
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many handles the registry has retired to make room for new ones.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new())).max_circuits(1).build()?;
    /// registry.get("billing");
    /// assert_eq!(registry.retired(), 0);
    /// registry.get("search");
    /// assert_eq!(registry.retired(), 1);
    /// assert_eq!(registry.len(), 1);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn retired(&self) -> u64 {
        self.retired.get()
    }

    fn lock_handles(&self) -> std::sync::MutexGuard<'_, Handles> {
        self.handles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Builds a circuit (under the `handles` lock, which `on_transition` takes
    /// before the listeners').
    fn build(&self, name: &str, operation: &str) -> SharedFuse {
        let mut builder = crate::Fuse::builder(name)
            .store(self.store.clone())
            .config(self.config_for(name).clone())
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
        if let Some(clock) = &self.clock {
            builder = builder.clock(clock.clone());
        }
        builder = builder.coarse_clock(self.coarse_clock);
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
    /// Whether it dropped one.
    fn make_room(&mut self) -> bool {
        let free = self.order.iter().position(|key| {
            self.by_name
                .get(key)
                .is_some_and(|fuse| Arc::strong_count(fuse) == 1)
        });
        let at = free.unwrap_or(0);
        let Some(key) = self.order.remove(at) else {
            return false;
        };
        self.by_name.remove(&key).is_some()
    }
}

impl fmt::Debug for SharedRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRegistry")
            .field("store", &self.store.name())
            .field("app", &self.app)
            .field("defaults", self.configs.defaults())
            .field("overridden", &self.configs.named())
            .field("circuits", &self.len())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[test]
    fn a_full_registry_drops_the_oldest_handle_nobody_holds() {
        let registry = crate::Registry::builder()
            .store(Arc::new(MemoryStore::new()))
            .max_circuits(2)
            .build()
            .unwrap();
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
        assert_eq!(registry.retired(), 3, "b, a's first handle, then d");
    }
}
