//! A server's store seen at a time the test sets: every process of a
//! fleet test sets the same time before each step, so that they decide at
//! the same store time and their answers can be compared to the
//! nanosecond. The keys are the server's own (every process names the
//! same key); the server's clock still drives their expiry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuse_breaker::store::{Loaded, Store, StoreError, Swap};

/// `inner`, with the store's time set by [`set`](Self::set).
#[derive(Debug)]
pub(crate) struct Frozen {
    inner: Arc<dyn Store>,
    /// Nanoseconds since the Unix epoch.
    now: AtomicU64,
}

impl Frozen {
    pub(crate) fn new(inner: Arc<dyn Store>) -> Self {
        Frozen {
            inner,
            now: AtomicU64::new(0),
        }
    }

    /// The store's time from now on: `at` since the Unix epoch.
    pub(crate) fn set(&self, at: Duration) {
        let nanos = u64::try_from(at.as_nanos()).expect("a time in 64 bits");
        self.now.store(nanos, Ordering::SeqCst);
    }

    fn at(&self, mut loaded: Loaded) -> Loaded {
        loaded.now = Duration::from_nanos(self.now.load(Ordering::SeqCst));
        loaded
    }
}

#[async_trait::async_trait]
impl Store for Frozen {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        Ok(self.at(self.inner.load(key).await?))
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        match self.inner.swap(key, expected, new, ttl, announce).await? {
            Swap::Written => Ok(Swap::Written),
            Swap::Changed(loaded) => Ok(Swap::Changed(self.at(loaded))),
        }
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        self.inner.delete(key, announce).await
    }
}
