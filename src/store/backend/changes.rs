//! [`Changes`]: what a store hears besides its replies, handed to this
//! process's circuits: the changes other processes announced (hints to
//! read those keys again), and the moves of the store's primary.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
#[cfg(any(feature = "redis", feature = "sql"))]
use std::time::Duration;

/// What watches a key for announcements: a cached circuit's cache.
pub(crate) trait Watcher: Send + Sync {
    /// The key was announced: read it again.
    fn announced(self: Arc<Self>);
    /// Announcements of the key may have been missed: forget what was read.
    fn forget(&self);
}

/// Where a store hands this process the changes other processes announced
/// (a key written, with the store's time of the write): every cached
/// [`SharedFuse`](crate::store::SharedFuse) on that key reads it again at once
/// (one read in flight per circuit, however many announcements arrive),
/// instead of up to its staleness later, and its mirror takes what the
/// store holds (SPEC §8: an announcement is a hint). A store that can
/// announce ([`Store::changes`](crate::store::Store::changes)) owns one and feeds
/// it from its channel; it calls [`lost`](Self::lost) when the channel may
/// have dropped announcements, so that no mirror outlives what it missed.
///
/// Anyone who can publish on a store's channel can send it anything. What
/// an announcement says is never taken: at worst it costs a read. One that
/// is not an announcement, or that names a key the channel it came on
/// cannot carry, is dropped and counted ([`dropped`](Self::dropped)).
///
/// Built outside a tokio runtime, a circuit cannot read in the background:
/// an announcement makes it forget its mirror, and its next call reads the
/// key.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use fuse_breaker::store::{Counting, MemoryStore, SharedFuse, Store};
///
/// # futures::executor::block_on(async {
/// let store = Arc::new(Counting::new(MemoryStore::new()));
/// let here = fuse_breaker::Fuse::builder("billing").store(store.clone()).cached(Duration::from_secs(60)).build();
/// let there = fuse_breaker::Fuse::builder("billing").store(store.clone()).build();
/// here.try_acquire().await?.success().await?;
/// there.force_open().await?; // announced: `here` reads the key again
/// let trips = store.round_trips();
/// assert!(here.try_acquire().await.is_err());
/// assert!(here.try_acquire().await.is_err());
/// assert_eq!(store.round_trips(), trips + 1, "one read, then the mirror rejects");
///
/// store.changes().unwrap().lost(); // the channel dropped: mirrors go
/// assert!(here.try_acquire().await.is_err());
/// assert_eq!(store.round_trips(), trips + 2, "read again");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// A store whose primary can move (a Sentinel-watched Redis) tells its
/// circuits here when it finds the primary elsewhere
/// ([`failovers`](Self::failovers), [`primary`](Self::primary)); a circuit
/// whose round trip finds the count grown tells its listeners
/// ([`StoreEvent::failover`](crate::events::StoreEvent::failover)).
#[derive(Default)]
pub struct Changes {
    watchers: Mutex<Watchers>,
    /// Announcements dropped (see [`Changes::dropped`]).
    dropped: AtomicU64,
    /// What starts the store's listening, run when a circuit begins to
    /// watch a key: a store listens only for cached circuits.
    on_watch: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// How many times the store's primary moved (see [`Changes::failovers`]).
    failovers: AtomicU64,
    /// Where the store's primary answers, as last found.
    primary: Mutex<Option<String>>,
    /// Woken when a circuit begins to watch a key (a store that
    /// subscribes per key's shard subscribes to its shard then), or when
    /// a store's connection has news for its listening task.
    #[cfg(feature = "redis")]
    pub(crate) wake: tokio::sync::Notify,
}

#[derive(Default)]
struct Watchers {
    by_key: HashMap<String, Vec<Weak<dyn Watcher>>>,
    /// How many keys the map held after its last sweep of dropped
    /// circuits: the next sweep comes when it has doubled.
    swept: usize,
}

impl fmt::Debug for Changes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changes")
            .field("keys", &self.lock().by_key.len())
            .field("dropped", &self.dropped())
            .field("failovers", &self.failovers())
            .finish_non_exhaustive()
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

    /// `key` was written or deleted: the cached circuits on it read it
    /// again (a read already asked for and not begun covers this one).
    ///
    /// ```
    /// let changes = fuse_breaker::store::Changes::new();
    /// changes.changed("fuse:billing"); // nobody watches
    /// assert_eq!(changes.dropped(), 0);
    /// ```
    pub fn changed(&self, key: &str) {
        for cache in self.watching(key) {
            cache.announced();
        }
    }

    /// How many announcements this place dropped: messages on the store's
    /// channel that are not announcements in the crate's format (or hold a
    /// time no store's clock tells), and announcements of a key that the
    /// channel they came on cannot carry (a cluster's shard channel of
    /// another slot). None of them made a circuit read its key. A count
    /// that grows tells that something else publishes there.
    ///
    /// ```
    /// let changes = fuse_breaker::store::Changes::new();
    /// assert_eq!(changes.dropped(), 0);
    /// ```
    pub fn dropped(&self) -> u64 {
        // A count to read, ordering nothing else.
        self.dropped.load(Ordering::Relaxed)
    }

    /// How many times the store's primary moved since the store was opened,
    /// as this process found out (a failover a Sentinel-watched Redis
    /// made); always 0 for a store whose primary never moves.
    ///
    /// ```
    /// let changes = fuse_breaker::store::Changes::new();
    /// assert_eq!(changes.failovers(), 0);
    /// ```
    pub fn failovers(&self) -> u64 {
        // A count to read, ordering nothing else: the address is read
        // under its lock.
        self.failovers.load(Ordering::Relaxed)
    }

    /// Where the store's primary answers now, for a store whose primary
    /// can move (`None` for any other, or before it is first found).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::Changes::new().primary(), None);
    /// ```
    pub fn primary(&self) -> Option<String> {
        self.primary
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The store found its primary at `address`; `moved`: elsewhere than
    /// the one found before (a failover).
    #[cfg(feature = "redis")]
    pub(crate) fn found_primary(&self, address: &str, moved: bool) {
        *self
            .primary
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(address.to_owned());
        if moved {
            self.failovers.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Runs `make`'s start of the store's listening whenever a circuit
    /// begins to watch a key (`make` is called once, the first time).
    #[cfg(any(feature = "redis", feature = "sql"))]
    pub(crate) fn on_watch(&self, make: impl FnOnce() -> Box<dyn Fn() + Send + Sync>) {
        self.on_watch.get_or_init(make);
    }

    #[cfg(any(feature = "redis", feature = "sql"))]
    fn drop_one(&self) {
        // A count to read, ordering nothing else.
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// An announcement in the crate's format (the store's time in seconds
    /// and microseconds, the key's length, each followed by a space, then
    /// the key and the payload: what the Redis and SQL stores publish),
    /// from anyone who can publish on the channel: the key's circuits read
    /// it again, unless it is not one or `carries` says the channel it came
    /// on cannot carry its key (then it is dropped and counted). Nothing
    /// else in it is taken.
    #[cfg(feature = "sql")]
    pub(crate) fn tell_wire(&self, message: &[u8], carries: impl Fn(&str) -> bool) {
        self.tell_wire_under(message, "", carries);
    }

    /// [`tell_wire`](Self::tell_wire) for a store that keeps each circuit
    /// under `prefix` followed by its key (Laravel's cache): an
    /// announcement of a key under the prefix is its circuit's (`carries`
    /// judges the key as announced); one of a key that is not is another
    /// store's on the same channel, left alone and not counted.
    #[cfg(any(feature = "redis", feature = "sql"))]
    pub(crate) fn tell_wire_under(
        &self,
        message: &[u8],
        prefix: &str,
        carries: impl Fn(&str) -> bool,
    ) {
        match announcement(message) {
            Some((key, _, _)) if carries(key) => {
                if let Some(circuit) = key.strip_prefix(prefix) {
                    self.changed(circuit);
                }
            }
            _ => self.drop_one(),
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
        let all: Vec<Arc<dyn Watcher>> = self
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

    /// The cached circuits of the keys `which` picks forget their mirror
    /// (announcements on those keys may have been missed).
    #[cfg(feature = "redis")]
    pub(crate) fn lost_where(&self, which: impl Fn(&str) -> bool) {
        let picked: Vec<Arc<dyn Watcher>> = self
            .lock()
            .by_key
            .iter()
            .filter(|(key, _)| which(key))
            .flat_map(|(_, caches)| caches.iter().filter_map(Weak::upgrade))
            .collect();
        for cache in picked {
            cache.forget();
        }
    }

    /// The keys a live cached circuit watches.
    #[cfg(feature = "redis")]
    pub(crate) fn keys(&self) -> Vec<String> {
        self.lock()
            .by_key
            .iter()
            .filter(|(_, caches)| caches.iter().any(|cache| cache.strong_count() > 0))
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Whether a cached circuit of this process watches `key` (a store may
    /// announce only to processes that listen).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse, Store};
    /// let store = Arc::new(MemoryStore::new());
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(store.clone()).cached(Duration::from_secs(1)).build();
    /// assert!(store.changes().unwrap().watches("fuse:billing"));
    /// drop(fuse);
    /// assert!(!store.changes().unwrap().watches("fuse:billing"));
    /// ```
    pub fn watches(&self, key: &str) -> bool {
        !self.watching(key).is_empty()
    }

    /// The live circuits watching `key`.
    fn watching(&self, key: &str) -> Vec<Arc<dyn Watcher>> {
        self.lock()
            .by_key
            .get(key)
            .map(|caches| caches.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    }

    /// `watcher` watches `key` until it is dropped.
    pub(crate) fn watch<W: Watcher + 'static>(&self, key: &str, watcher: &Arc<W>) {
        let watcher: Weak<dyn Watcher> = Arc::downgrade(watcher) as Weak<dyn Watcher>;
        let mut watchers = self.lock();
        let caches = watchers.by_key.entry(key.to_owned()).or_default();
        caches.retain(|cache| cache.strong_count() > 0);
        caches.push(watcher);
        if watchers.by_key.len() >= 2 * watchers.swept.max(16) {
            // Circuits come and go (a registry evicts them): sweep the
            // keys no live circuit watches, amortised over the insertions.
            watchers.by_key.retain(|_, caches| {
                caches.retain(|cache| cache.strong_count() > 0);
                !caches.is_empty()
            });
            watchers.swept = watchers.by_key.len();
        }
        drop(watchers);
        if let Some(start) = self.on_watch.get() {
            start();
        }
        #[cfg(feature = "redis")]
        self.wake.notify_one();
    }
}

#[cfg(any(feature = "redis", feature = "sql"))]
/// An announcement as the crate's stores publish it: the store's time of
/// the write in seconds and microseconds, the key's length in bytes, each
/// in decimal digits followed by a space, then the key (not empty, UTF-8)
/// and the payload (`None`: not one, or a time no store's clock tells).
fn announcement(message: &[u8]) -> Option<(&str, Duration, &[u8])> {
    let mut rest = message;
    let mut field = || {
        let space = rest.iter().position(|&b| b == b' ')?;
        let digits = &rest[..space];
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let number = std::str::from_utf8(digits).ok()?.parse::<u64>().ok()?;
        rest = &rest[space + 1..];
        Some(number)
    };
    let (seconds, micros, length) = (field()?, field()?, field()?);
    let now = crate::store::model::payload::clock(seconds, micros)?;
    let length = usize::try_from(length).ok().filter(|&length| length > 0)?;
    let key = std::str::from_utf8(rest.get(..length)?).ok()?;
    let payload = rest.get(length..)?;
    Some((key, now, payload))
}

#[cfg(any(feature = "redis", feature = "sql"))]
/// The first wait before a store's channel of announcements is listened
/// to again (its connection dropped, or its task ended); it doubles with
/// each failure in a row, up to [`MAX_RELISTEN`].
pub(crate) const MIN_RELISTEN: Duration = Duration::from_millis(100);
#[cfg(any(feature = "redis", feature = "sql"))]
pub(crate) const MAX_RELISTEN: Duration = Duration::from_secs(2);

#[cfg(any(feature = "redis", feature = "sql"))]
/// The task that listens to a store's channel of announcements, once a
/// cached circuit needs it; it ends with the last clone of its store.
#[derive(Debug, Default)]
pub(crate) struct Listening {
    task: std::sync::OnceLock<tokio::task::AbortHandle>,
}

#[cfg(any(feature = "redis", feature = "sql"))]
impl Listening {
    /// Starts, the first time, a task on `runtime` that runs `listen`'s
    /// loop, and runs a new one whenever the last ended (returned, or
    /// panicked) while `changes` lives: every mirror is forgotten then
    /// (announcements may have been missed), and the next loop starts
    /// after a backoff.
    pub(crate) fn start<F, L>(
        &self,
        runtime: &tokio::runtime::Handle,
        changes: Weak<Changes>,
        listen: L,
    ) where
        L: Fn() -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        self.task.get_or_init(|| {
            let supervisor = supervise(runtime.clone(), changes, listen);
            runtime.spawn(supervisor).abort_handle()
        });
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

#[cfg(any(feature = "redis", feature = "sql"))]
/// Runs `listen`'s loops one after another, for as long as `changes`
/// lives (see [`Listening::start`]).
async fn supervise<F, L>(runtime: tokio::runtime::Handle, changes: Weak<Changes>, listen: L)
where
    L: Fn() -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    /// Aborts the loop's task with the supervisor's.
    struct Abort(tokio::task::AbortHandle);
    impl Drop for Abort {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut backoff = MIN_RELISTEN;
    loop {
        let started = std::time::Instant::now();
        let task = runtime.spawn(listen());
        let _abort = Abort(task.abort_handle());
        // Whether it returned or panicked, it listens no longer.
        let _ = task.await;
        let Some(live) = changes.upgrade() else {
            return;
        };
        live.lost();
        drop(live);
        if started.elapsed() > MAX_RELISTEN {
            backoff = MIN_RELISTEN;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_RELISTEN);
    }
}

#[cfg(all(test, any(feature = "redis", feature = "sql")))]
mod tests;
