//! The stores the shared circuits of the admin API are tested on: memory
//! always; Redis given `FUSE_TEST_REDIS_URL` (feature `redis`); SQLite, a
//! file of this run's own, and PostgreSQL given `FUSE_TEST_DATABASE_URL`
//! (feature `sql`). Under `CI=true` a missing server fails the test.

use std::sync::Arc;

use fuse_breaker::store::{MemoryStore, Store};

/// Every store to run on: `(name, store)`, their tables made.
pub(super) async fn stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    #[cfg_attr(not(any(feature = "redis", feature = "sql")), allow(unused_mut))]
    let mut stores: Vec<(&'static str, Arc<dyn Store>)> =
        vec![("memory", Arc::new(MemoryStore::new()))];
    #[cfg(feature = "redis")]
    if let Some(url) = server("FUSE_TEST_REDIS_URL", "Redis") {
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
        let postgres = server("FUSE_TEST_DATABASE_URL", "PostgreSQL");
        for (name, url) in [("sqlite", Some(sqlite)), ("postgres", postgres)] {
            let Some(url) = url else { continue };
            let store = fuse_breaker::store::SqlStore::open(&url).expect("a database URL");
            store.ensure_schema().await.expect("the table");
            stores.push((name, Arc::new(store)));
        }
    }
    stores
}

/// The server named by `var`; `None` (said) when it is not set, except
/// under `CI=true`.
#[cfg(any(feature = "redis", feature = "sql"))]
fn server(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and no {var}: the admin API's {what} tests cannot be skipped"
            );
            eprintln!("{var} is not set: the admin API's {what} tests skipped");
            None
        }
    }
}

/// A name no other test or run uses (the servers outlive the run).
pub(super) fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{what}-{}-{nanos}", std::process::id())
}
