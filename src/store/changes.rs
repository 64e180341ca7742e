//! [`Changes`]: the transitions other processes announced through a store,
//! handed to this process's cached circuits on their keys.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::cache::Cache;

/// Where a store hands this process the transitions other processes
/// announced (a payload written under a key, with the store's time of the
/// write): every cached [`SharedFuse`](super::SharedFuse) on that key takes
/// it as its mirror at once, instead of up to its staleness later. A store
/// that can announce ([`Store::changes`](super::Store::changes)) owns one
/// and feeds it from its channel; it calls [`lost`](Self::lost) when the
/// channel may have dropped announcements, so that no mirror outlives what
/// it missed.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use fuse_breaker::store::{Counting, MemoryStore, SharedFuse, Store};
///
/// # futures::executor::block_on(async {
/// let store = Arc::new(Counting::new(MemoryStore::new()));
/// let here = SharedFuse::builder("billing", store.clone()).cached(Duration::from_secs(60)).build();
/// let there = SharedFuse::builder("billing", store.clone()).build();
/// here.try_acquire().await?.success().await?;
/// there.force_open().await?; // announced: `here` sees it now, not in a minute
/// let trips = store.round_trips();
/// assert!(here.try_acquire().await.is_err());
/// assert_eq!(store.round_trips(), trips, "rejected by the mirror");
///
/// store.changes().unwrap().lost(); // the channel dropped: mirrors go
/// assert!(here.try_acquire().await.is_err());
/// assert_eq!(store.round_trips(), trips + 1, "read again");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Default)]
pub struct Changes {
    watchers: Mutex<Watchers>,
}

#[derive(Default)]
struct Watchers {
    by_key: HashMap<String, Vec<Weak<Cache>>>,
    /// How many keys the map held after its last sweep of dropped
    /// circuits: the next sweep comes when it has doubled.
    swept: usize,
}

impl fmt::Debug for Changes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changes")
            .field("keys", &self.lock().by_key.len())
            .finish()
    }
}

impl Changes {
    /// A place with no circuit watching yet.
    ///
    /// ```
    /// let changes = fuse_breaker::store::Changes::new();
    /// assert!(!changes.watches("fuse:billing"));
    /// ```
    pub fn new() -> Self {
        Changes::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watchers> {
        self.watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `payload` was written under `key` at the store's time `now` (since
    /// the Unix epoch): the cached circuits on `key` take it as their
    /// mirror, unless theirs is newer. A payload they cannot read makes
    /// them forget their mirror (the next call reads the key and reports
    /// the error).
    ///
    /// ```
    /// use std::time::Duration;
    /// let changes = fuse_breaker::store::Changes::new();
    /// changes.tell("fuse:billing", b"{}", Duration::from_secs(1_700_000_000)); // nobody watches
    /// ```
    pub fn tell(&self, key: &str, payload: &[u8], now: Duration) {
        for cache in self.watching(key) {
            cache.announced(payload, now);
        }
    }

    /// An announcement in the crate's format (the store's time in seconds
    /// and microseconds, the key's length, each followed by a space, then
    /// the key and the payload: what the Redis and SQL stores publish);
    /// ignored unless it is one.
    #[cfg(any(feature = "redis", feature = "sql"))]
    pub(crate) fn tell_wire(&self, message: &[u8]) {
        if let Some((key, now, payload)) = announcement(message) {
            self.tell(key, payload, now);
        }
    }

    /// The store may have missed announcements (its channel dropped, or it
    /// is new): every cached circuit forgets its mirror and reads its key
    /// again on its next call.
    ///
    /// ```
    /// fuse_breaker::store::Changes::new().lost();
    /// ```
    pub fn lost(&self) {
        let all: Vec<Arc<Cache>> = self
            .lock()
            .by_key
            .values()
            .flatten()
            .filter_map(Weak::upgrade)
            .collect();
        for cache in all {
            cache.forget();
        }
    }

    /// Whether a cached circuit of this process watches `key` (a store may
    /// announce only to processes that listen).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse, Store};
    /// let store = Arc::new(MemoryStore::new());
    /// let fuse = SharedFuse::builder("billing", store.clone()).cached(Duration::from_secs(1)).build();
    /// assert!(store.changes().unwrap().watches("fuse:billing"));
    /// drop(fuse);
    /// assert!(!store.changes().unwrap().watches("fuse:billing"));
    /// ```
    pub fn watches(&self, key: &str) -> bool {
        !self.watching(key).is_empty()
    }

    /// The live circuits watching `key`.
    fn watching(&self, key: &str) -> Vec<Arc<Cache>> {
        self.lock()
            .by_key
            .get(key)
            .map(|caches| caches.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    }

    /// `cache` watches `key` until it is dropped.
    pub(crate) fn watch(&self, key: &str, cache: &Arc<Cache>) {
        let mut watchers = self.lock();
        let caches = watchers.by_key.entry(key.to_owned()).or_default();
        caches.retain(|cache| cache.strong_count() > 0);
        caches.push(Arc::downgrade(cache));
        if watchers.by_key.len() >= 2 * watchers.swept.max(16) {
            // Circuits come and go (a registry evicts them): sweep the
            // keys no live circuit watches, amortised over the insertions.
            watchers.by_key.retain(|_, caches| {
                caches.retain(|cache| cache.strong_count() > 0);
                !caches.is_empty()
            });
            watchers.swept = watchers.by_key.len();
        }
    }
}

#[cfg(any(feature = "redis", feature = "sql"))]
/// An announcement as the crate's stores publish it: the store's time of
/// the write in seconds and microseconds, the key's length in bytes, each
/// followed by a space, then the key and the payload (`None`: not one).
fn announcement(message: &[u8]) -> Option<(&str, Duration, &[u8])> {
    let mut rest = message;
    let mut field = || {
        let space = rest.iter().position(|&b| b == b' ')?;
        let number = std::str::from_utf8(&rest[..space])
            .ok()?
            .parse::<u64>()
            .ok()?;
        rest = &rest[space + 1..];
        Some(number)
    };
    let (seconds, micros, length) = (field()?, field()?, field()?);
    let length = usize::try_from(length).ok()?;
    let key = std::str::from_utf8(rest.get(..length)?).ok()?;
    let payload = rest.get(length..)?;
    let now = Duration::from_secs(seconds) + Duration::from_micros(micros);
    Some((key, now, payload))
}

#[cfg(any(feature = "redis", feature = "sql"))]
/// The task that listens to a store's channel of announcements, once a
/// cached circuit needs it; it ends with the last clone of its store.
#[derive(Debug, Default)]
pub(crate) struct Listening {
    task: std::sync::OnceLock<tokio::task::AbortHandle>,
}

#[cfg(any(feature = "redis", feature = "sql"))]
impl Listening {
    /// Starts the task with `spawn` the first time.
    pub(crate) fn start(&self, spawn: impl FnOnce() -> tokio::task::AbortHandle) {
        self.task.get_or_init(spawn);
    }
}

#[cfg(any(feature = "redis", feature = "sql"))]
impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(task) = self.task.get() {
            task.abort();
        }
    }
}

#[cfg(all(test, any(feature = "redis", feature = "sql")))]
mod tests {
    use super::*;

    #[test]
    fn announcements_are_read_strictly() {
        let now = Duration::from_secs(1_700_000_000) + Duration::from_micros(12);
        assert_eq!(
            announcement(b"1700000000 12 12 fuse:billing{\"state\":\"open\"}"),
            Some(("fuse:billing", now, &b"{\"state\":\"open\"}"[..]))
        );
        // A key with spaces and digits is read by its length.
        assert_eq!(
            announcement(b"1700000000 12 8 fuse:1 2{}"),
            Some(("fuse:1 2", now, &b"{}"[..]))
        );
        assert_eq!(announcement(b"1700000000 12 99 fuse:a{}"), None);
        assert_eq!(announcement(b"17x 12 1 a{}"), None);
        assert_eq!(announcement(b""), None);
    }
}
