//! [`SharedRegistry`]: a registry of shared circuits.
//! [`RegistryBuilder::store`] chooses a store as its circuits' backing,
//! and the store's options (lease, fallback, cached mode) are set on the
//! builder it returns.

use std::sync::Arc;
use std::time::Duration;

use crate::backing::Local;
use crate::builder::FuseBuilder;
use crate::config::ConfigError;
use crate::fallback::Fallback;
use crate::registry::{Registry, RegistryBuilder};
use crate::store::Store;
use crate::store::circuit::shared::{Shared, SharedOptions};

/// Shared circuits by name (and operation), all in one [`Store`]: a
/// [`Registry`] whose circuits are built with a store (what the reqwest
/// middleware's per-host circuits use when a fleet shares them), made by
/// `Registry::builder().store(store)` ([`RegistryBuilder::store`]).
///
/// A circuit's state is in the store, so the registry keeps the handles
/// this process uses, as a registry keeps its circuits: at most
/// `max_circuits` of them; a new name beyond it first retires a handle
/// that has gone unused for `idle_after`, that nobody else holds and whose
/// local fallback is closed with an empty window, and if none is, goes
/// through the registry's overflow circuit (`OVERFLOW_NAME`, a key of its
/// own in the store). Retiring a handle loses nothing shared: the next
/// lookup makes a new one on the same key.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::{config::Overrides, Registry};
/// use fuse_breaker::store::MemoryStore;
///
/// let registry = Registry::builder()
///     .app("shop")
///     .overrides("billing", Overrides { failure_threshold: Some(3), ..Overrides::default() })
///     .store(Arc::new(MemoryStore::new()))
///     .build()?;
/// let billing = registry.get("billing");
/// assert!(Arc::ptr_eq(&billing, &registry.get("billing")));
/// assert_eq!(billing.config().failure_threshold(), 3);
/// assert_eq!(registry.get_operation("billing", "refund").key(), "fuse:shop:billing:refund");
/// assert_eq!(registry.len(), 2);
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
/// ```
pub type SharedRegistry = Registry<Shared>;

/// The builder of a [`SharedRegistry`]: [`RegistryBuilder`] with a store
/// chosen ([`RegistryBuilder::store`]); [`build`](RegistryBuilder::build)
/// validates every override against the defaults.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::{config::Overrides, Registry};
/// use fuse_breaker::store::MemoryStore;
/// let err = Registry::builder()
///     .store(Arc::new(MemoryStore::new()))
///     .overrides("billing", Overrides { failure_threshold: Some(0), ..Overrides::default() })
///     .build()
///     .unwrap_err();
/// assert_eq!(err.setting(), "failure_threshold");
/// ```
pub type SharedRegistryBuilder = RegistryBuilder<Shared>;

impl RegistryBuilder<Local> {
    /// Shares the registry's circuits through `store` (feature `store`):
    /// each is a circuit built with the store, under its key there. What
    /// this builder was given (defaults, overrides, app, capacity, clock)
    /// is kept; a shared registry retires handles nobody holds rather than
    /// idle circuits, so `idle_after` has no effect on it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::Registry;
    /// use fuse_breaker::store::MemoryStore;
    /// let registry = Registry::builder().app("shop").store(Arc::new(MemoryStore::new())).build()?;
    /// assert_eq!(registry.get("billing").key(), "fuse:shop:billing");
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn store(self, store: Arc<dyn Store>) -> SharedRegistryBuilder {
        self.backed(SharedOptions {
            store,
            lease: None,
            fallback: Fallback::default(),
            staleness: None,
        })
    }
}

impl RegistryBuilder<Shared> {
    /// Every circuit's probe lease (default: the open duration).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new()))
    ///     .lease(Duration::from_secs(5))
    ///     .build()?;
    /// assert_eq!(registry.get("billing").lease(), Duration::from_secs(5));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = Some(lease);
        self
    }

    /// Every circuit's fallback while the store does not answer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::config::Fallback;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new()))
    ///     .fallback(Fallback::Reject)
    ///     .build()?;
    /// assert_eq!(registry.get("billing").fallback(), Fallback::Reject);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn fallback(mut self, fallback: Fallback) -> Self {
        self.options.fallback = fallback;
        self
    }

    /// Every circuit in cached mode, deciding from its mirror while it is
    /// younger than `staleness` (see [`SharedFuseBuilder::cached`](crate::store::SharedFuseBuilder::cached)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new()))
    ///     .cached(Duration::from_millis(50))
    ///     .build()?;
    /// assert_eq!(registry.get("billing").staleness(), Some(Duration::from_millis(50)));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn cached(mut self, staleness: Duration) -> Self {
        self.options.staleness = Some(staleness);
        self
    }

    /// The registry, or the first override (or capacity) that is invalid.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let registry = fuse_breaker::Registry::builder().store(Arc::new(MemoryStore::new())).build()?;
    /// assert!(registry.circuits().is_empty());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<SharedRegistry, ConfigError> {
        let (configs, _) = self.checked()?;
        Ok(self.finish(configs, <FuseBuilder<Shared>>::build))
    }
}

#[cfg(test)]
mod tests;
