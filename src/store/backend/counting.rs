//! [`Counting`]: a store that counts its round trips.

use std::time::Duration;

use crate::store::backend::{Forward, forward_store};
use crate::store::{
    Changes, Codec, Increment, Incremented, KeyPage, Loaded, Store, StoreError, Swap,
};
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

/// One round trip per method that asks the store (a Redis page of keys
/// may take a few `SCAN`s).
impl<S: Store> Forward for Counting<S> {
    type To = S;
    fn to(&self) -> &S {
        &self.inner
    }
    fn trip(&self) {
        self.trips.add(1);
    }
}

forward_store!([S: Store] Counting<S>);
