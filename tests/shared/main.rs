//! Shared circuits (SPEC §8) through a store: the rules of §3 and the
//! timeline of §6 for a fleet, the payload milon/fuse shares, outages and
//! their fallbacks, and many writers on one key.
//!
//! Each scenario runs against every store the machine has: the in-memory
//! store always, Redis with the `redis` feature and `FUSE_TEST_REDIS_URL`
//! (a Redis Cluster too with `FUSE_TEST_REDIS_CLUSTER_URL`, the keys of
//! the scenarios spread over its shards),
//! PostgreSQL with the `sql` feature and `FUSE_TEST_DATABASE_URL`, and
//! SQLite (a file of the test run's own) with the `sql` feature (keys of
//! the test's own, the server's clock moved on by the test).
//!
//! `php/` shares circuits with a real PHP process writing and reading them
//! as milon/fuse does (`tests/php/milon.php`).
#![cfg(feature = "store")]

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::Config;

use common::runtime;
use fuse_breaker::store::{MemoryStore, SharedFuse, Store};

mod announced;
mod cached;
#[cfg(any(feature = "redis", feature = "sql"))]
mod children;
mod clocks;
#[path = "../common/mod.rs"]
mod common;
mod concurrency;
mod encodings;
#[cfg(any(feature = "redis", feature = "sql"))]
mod failing_processes;
mod fallback;
#[cfg(any(feature = "redis", feature = "sql"))]
mod fleet;
mod foreign;
#[cfg(any(feature = "redis", feature = "sql"))]
mod forged;
#[cfg(any(feature = "redis", feature = "sql"))]
mod frozen;
mod hints;
mod increments;
#[cfg(feature = "redis")]
mod laravel;
#[cfg(feature = "redis")]
mod laravel_payload;
mod live;
#[cfg(feature = "reqwest")]
mod middleware;
#[cfg(feature = "redis")]
mod on_redis;
#[cfg(feature = "sql")]
mod on_sql;
mod oversized;
mod payloads;
#[cfg(any(feature = "redis", feature = "sql"))]
mod php;
#[cfg(any(feature = "redis", feature = "sql"))]
mod processes;
mod quorum;
#[cfg(any(feature = "redis", feature = "sql"))]
mod quorum_processes;
mod rate;
#[cfg(any(feature = "redis", feature = "sql"))]
mod recovery;
#[cfg(any(feature = "redis", feature = "sql"))]
mod refused;
mod repair;
#[cfg(any(feature = "redis", feature = "sql"))]
mod restart;
mod rules;
mod single_flight;
mod stepped_back;
#[cfg(any(feature = "redis", feature = "sql"))]
mod stepping;
#[cfg(any(feature = "redis", feature = "sql"))]
mod throttle;
mod timeline;
#[cfg(feature = "tower")]
mod tower;

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

#[cfg(any(feature = "redis", feature = "sql"))]
use common::{server, unique};

/// The Redis server the tests use: `FUSE_TEST_REDIS_URL`.
#[cfg(feature = "redis")]
fn redis_url() -> Option<String> {
    server("FUSE_TEST_REDIS_URL", "Redis")
}

/// The Redis Cluster the tests use: `FUSE_TEST_REDIS_CLUSTER_URL`.
#[cfg(feature = "redis")]
fn redis_cluster_url() -> Option<String> {
    server("FUSE_TEST_REDIS_CLUSTER_URL", "Redis Cluster")
}

/// The PostgreSQL database the tests use: `FUSE_TEST_DATABASE_URL`.
#[cfg(feature = "sql")]
fn database_url() -> Option<String> {
    server("FUSE_TEST_DATABASE_URL", "PostgreSQL")
}

/// The servers' URLs, for the tests that run several processes: each
/// process opens its own store on one.
#[cfg(any(feature = "redis", feature = "sql"))]
fn server_urls() -> Vec<String> {
    let mut urls = Vec::new();
    #[cfg(feature = "redis")]
    urls.extend(redis_url().into_iter().chain(redis_cluster_url()));
    #[cfg(feature = "sql")]
    {
        urls.push(sqlite_url());
        urls.extend(database_url());
    }
    urls
}

/// A store on `url` (for SQL, whose table the parent made).
#[cfg(any(feature = "redis", feature = "sql"))]
fn open_url(url: &str) -> std::sync::Arc<dyn Store> {
    #[cfg(feature = "redis")]
    if url.starts_with("redis") {
        return std::sync::Arc::new(
            fuse_breaker::store::RedisStore::open(url).expect("a Redis URL"),
        );
    }
    #[cfg(feature = "sql")]
    return std::sync::Arc::new(sql_store(url));
    #[allow(unreachable_code)]
    {
        panic!("no store for {url} in this build")
    }
}

/// The SQLite database of this test process: a file under cargo's
/// temporary directory for integration tests.
#[cfg(feature = "sql")]
fn sqlite_url() -> String {
    format!(
        "sqlite://{}/fuse-shared-{}.db",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    )
}

/// A SQL store on `url` whose table exists (made once per process and
/// URL, on a runtime of its own: scenarios call this inside theirs).
#[cfg(feature = "sql")]
fn sql_store(url: &str) -> fuse_breaker::store::SqlStore {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static MADE: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut made = MADE.lock().unwrap();
    if made.get_or_insert_default().insert(url.to_owned()) {
        let url = url.to_owned();
        std::thread::spawn(move || {
            block_on(async {
                let store = fuse_breaker::store::SqlStore::open(&url).expect("a database URL");
                store.ensure_schema().await.expect("the table");
            });
        })
        .join()
        .expect("the schema made");
    }
    fuse_breaker::store::SqlStore::open(url).expect("a database URL")
}

#[cfg(feature = "sql")]
fn sql() -> Vec<(&'static str, Arc<dyn SteppedStore>)> {
    let sqlite: Arc<dyn SteppedStore> = Arc::new(stepping::Stepping::new(sql_store(&sqlite_url())));
    let postgres = database_url().map(|url| {
        let store: Arc<dyn SteppedStore> = Arc::new(stepping::Stepping::new(sql_store(&url)));
        ("postgres", store)
    });
    std::iter::once(("sqlite", sqlite))
        .chain(postgres)
        .collect()
}

#[cfg(not(feature = "sql"))]
fn sql() -> Vec<(&'static str, Arc<dyn SteppedStore>)> {
    Vec::new()
}

/// Every store to run on: `(name, store)`. The memory store always; Redis
/// when the `redis` feature is on and a server is given; SQLite with the
/// `sql` feature, and PostgreSQL when a server is given too.
fn stores() -> Vec<(&'static str, Arc<dyn SteppedStore>)> {
    let memory: Arc<dyn SteppedStore> = Arc::new(MemoryStore::frozen());
    std::iter::once(("memory", memory))
        .chain(redis())
        .chain(redis_cluster())
        .chain(sql())
        .collect()
}

#[cfg(feature = "redis")]
fn redis() -> Option<(&'static str, Arc<dyn SteppedStore>)> {
    let store = fuse_breaker::store::RedisStore::open(&redis_url()?).expect("a Redis URL");
    Some(("redis", Arc::new(stepping::Stepping::new(store))))
}

#[cfg(not(feature = "redis"))]
fn redis() -> Option<(&'static str, Arc<dyn SteppedStore>)> {
    None
}

#[cfg(feature = "redis")]
fn redis_cluster() -> Option<(&'static str, Arc<dyn SteppedStore>)> {
    let url = redis_cluster_url()?;
    let store = fuse_breaker::store::RedisStore::open(&url).expect("a Redis Cluster URL");
    Some(("redis-cluster", Arc::new(stepping::Stepping::new(store))))
}

#[cfg(not(feature = "redis"))]
fn redis_cluster() -> Option<(&'static str, Arc<dyn SteppedStore>)> {
    None
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
    fuse_breaker::Fuse::builder(name)
        .store(store.clone().as_store())
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
