//! Where a [`RedisStore`] keeps a circuit and how it spells it: under the
//! circuit's key (the default), or under Laravel's cache key of it
//! ([`LaravelCache`]: Laravel's Redis connection's prefix, then its
//! cache's, then the key), in JSON or PHP's `serialize()` ([`Codec`]).

use std::sync::Arc;

use super::RedisStore;
use crate::config::ConfigError;
use crate::config::PayloadKind;
use crate::store::{Codec, Encoding, StoreError, StoreOptions};

/// Laravel's cache on Redis, where milon/fuse keeps a circuit by default:
/// the circuit's key `fuse:billing` is the Redis key
/// `laravel_database_laravel_cache_fuse:billing`, the Redis connection's
/// prefix (Laravel's `database.redis.options.prefix`, from `REDIS_PREFIX`,
/// default `Str::slug(APP_NAME, '_').'_database_'`) followed by the
/// cache's (`cache.prefix`, from `CACHE_PREFIX`, default
/// `Str::slug(APP_NAME, '_').'_cache_'`), in Laravel's cache database
/// (`REDIS_CACHE_DB`, default 1: the database of the store's URL).
///
/// ```
/// use fuse_breaker::store::LaravelCache;
///
/// let laravel = LaravelCache::default();
/// assert_eq!(laravel.key("fuse:billing"), "laravel_database_laravel_cache_fuse:billing");
///
/// // APP_NAME=Shop
/// let shop = LaravelCache::new("shop_database_", "shop_cache_")?;
/// assert_eq!(shop.key("fuse:billing"), "shop_database_shop_cache_fuse:billing");
///
/// let err = LaravelCache::new("shop\n", "shop_cache_").unwrap_err();
/// assert_eq!(err.setting(), "laravel_redis_prefix");
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaravelCache {
    redis_prefix: String,
    cache_prefix: String,
}

impl Default for LaravelCache {
    /// Laravel's defaults for an application named `Laravel`.
    fn default() -> Self {
        LaravelCache {
            redis_prefix: Self::DEFAULT_REDIS_PREFIX.to_owned(),
            cache_prefix: Self::DEFAULT_CACHE_PREFIX.to_owned(),
        }
    }
}

impl LaravelCache {
    /// The Redis connection's prefix of an application named `Laravel`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::LaravelCache::DEFAULT_REDIS_PREFIX, "laravel_database_");
    /// ```
    pub const DEFAULT_REDIS_PREFIX: &'static str = "laravel_database_";

    /// The cache's prefix of an application named `Laravel`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::LaravelCache::DEFAULT_CACHE_PREFIX, "laravel_cache_");
    /// ```
    pub const DEFAULT_CACHE_PREFIX: &'static str = "laravel_cache_";

    /// Laravel's cache with these prefixes (either may be empty, as
    /// Laravel allows); an error naming the setting
    /// (`laravel_redis_prefix`, `laravel_cache_prefix`) for a prefix that
    /// holds a control character.
    ///
    /// ```
    /// use fuse_breaker::store::LaravelCache;
    /// let bare = LaravelCache::new("", "")?;
    /// assert_eq!(bare.key("fuse:billing"), "fuse:billing");
    /// assert!(LaravelCache::new("shop_database_", "\u{1b}[31m").is_err());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn new(
        redis_prefix: impl Into<String>,
        cache_prefix: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        let (redis_prefix, cache_prefix) = (redis_prefix.into(), cache_prefix.into());
        for (setting, prefix) in [
            ("laravel_redis_prefix", &redis_prefix),
            ("laravel_cache_prefix", &cache_prefix),
        ] {
            if prefix.chars().any(char::is_control) {
                return Err(ConfigError::new(
                    setting,
                    format!("{prefix:?}"),
                    "must not contain control characters (a piece of Laravel's cache keys)"
                        .to_owned(),
                ));
            }
        }
        Ok(LaravelCache {
            redis_prefix,
            cache_prefix,
        })
    }

    /// The Redis connection's prefix.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::LaravelCache::default().redis_prefix(), "laravel_database_");
    /// ```
    pub fn redis_prefix(&self) -> &str {
        &self.redis_prefix
    }

    /// The cache's prefix.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::LaravelCache::default().cache_prefix(), "laravel_cache_");
    /// ```
    pub fn cache_prefix(&self) -> &str {
        &self.cache_prefix
    }

    /// The Redis key of the circuit under `key`: both prefixes, then the key.
    ///
    /// ```
    /// let laravel = fuse_breaker::store::LaravelCache::default();
    /// assert_eq!(laravel.key("fuse:shop:billing"), "laravel_database_laravel_cache_fuse:shop:billing");
    /// ```
    pub fn key(&self, key: &str) -> String {
        format!("{}{}{key}", self.redis_prefix, self.cache_prefix)
    }
}

impl RedisStore {
    /// Keeps circuits in Laravel's cache, where milon/fuse keeps them by
    /// default: the circuit under `fuse:billing` lives at
    /// [`laravel.key("fuse:billing")`](LaravelCache::key) in every
    /// operation (reads, writes, resets, announcements, a cluster's slot,
    /// and [`Store::keys`](crate::store::Store::keys), which lists
    /// circuits' keys without the prefixes), written as PHP's
    /// `serialize()` of milon/fuse's array (the [`codec`](crate::store::Store::codec)
    /// becomes `Codec::new(Encoding::Php)`; call
    /// [`with_codec`](Self::with_codec) after this to read JSON too).
    /// Open the store on Laravel's cache database (`REDIS_CACHE_DB`,
    /// default 1): `redis://host:6379/1`, `redis+sentinel://.../name/1`
    /// (a cluster has database 0 alone).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// use fuse_breaker::store::{Codec, Encoding, LaravelCache, RedisStore, Store};
    ///
    /// let store = RedisStore::open("redis://127.0.0.1:6379/1")?.laravel_cache(LaravelCache::default());
    /// assert_eq!(store.redis_key("fuse:billing"), "laravel_database_laravel_cache_fuse:billing");
    /// assert_eq!(store.codec(), Codec::new(Encoding::Php));
    /// // The same, from the URL.
    /// let same = RedisStore::open("redis://127.0.0.1:6379/1?payload=laravel")?;
    /// assert_eq!(same.laravel(), Some(&LaravelCache::default()));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn laravel_cache(mut self, laravel: LaravelCache) -> Self {
        self.prefix = Arc::from(laravel.key(""));
        self.laravel = Some(laravel);
        self.codec = Codec::new(Encoding::Php);
        self
    }

    /// Reads and writes payloads as `codec` says (default: JSON alone;
    /// `Codec::new(Encoding::Php)` for PHP's `serialize()`, under the
    /// circuit's own key unless [`laravel_cache`](Self::laravel_cache)
    /// says Laravel's; [`Codec::reading_any`] to read either).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// use fuse_breaker::store::{Codec, Encoding, LaravelCache, RedisStore, Store};
    ///
    /// let php = RedisStore::open("redis://127.0.0.1:6379")?.with_codec(Codec::new(Encoding::Php));
    /// assert_eq!(php.redis_key("fuse:billing"), "fuse:billing");
    /// let moving = RedisStore::open("redis://127.0.0.1:6379/1")?
    ///     .laravel_cache(LaravelCache::default())
    ///     .with_codec(Codec::new(Encoding::Php).reading_any());
    /// assert!(moving.codec().reads(Encoding::Json));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Laravel's cache, when the store keeps circuits there.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// assert_eq!(fuse_breaker::store::RedisStore::open("redis://127.0.0.1:6379")?.laravel(), None);
    /// # Ok(()) }
    /// ```
    pub fn laravel(&self) -> Option<&LaravelCache> {
        self.laravel.as_ref()
    }

    /// The Redis key of the circuit under `key`: `key` itself, or
    /// Laravel's cache key of it ([`laravel_cache`](Self::laravel_cache)).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::RedisStore::open("redis://127.0.0.1:6379")?;
    /// assert_eq!(store.redis_key("fuse:billing"), "fuse:billing");
    /// # Ok(()) }
    /// ```
    pub fn redis_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// A store on `url` with `options` (see [`StoreOptions`]): the URL's
    /// own parameters win over them, each on its own.
    pub(crate) fn open_with(url: &str, options: &StoreOptions) -> Result<Self, StoreError> {
        let name = super::public_name(url);
        let invalid =
            |reason: &dyn std::fmt::Display| StoreError::invalid_url(&name, "Redis", reason);
        let (rest, given) = super::params::split(url).map_err(|err| invalid(&err))?;
        let options = options.clone().under(given);
        if let Some(table) = &options.table {
            return Err(StoreError::url(
                &name,
                format_args!("a Redis server, which keeps no table ({table:?} was given)"),
            ));
        }
        if let Some(stray) = options.stray_prefixes() {
            return Err(StoreError::url(
                &name,
                format_args!("a Redis store whose {stray}"),
            ));
        }
        let mut store = Self::open_at(&name, url, &rest)?;
        if options.payload == Some(PayloadKind::Laravel) {
            let laravel = LaravelCache::new(
                options
                    .laravel_redis_prefix
                    .as_deref()
                    .unwrap_or(LaravelCache::DEFAULT_REDIS_PREFIX),
                options
                    .laravel_cache_prefix
                    .as_deref()
                    .unwrap_or(LaravelCache::DEFAULT_CACHE_PREFIX),
            )
            .map_err(|err| StoreError::url(&name, format_args!("a Redis store with an {err}")))?;
            store = store.laravel_cache(laravel);
        }
        Ok(store.with_codec(options.codec()))
    }
}
