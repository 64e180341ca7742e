//! [`Changes`]: the transitions other processes announced through a store,
//! handed to this process's cached circuits on their keys.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
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
/// Anyone who can publish on a store's channel can send it anything: an
/// announcement that is not one ([`dropped`](Self::dropped) counts them) is
/// dropped, and so is one dated more than [`MAX_LEAD`](Self::MAX_LEAD)
/// after the store's clock, as this process last saw it in a reply.
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
    /// The store's clock as its last reply told it, less this process's
    /// monotonic time then ([`since_start`]), in nanoseconds (0: no reply
    /// yet): the store's clock now is this plus `since_start()`. One word,
    /// so that a reply costs no lock.
    #[cfg(any(feature = "redis", feature = "sql"))]
    clock: crate::sync::Tally,
    /// Announcements dropped (see [`Changes::dropped`]).
    dropped: AtomicU64,
    /// Woken when a circuit begins to watch a key (a store that
    /// subscribes per key's shard subscribes to its shard then), or when
    /// a store's connection has news for its listening task.
    #[cfg(feature = "redis")]
    pub(crate) wake: tokio::sync::Notify,
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
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl Changes {
    /// How far after the store's clock an announcement may be dated: the
    /// store's time in its last reply, plus the time this process's clock
    /// says passed since, plus this bound (for that reply's way here and
    /// the two clocks' drift; an announcement is dated by the store's own
    /// clock when it is written). One dated later is dropped: believed, a
    /// forged one dated in the future would keep its circuit's mirror
    /// (open, say) newer than every real reading until then.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fuse_breaker::store::Changes::MAX_LEAD, Duration::from_secs(1));
    /// ```
    pub const MAX_LEAD: Duration = Duration::from_secs(1);

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
    /// the error), and counts as [`dropped`](Self::dropped). An empty
    /// payload says the key was deleted (a reset): they forget their
    /// mirror, and read the key on their next call.
    ///
    /// ```
    /// use std::time::Duration;
    /// let changes = fuse_breaker::store::Changes::new();
    /// changes.tell("fuse:billing", b"{}", Duration::from_secs(1_700_000_000)); // nobody watches
    /// changes.tell("fuse:billing", b"", Duration::from_secs(1_700_000_000)); // deleted
    /// assert_eq!(changes.dropped(), 0);
    /// ```
    pub fn tell(&self, key: &str, payload: &[u8], now: Duration) {
        if payload.is_empty() {
            for cache in self.watching(key) {
                cache.forget();
            }
            return;
        }
        let mut read = true;
        for cache in self.watching(key) {
            read &= cache.announced(payload, now);
        }
        if !read {
            self.drop_one();
        }
    }

    /// How many announcements this place dropped: messages on the store's
    /// channel that are not announcements in the crate's format (or hold
    /// a time no store's clock tells), those dated more than
    /// [`MAX_LEAD`](Self::MAX_LEAD) after the store's clock, and those whose
    /// payload the circuits watching its key could not read. None of them
    /// changed a mirror (but the last made its circuits forget theirs).
    /// A count that grows tells that something else publishes there.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse, Store};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let _fuse = SharedFuse::builder("billing", store.clone()).cached(Duration::from_secs(60)).build();
    /// let changes = store.changes().unwrap();
    /// changes.tell("fuse:billing", b"not a circuit", Duration::from_secs(1_700_000_000));
    /// assert_eq!(changes.dropped(), 1);
    /// ```
    pub fn dropped(&self) -> u64 {
        // A count to read, ordering nothing else.
        self.dropped.load(Ordering::Relaxed)
    }

    fn drop_one(&self) {
        // A count to read, ordering nothing else.
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// The store's reply said its clock was at `now` (since the Unix
    /// epoch): what announcements are checked against from then on.
    #[cfg(any(feature = "redis", feature = "sql"))]
    pub(crate) fn saw_clock(&self, now: Duration) {
        let now = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        self.clock.set(now.saturating_sub(since_start()).max(1));
    }

    /// The latest time an announcement may be dated (`None`: no reply of
    /// the store's seen yet).
    #[cfg(any(feature = "redis", feature = "sql"))]
    fn latest(&self) -> Option<Duration> {
        self.store_now()
            .map(|now| now.saturating_add(Self::MAX_LEAD))
    }

    /// The store's clock now, as its last reply and this process's clock
    /// since tell it (`None`: no reply seen yet).
    #[cfg(any(feature = "redis", feature = "sql"))]
    fn store_now(&self) -> Option<Duration> {
        let offset = self.clock.get();
        (offset != 0).then(|| Duration::from_nanos(offset.saturating_add(since_start())))
    }

    /// The store's time before which every announcement a lost channel
    /// may deliver again was sent (0: none known): a channel that comes
    /// back may hand over again what it delivered before it dropped, and
    /// a mirror forgotten for the loss must not take an old one.
    #[cfg(any(feature = "redis", feature = "sql"))]
    fn floor(&self) -> u64 {
        self.store_now().map_or(0, super::resolution::store_time)
    }

    /// Without a store that has a clock, no floor.
    #[cfg(not(any(feature = "redis", feature = "sql")))]
    #[allow(clippy::unused_self)]
    fn floor(&self) -> u64 {
        0
    }

    /// An announcement in the crate's format (the store's time in seconds
    /// and microseconds, the key's length, each followed by a space, then
    /// the key and the payload: what the Redis and SQL stores publish),
    /// from anyone who can publish on the channel: dropped and counted
    /// unless it is one, dated no later than the store's clock allows.
    /// Before any reply of the store's there is no clock to check it
    /// against, and no mirror it could keep up to date: it is ignored.
    #[cfg(any(feature = "redis", feature = "sql"))]
    pub(crate) fn tell_wire(&self, message: &[u8]) {
        let Some((key, now, payload)) = announcement(message) else {
            self.drop_one();
            return;
        };
        match self.latest() {
            Some(latest) if now <= latest => self.tell(key, payload, now),
            Some(_) => self.drop_one(),
            None => {}
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
        let floor = self.floor();
        for cache in all {
            cache.lost(floor);
        }
    }

    /// The cached circuits of the keys `which` picks forget their mirror
    /// (announcements on those keys may have been missed).
    #[cfg(feature = "redis")]
    pub(crate) fn lost_where(&self, which: impl Fn(&str) -> bool) {
        let picked: Vec<Arc<Cache>> = self
            .lock()
            .by_key
            .iter()
            .filter(|(key, _)| which(key))
            .flat_map(|(_, caches)| caches.iter().filter_map(Weak::upgrade))
            .collect();
        let floor = self.floor();
        for cache in picked {
            cache.lost(floor);
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
        drop(watchers);
        #[cfg(feature = "redis")]
        self.wake.notify_one();
    }
}

/// Nanoseconds of this process's monotonic clock since its first reading
/// here.
#[cfg(any(feature = "redis", feature = "sql"))]
fn since_start() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let elapsed = START.get_or_init(std::time::Instant::now).elapsed();
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
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
    let now = super::payload::clock(seconds, micros)?;
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
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

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
        for bad in [
            &b"1700000000 12 99 fuse:a{}"[..],
            b"17x 12 1 a{}",
            b"",
            // Times no clock tells: the sum overflows, microseconds of a
            // second or more, past what the rules count in.
            b"18446744073709551615 1000000 1 x{}",
            b"18446744073709551615 0 1 x{}",
            b"1700000000 1000000 1 x{}",
            b"99999999999 0 1 x{}",
            // Signs, an empty number, no key, a key that is not UTF-8.
            b"+1700000000 12 1 x{}",
            b"-1 12 1 x{}",
            b"1700000000  1 x{}",
            b"1700000000 12 0 {}",
            b"1700000000 12 2 \xff\xfe{}",
            b"1700000000 12 18446744073709551615 x{}",
        ] {
            assert_eq!(announcement(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn an_announcement_is_believed_up_to_the_store_s_clock_and_the_lead() {
        use crate::config::Config;
        let changes = Changes::new();
        let key = "fuse:billing";
        let cache = Arc::new(Cache::new(
            key,
            &Config::default(),
            Duration::from_secs(30),
            Duration::from_mins(1),
        ));
        changes.watch(key, &cache);
        let open = |at: u64| {
            format!(
                "{at} 0 {} {key}{{\"state\":\"open\",\"opened_at\":{at},\"failures\":[]}}",
                key.len()
            )
        };
        let now = 1_700_000_000;
        // No reply seen yet: nothing to check against, nothing believed.
        changes.tell_wire(open(now).as_bytes());
        assert!(cache.decide(|_, _| Some(())).is_none());
        assert_eq!(changes.dropped(), 0);
        changes.saw_clock(Duration::from_secs(now));
        changes.tell_wire(open(now + 2).as_bytes());
        assert!(cache.decide(|_, _| Some(())).is_none(), "two seconds ahead");
        assert_eq!(changes.dropped(), 1);
        changes.tell_wire(open(now).as_bytes());
        assert!(
            cache.decide(|_, _| Some(())).is_some(),
            "at the store's time"
        );
        changes.tell_wire(b"1700000000 0 9 x");
        assert_eq!(changes.dropped(), 2);
    }

    #[test]
    fn a_channel_that_comes_back_cannot_hand_over_an_old_announcement_again() {
        use crate::config::Config;
        let changes = Changes::new();
        let key = "fuse:billing";
        let cache = Arc::new(Cache::new(
            key,
            &Config::default(),
            Duration::from_secs(30),
            Duration::from_mins(1),
        ));
        changes.watch(key, &cache);
        let open = |at: u64, micros: u64| {
            format!(
                "{at} {micros} {} {key}{{\"state\":\"open\",\"opened_at\":{at},\"failures\":[]}}",
                key.len()
            )
        };
        let now = 1_700_000_000;
        changes.saw_clock(Duration::from_secs(now));
        changes.tell_wire(open(now - 1, 0).as_bytes());
        assert!(cache.decide(|_, _| Some(())).is_some(), "taken");
        changes.lost();
        assert!(cache.decide(|_, _| Some(())).is_none(), "forgotten");
        // Delivered again once the channel is back: older than the loss.
        changes.tell_wire(open(now - 1, 0).as_bytes());
        assert!(cache.decide(|_, _| Some(())).is_none(), "not taken again");
        assert_eq!(changes.dropped(), 0, "not malformed, only old");
        // A new one, sent after the loss, is.
        changes.tell_wire(open(now, 999_999).as_bytes());
        assert!(cache.decide(|_, _| Some(())).is_some(), "a new one taken");
    }

    /// Runs of a listening loop: the first panics, the second returns, the
    /// third listens until it is aborted.
    #[tokio::test(start_paused = true)]
    async fn the_listening_task_is_started_again_whatever_ends_it() {
        use crate::config::Config;
        struct Ended(Arc<AtomicUsize>);
        impl Drop for Ended {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let changes = Arc::new(Changes::new());
        let cache = Arc::new(Cache::new(
            "fuse:a",
            &Config::default(),
            Duration::from_secs(30),
            Duration::from_mins(1),
        ));
        changes.watch("fuse:a", &cache);
        let mirrored = || cache.decide(|_, _| Some(())).is_some();
        let remember = || {
            cache.remember(
                &super::super::stored::Stored::fresh(1),
                1_700_000_000_000_000_000,
            );
        };
        remember();
        let (runs, ended) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let listening = Listening::default();
        let (counted, dropped) = (runs.clone(), ended.clone());
        listening.start(
            &tokio::runtime::Handle::current(),
            Arc::downgrade(&changes),
            move || {
                let run = counted.fetch_add(1, Ordering::SeqCst);
                let ended = Ended(dropped.clone());
                async move {
                    let _ended = ended;
                    match run {
                        0 => panic!("a listening loop that panics"),
                        1 => {}
                        _ => std::future::pending().await,
                    }
                }
            },
        );
        let settle = async || {
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
        };
        settle().await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(!mirrored(), "mirrors forgotten when the loop panicked");
        remember();
        tokio::time::sleep(MIN_RELISTEN).await;
        settle().await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "started again after the panic"
        );
        assert!(!mirrored(), "mirrors forgotten when the loop returned");
        tokio::time::sleep(3 * MIN_RELISTEN).await;
        settle().await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "started again after it returned"
        );
        assert_eq!(ended.load(Ordering::SeqCst), 2);
        drop(listening);
        settle().await;
        assert_eq!(
            ended.load(Ordering::SeqCst),
            3,
            "the loop ends with the store"
        );
    }
}
