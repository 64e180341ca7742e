//! The stores the shared circuits of the admin API are tested on: memory
//! always; Redis given `FUSE_TEST_REDIS_URL` (feature `redis`); SQLite, a
//! file of this run's own, and PostgreSQL given `FUSE_TEST_DATABASE_URL`
//! (feature `sql`). Under `CI=true` a missing server fails the test.

use std::sync::Arc;

use fuse_breaker::store::{MemoryStore, Store};

#[cfg(any(feature = "redis", feature = "sql"))]
use super::common::server;
pub(super) use super::common::unique;

/// Every store to run on: `(name, store)`, their tables made.
pub(super) async fn stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    #[cfg_attr(not(any(feature = "redis", feature = "sql")), allow(unused_mut))]
    let mut stores: Vec<(&'static str, Arc<dyn Store>)> =
        vec![("memory", Arc::new(MemoryStore::new()))];
    #[cfg(feature = "redis")]
    if let Some(url) = server("FUSE_TEST_REDIS_URL", "the admin API's Redis") {
        let store = fuse_breaker::store::RedisStore::open(&url).expect("a Redis URL");
        stores.push(("redis", Arc::new(store)));
    }
    #[cfg(feature = "sql")]
    {
        let sqlite = format!(
            "sqlite://{}/fuse-admin-{}.db",
            env!("CARGO_TARGET_TMPDIR"),
            std::process::id()
        );
        let postgres = server("FUSE_TEST_DATABASE_URL", "the admin API's PostgreSQL");
        for (name, url) in [("sqlite", Some(sqlite)), ("postgres", postgres)] {
            let Some(url) = url else { continue };
            let store = fuse_breaker::store::SqlStore::open(&url).expect("a database URL");
            store.ensure_schema().await.expect("the table");
            stores.push((name, Arc::new(store)));
        }
    }
    stores
}
