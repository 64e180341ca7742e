//! A server's store with the test's clock and keys (Redis scenarios).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuse_breaker::store::{Loaded, Store, StoreError, Swap};

use super::Stepped;

/// A server's store seen through a clock that stands still at the first
/// time the server reported and moves only when the test moves it, and
/// keys of the test's own (a prefix unique to this store), counting the
/// writes. (The server's own clock still drives its key expiry.)
#[derive(Debug)]
pub(crate) struct Stepping<S> {
    inner: S,
    prefix: String,
    /// The server's first time, and the test's steps since.
    clock: Mutex<(Option<Duration>, Duration)>,
    writes: AtomicU64,
}

impl<S: Store> Stepping<S> {
    pub(crate) fn new(inner: S) -> Self {
        static STORES: AtomicU64 = AtomicU64::new(0);
        let unique = format!(
            "test{}-{}-{}",
            std::process::id(),
            STORES.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        );
        Stepping {
            inner,
            prefix: unique,
            clock: Mutex::new((None, Duration::ZERO)),
            writes: AtomicU64::new(0),
        }
    }

    fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.prefix)
    }

    fn shifted(&self, mut loaded: Loaded) -> Loaded {
        let mut clock = self.clock.lock().unwrap();
        let base = *clock.0.get_or_insert(loaded.now);
        loaded.now = base + clock.1;
        loaded
    }
}

#[async_trait::async_trait]
impl<S: Store> Store for Stepping<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        let loaded = self.inner.load(&self.key(key)).await?;
        Ok(self.shifted(loaded))
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        // Announced under the test's key, on the server's clock: a cached
        // circuit here does not watch it (this store has no `changes`), so
        // the scenarios see other processes' transitions by staleness only.
        match self
            .inner
            .swap(&self.key(key), expected, new, ttl, announce)
            .await?
        {
            Swap::Written => {
                self.writes.fetch_add(1, Ordering::Relaxed);
                Ok(Swap::Written)
            }
            Swap::Changed(loaded) => Ok(Swap::Changed(self.shifted(loaded))),
        }
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        self.inner.delete(&self.key(key), announce).await?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl<S: Store> Stepped for Stepping<S> {
    fn advance(&self, by: Duration) {
        self.clock.lock().unwrap().1 += by;
    }

    fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}
