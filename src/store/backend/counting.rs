//! [`Counting`]: a store that counts its round trips.

use std::time::Duration;

use crate::store::{Changes, Increment, Incremented, KeyPage, Loaded, Store, StoreError, Swap};
use crate::sync::Tally;

/// A [`Store`] that counts the round trips made through it: to see what a
/// workload costs (the crate's examples and tests measure with it), or to
/// export as a metric.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{Counting, MemoryStore, SharedFuse};
/// # futures::executor::block_on(async {
/// let store = Arc::new(Counting::new(MemoryStore::new()));
/// let fuse = fuse_breaker::Fuse::builder("billing").store(store.clone()).build();
/// fuse.try_acquire().await?.success().await?;
/// assert_eq!(store.round_trips(), 2, "an admission and a verdict");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Counting<S> {
    inner: S,
    trips: Tally,
}

impl<S> Counting<S> {
    /// `inner`, counted.
    ///
    /// ```
    /// let store = fuse_breaker::store::Counting::new(fuse_breaker::store::MemoryStore::new());
    /// assert_eq!(store.round_trips(), 0);
    /// ```
    pub fn new(inner: S) -> Self {
        Counting {
            inner,
            trips: Tally::new(),
        }
    }

    /// The round trips made so far.
    ///
    /// ```
    /// let store = fuse_breaker::store::Counting::new(fuse_breaker::store::MemoryStore::new());
    /// assert_eq!(store.round_trips(), 0);
    /// ```
    pub fn round_trips(&self) -> u64 {
        self.trips.get()
    }

    /// The store counted.
    ///
    /// ```
    /// let store = fuse_breaker::store::Counting::new(fuse_breaker::store::MemoryStore::new());
    /// assert!(store.inner().is_empty());
    /// ```
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<S: Store> Store for Counting<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        self.trips.add(1);
        self.inner.load(key).await
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        self.trips.add(1);
        self.inner.swap(key, expected, new, ttl, announce).await
    }

    async fn swap_prefixed(
        &self,
        key: &str,
        prefix: &[u8],
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<bool, StoreError> {
        self.trips.add(1);
        self.inner
            .swap_prefixed(key, prefix, new, ttl, announce)
            .await
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        self.trips.add(1);
        self.inner.delete(key, announce).await
    }

    async fn increment(&self, key: &str, increment: &Increment) -> Result<Incremented, StoreError> {
        self.trips.add(1);
        self.inner.increment(key, increment).await
    }

    fn changes(&self) -> Option<&Changes> {
        self.inner.changes()
    }

    fn codec(&self) -> crate::store::Codec {
        self.inner.codec()
    }

    /// One round trip per page (a Redis page may take a few `SCAN`s).
    async fn keys(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        self.trips.add(1);
        self.inner.keys(prefix, after, limit).await
    }
}
