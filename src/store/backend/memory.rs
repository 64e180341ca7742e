//! [`MemoryStore`]: a store in this process's memory, for tests and for
//! trying shared circuits without a server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::store::{
    Changes, Codec, Increment, Incremented, KeyPage, Loaded, Store, StoreError, Swap,
};

/// A [`Store`] in memory: one process's circuits, shared by its
/// [`SharedFuse`](crate::store::SharedFuse)s exactly as a server would share them
/// (compare-and-set, time-to-live, its own clock, transitions announced
/// to every cached circuit on the key). Its clock is the
/// system's, moved on by [`advance`](Self::advance); a test can also make it
/// [unreachable](Self::set_unreachable) or [put](Self::put) any payload
/// under a key.
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::store::{MemoryStore, Store};
///
/// # futures::executor::block_on(async {
/// let store = MemoryStore::new();
/// store.put("fuse:billing", b"{}", Duration::from_secs(1));
/// store.advance(Duration::from_secs(1));
/// assert_eq!(store.load("fuse:billing").await?.payload, None, "expired");
/// # Ok::<(), fuse_breaker::store::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// Transitions are announced to this process's cached circuits.
    changes: Changes,
    /// How its payloads are spelled (JSON by default).
    codec: Codec,
}

#[derive(Debug, Default)]
struct Inner {
    /// Payload and expiry (on the store's clock) per key.
    keys: HashMap<String, (Vec<u8>, Duration)>,
    /// Added to the clock.
    offset: Duration,
    /// The clock's reading when it stands still (`None`: the system's).
    frozen: Option<Duration>,
    unreachable: bool,
    /// Compare-and-sets that wrote.
    writes: u64,
}

impl Inner {
    fn now(&self) -> Duration {
        self.frozen.unwrap_or_else(system_now) + self.offset
    }

    /// The payload under `key`, dropping it if it expired.
    fn get(&mut self, key: &str, now: Duration) -> Option<Vec<u8>> {
        match self.keys.get(key) {
            Some((_, expires)) if *expires <= now => {
                self.keys.remove(key);
                None
            }
            Some((payload, _)) => Some(payload.clone()),
            None => None,
        }
    }
}

fn system_now() -> Duration {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
}

impl MemoryStore {
    /// An empty store on the system clock.
    ///
    /// ```
    /// let store = fuse_breaker::store::MemoryStore::new();
    /// assert!(store.is_empty());
    /// ```
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// An empty store whose clock stands still at the system time it was
    /// made, moved only by [`advance`](Self::advance): for tests that step
    /// time exactly.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, Store};
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::frozen();
    /// let before = store.load("fuse:a").await?.now;
    /// store.advance(Duration::from_secs(30));
    /// assert_eq!(store.load("fuse:a").await?.now - before, Duration::from_secs(30));
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn frozen() -> Self {
        let store = MemoryStore::default();
        store.lock().frozen = Some(system_now());
        store
    }

    /// This store, spelling its payloads with `codec` (JSON alone by
    /// default): to run shared circuits on payloads as another store
    /// writes them, such as PHP's `serialize()` of Laravel's cache.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{Codec, Encoding, MemoryStore, SharedFuse, Store};
    /// # futures::executor::block_on(async {
    /// let store = Arc::new(MemoryStore::new().with_codec(Codec::new(Encoding::Php)));
    /// fuse_breaker::Fuse::builder("billing").store(store.clone()).build().force_open().await?;
    /// let payload = store.load("fuse:billing").await?.payload.unwrap();
    /// assert!(payload.starts_with(br#"a:6:{s:5:"state";s:4:"open";"#));
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn with_codec(self, codec: Codec) -> Self {
        MemoryStore { codec, ..self }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Moves the store's clock forward by `by`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let store = fuse_breaker::store::MemoryStore::new();
    /// store.advance(Duration::from_secs(30));
    /// ```
    pub fn advance(&self, by: Duration) {
        self.lock().offset += by;
    }

    /// Makes every round trip fail (`true`) or answer again (`false`), as
    /// a server that stopped and came back would.
    ///
    /// ```
    /// use fuse_breaker::store::{MemoryStore, Store};
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::new();
    /// store.set_unreachable(true);
    /// assert!(store.load("fuse:billing").await.unwrap_err().is_unreachable());
    /// # });
    /// ```
    pub fn set_unreachable(&self, unreachable: bool) {
        self.lock().unreachable = unreachable;
    }

    /// Writes `payload` under `key`, whatever is there, to expire after
    /// `ttl`: what another program sharing the store might do.
    ///
    /// ```
    /// use std::time::Duration;
    /// let store = fuse_breaker::store::MemoryStore::new();
    /// store.put("fuse:billing", b"not a circuit", Duration::from_secs(60));
    /// assert_eq!(store.len(), 1);
    /// ```
    pub fn put(&self, key: &str, payload: &[u8], ttl: Duration) {
        let mut inner = self.lock();
        let expires = inner.now() + ttl;
        inner
            .keys
            .insert(key.to_owned(), (payload.to_vec(), expires));
    }

    /// How many keys the store holds (expired ones included until read).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::MemoryStore::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.lock().keys.len()
    }

    /// How many compare-and-sets wrote, since the store was made.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, Store};
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::new();
    /// store.swap("fuse:a", None, b"{}", Duration::from_secs(1), false).await?;
    /// store.swap("fuse:a", None, b"{}", Duration::from_secs(1), false).await?;
    /// assert_eq!(store.writes(), 1);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    /// Whether the store holds no key.
    ///
    /// ```
    /// assert!(fuse_breaker::store::MemoryStore::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn reachable(&self) -> Result<std::sync::MutexGuard<'_, Inner>, StoreError> {
        let inner = self.lock();
        if inner.unreachable {
            return Err(StoreError::unreachable(self.name(), "the store is stopped"));
        }
        Ok(inner)
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        let mut inner = self.reachable()?;
        let now = inner.now();
        let payload = inner.get(key, now);
        Ok(Loaded { payload, now })
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        let mut inner = self.reachable()?;
        let now = inner.now();
        let current = inner.get(key, now);
        if current.as_deref() != expected {
            return Ok(Swap::Changed(Loaded {
                payload: current,
                now,
            }));
        }
        inner.keys.insert(key.to_owned(), (new.to_vec(), now + ttl));
        inner.writes += 1;
        drop(inner);
        if announce {
            self.changes.changed(key);
        }
        Ok(Swap::Written)
    }

    /// Under the store's lock.
    async fn swap_prefixed(
        &self,
        key: &str,
        prefix: &[u8],
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<bool, StoreError> {
        let mut inner = self.reachable()?;
        let now = inner.now();
        if !inner
            .get(key, now)
            .is_some_and(|held| held.starts_with(prefix))
        {
            return Ok(false);
        }
        inner.keys.insert(key.to_owned(), (new.to_vec(), now + ttl));
        inner.writes += 1;
        drop(inner);
        if announce {
            self.changes.changed(key);
        }
        Ok(true)
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        let mut inner = self.reachable()?;
        if inner.keys.remove(key).is_some() {
            inner.writes += 1;
        }
        drop(inner);
        if announce {
            self.changes.changed(key);
        }
        Ok(())
    }

    /// [`Increment::apply`] under the store's lock, on its clock.
    async fn increment(&self, key: &str, increment: &Increment) -> Result<Incremented, StoreError> {
        let mut inner = self.reachable()?;
        let now = inner.now();
        let current = inner.get(key, now);
        let Some(new) = current
            .as_deref()
            .and_then(|current| increment.apply(current, now))
        else {
            if increment.answers() {
                let payload = current;
                return Ok(Incremented::Unchanged(Loaded { payload, now }));
            }
            return Ok(Incremented::Skipped);
        };
        let answer = if increment.answers() {
            Incremented::Wrote(Loaded {
                payload: Some(new.clone()),
                now,
            })
        } else {
            Incremented::Applied
        };
        inner
            .keys
            .insert(key.to_owned(), (new, now + increment.ttl()));
        inner.writes += 1;
        Ok(answer)
    }

    fn changes(&self) -> Option<&Changes> {
        Some(&self.changes)
    }

    fn codec(&self) -> Codec {
        self.codec
    }

    /// The keys in byte order; `next` is the last key of the page.
    async fn keys(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        let inner = self.reachable()?;
        let now = inner.now();
        let mut keys: Vec<&String> = inner
            .keys
            .iter()
            .filter(|(key, (_, expires))| {
                *expires > now
                    && key.starts_with(prefix)
                    && after.is_none_or(|after| key.as_str() > after)
            })
            .map(|(key, _)| key)
            .collect();
        keys.sort_unstable();
        let limit = limit.max(1);
        let next = (keys.len() > limit).then(|| keys[limit - 1].clone());
        keys.truncate(limit);
        Ok(KeyPage::new(keys.into_iter().cloned().collect(), next))
    }
}
