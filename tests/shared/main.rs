//! Shared circuits (SPEC §8) through a store: the rules of §3 and the
//! timeline of §6 for a fleet, the payload milon/fuse shares, outages and
//! their fallbacks, and many writers on one key.
//!
//! Each scenario runs against every store the machine has: the in-memory
//! store always, Redis with the `redis` feature and `FUSE_TEST_REDIS_URL`
//! (keys of the test's own, the server's clock moved on by the test).
#![cfg(feature = "store")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuse_breaker::Config;
use fuse_breaker::store::{Loaded, MemoryStore, SharedFuse, Store, StoreError, Swap};

mod concurrency;
mod fallback;
#[cfg(feature = "redis")]
mod on_redis;
mod payloads;
mod rules;
mod timeline;

/// A store a scenario runs on, with its clock under the test's control.
trait Stepped: Store {
    /// Moves the store's clock forward.
    fn advance(&self, by: Duration);

    /// How many compare-and-sets wrote.
    fn writes(&self) -> u64;
}

impl Stepped for MemoryStore {
    fn advance(&self, by: Duration) {
        MemoryStore::advance(self, by);
    }

    fn writes(&self) -> u64 {
        MemoryStore::writes(self)
    }
}

/// A server's store seen through a clock that stands still at the first
/// time the server reported and moves only when the test moves it, and
/// keys of the test's own (a prefix unique to this store), counting the
/// writes. (The server's own clock still drives its key expiry.)
#[derive(Debug)]
struct Stepping<S> {
    inner: S,
    prefix: String,
    /// The server's first time, and the test's steps since.
    clock: Mutex<(Option<Duration>, Duration)>,
    writes: AtomicU64,
}

impl<S: Store> Stepping<S> {
    fn new(inner: S) -> Self {
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
    ) -> Result<Swap, StoreError> {
        match self.inner.swap(&self.key(key), expected, new, ttl).await? {
            Swap::Written => {
                self.writes.fetch_add(1, Ordering::Relaxed);
                Ok(Swap::Written)
            }
            Swap::Changed(loaded) => Ok(Swap::Changed(self.shifted(loaded))),
        }
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

/// The Redis server the tests use: `FUSE_TEST_REDIS_URL`. Under `CI=true`
/// a missing server fails the run; elsewhere its tests are skipped, said
/// once.
#[cfg(feature = "redis")]
fn redis_url() -> Option<String> {
    static SAID: std::sync::Once = std::sync::Once::new();
    match std::env::var("FUSE_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and no FUSE_TEST_REDIS_URL: the Redis tests cannot be skipped"
            );
            SAID.call_once(|| eprintln!("FUSE_TEST_REDIS_URL is not set: Redis scenarios skipped"));
            None
        }
    }
}

/// Every store to run on: `(name, store)`. The memory store always; Redis
/// when the `redis` feature is on and a server is given.
fn stores() -> Vec<(&'static str, Arc<dyn SteppedStore>)> {
    let mut stores: Vec<(&'static str, Arc<dyn SteppedStore>)> =
        vec![("memory", Arc::new(MemoryStore::frozen()))];
    #[cfg(feature = "redis")]
    if let Some(url) = redis_url() {
        let store = fuse_breaker::store::RedisStore::open(&url).expect("a Redis URL");
        stores.push(("redis", Arc::new(Stepping::new(store))));
    }
    stores
}

/// A store as both a `Store` (for circuits) and `Stepped` (for the test).
trait SteppedStore: Stepped {
    fn as_store(self: Arc<Self>) -> Arc<dyn Store>;
}

impl<T: Stepped> SteppedStore for T {
    fn as_store(self: Arc<Self>) -> Arc<dyn Store> {
        self
    }
}

/// A circuit named `name` in `store` with `config`.
fn circuit(store: &Arc<dyn SteppedStore>, name: &str, config: &Config) -> SharedFuse {
    SharedFuse::builder(name, store.clone().as_store())
        .config(config.clone())
        .build()
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A configuration of the given threshold and probes, window 60 s, open
/// 30 s.
fn config(threshold: u32, probes: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .build()
        .expect("a valid configuration")
}

/// Runs `scenario` on a current-thread runtime.
fn block_on<F: std::future::Future>(scenario: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(scenario)
}
