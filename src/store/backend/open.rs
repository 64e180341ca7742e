//! [`open`]: the store a URL names, chosen by its scheme (what the `fuse`
//! command and a configuration file's store both open).

use std::sync::Arc;

use crate::store::backend::error::StoreError;
use crate::store::{Store, StoreOptions};

/// The schemes of Redis (and Valkey) URLs.
const REDIS: [&str; 11] = [
    "redis",
    "rediss",
    "redis+unix",
    "unix",
    "valkey",
    "valkeys",
    "valkey+unix",
    "redis+cluster",
    "rediss+cluster",
    "redis+sentinel",
    "rediss+sentinel",
];

/// The schemes of database URLs.
const SQL: [&str; 3] = ["postgres", "postgresql", "sqlite"];

/// The store at `url`, chosen by its scheme: a [`RedisStore`] for
/// `redis://`, `rediss://`, `redis+unix://`, `unix://` or `valkey://`
/// (`valkeys://`, `valkey+unix://`), for a Redis Cluster
/// (`redis+cluster://host:port,host:port`) or the primary Sentinel
/// watches (`redis+sentinel://host:port,host:port/name`; see
/// [`RedisStore::open`](crate::store::RedisStore::open), feature `redis`), an [`SqlStore`] for
/// `postgres://`, `postgresql://` or `sqlite:` (feature `sql`). An error
/// naming the scheme for any other ([`StoreError::is_invalid_url`]), or
/// for one whose feature this build has not; the URL is named without its
/// password ([`redact`](crate::redact)). Call it inside a tokio runtime:
/// connections are made on first use, on its tasks.
///
/// [`RedisStore`]: crate::store::RedisStore
/// [`SqlStore`]: crate::store::SqlStore
///
/// ```
/// # #[cfg(feature = "sql")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
/// let store = fuse_breaker::store::open("sqlite::memory:")?;
/// assert_eq!(store.name(), "sqlite::memory:");
///
/// let err = fuse_breaker::store::open("mysql://admin:hunter2@db.internal/shop").unwrap_err();
/// assert!(err.is_invalid_url());
/// assert!(err.to_string().contains("\"mysql\""));
/// assert!(!err.to_string().contains("hunter2"));
/// # Ok(()) }
/// # #[cfg(not(feature = "sql"))]
/// # fn main() {}
/// ```
pub fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    open_with_table(url, None)
}

/// Like [`open`], with a database's circuits kept in `table` (see
/// [`SqlStore::with_table`](crate::store::SqlStore::with_table); `None`: the
/// default table). A table with a Redis URL is an error: Redis keeps no
/// tables.
///
/// ```
/// # #[cfg(feature = "sql")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
/// let store = fuse_breaker::store::open_with_table("sqlite::memory:", Some("shop_circuits"))?;
/// assert_eq!(store.name(), "sqlite::memory:");
/// assert!(fuse_breaker::store::open_with_table("sqlite::memory:", Some("x; DROP TABLE users")).is_err());
/// # Ok(()) }
/// # #[cfg(not(feature = "sql"))]
/// # fn main() {}
/// ```
pub fn open_with_table(url: &str, table: Option<&str>) -> Result<Arc<dyn Store>, StoreError> {
    open_with(url, &StoreOptions::default().with_table(table))
}

/// Like [`open`], with `options` (see [`StoreOptions`]: a database's
/// table, and on Redis the payload and Laravel's cache). A Redis URL's own
/// parameters (`?payload=laravel&laravel_cache_prefix=...`) win over
/// `options`, each on its own. An error naming the option for one the
/// store cannot take: a table on Redis; a PHP payload, Laravel's cache or
/// `payload_read = "auto"` on a database (milon/fuse's `DatabaseStore`
/// writes JSON); Laravel's prefixes without `payload = "laravel"`.
///
/// ```
/// # #[cfg(all(feature = "redis", feature = "sql"))]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
/// use fuse_breaker::config::PayloadKind;
/// use fuse_breaker::store::{Codec, Encoding, StoreOptions};
///
/// let mut options = StoreOptions::default();
/// options.payload = Some(PayloadKind::Laravel);
/// let store = fuse_breaker::store::open_with("redis://127.0.0.1:6379/1", &options)?;
/// assert_eq!(store.codec(), Codec::new(Encoding::Php));
///
/// let err = fuse_breaker::store::open_with("sqlite::memory:", &options).unwrap_err();
/// assert!(err.to_string().contains("no payload = \"laravel\""), "{err}");
/// # Ok(()) }
/// # #[cfg(not(all(feature = "redis", feature = "sql")))]
/// # fn main() {}
/// ```
pub fn open_with(url: &str, options: &StoreOptions) -> Result<Arc<dyn Store>, StoreError> {
    let Some(scheme) = scheme(url) else {
        return Err(StoreError::url(
            &shown(url, None),
            "not a store URL: it has no scheme (redis://host:port, postgres://host/db or \
             sqlite:path)",
        ));
    };
    if REDIS.contains(&scheme) {
        return redis(url, options);
    }
    if SQL.contains(&scheme) {
        return sql(url, options);
    }
    Err(StoreError::url(
        &shown(url, Some(scheme)),
        format_args!(
            "not a store URL: its scheme {scheme:?} is none of a store's ({}, {})",
            REDIS.join(", "),
            SQL.join(", ")
        ),
    ))
}

#[cfg(feature = "redis")]
fn redis(url: &str, options: &StoreOptions) -> Result<Arc<dyn Store>, StoreError> {
    Ok(Arc::new(crate::store::RedisStore::open_with(url, options)?))
}

#[cfg(not(feature = "redis"))]
fn redis(url: &str, _: &StoreOptions) -> Result<Arc<dyn Store>, StoreError> {
    Err(missing(url, "redis"))
}

#[cfg(feature = "sql")]
fn sql(url: &str, options: &StoreOptions) -> Result<Arc<dyn Store>, StoreError> {
    let mut store = crate::store::SqlStore::open(url)?;
    if let Some(refused) = options.database_refuses() {
        return Err(StoreError::url(store.name(), refused));
    }
    if let Some(table) = &options.table {
        store = store.with_table(table)?;
    }
    Ok(Arc::new(store))
}

#[cfg(not(feature = "sql"))]
fn sql(url: &str, _: &StoreOptions) -> Result<Arc<dyn Store>, StoreError> {
    Err(missing(url, "sql"))
}

/// The error of a store this build has not.
#[cfg(not(all(feature = "redis", feature = "sql")))]
fn missing(url: &str, feature: &str) -> StoreError {
    let scheme = scheme(url);
    StoreError::url(
        &shown(url, scheme),
        format_args!(
            "not a store URL of this build: {:?} needs the crate's feature `{feature}`",
            scheme.unwrap_or_default()
        ),
    )
}

/// The scheme of `url` (RFC 3986: a letter, then letters, digits, `+`,
/// `-` and `.`, up to the first `:`), if it has one.
fn scheme(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// How an error names `url`: without its user and password (see
/// [`redact`](crate::redact)); a string with no `://`, where nothing says
/// what is a password, by its scheme alone.
fn shown(url: &str, scheme: Option<&str>) -> String {
    if url.contains("://") {
        return crate::store::backend::error::public_name(url);
    }
    match scheme {
        Some(scheme) => format!("{scheme}:…"),
        None => "(a URL with no scheme)".to_owned(),
    }
}

#[cfg(test)]
mod tests;
