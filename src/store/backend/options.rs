//! [`StoreOptions`]: what a store is opened with besides its URL (a
//! database's table, the payload and where it lives), as settings, the
//! `FUSE_*` variables and the `fuse` command's flags give them; and how
//! they combine with a Redis URL's own parameters.

#[cfg(feature = "redis")]
use crate::store::{Codec, Encoding};
use crate::{config::PayloadKind, config::PayloadRead};

/// What [`open_with`](crate::store::open_with) opens a store with besides its
/// URL. Every field is optional: `None` leaves it to the URL's parameter
/// of the same name (a Redis URL's `?payload=laravel&...`), then to the
/// default. A Redis URL's parameters win over these (each parameter on
/// its own): the URL is what names the store.
///
/// - `table`: a database's table (see
///   [`SqlStore::with_table`](crate::store::SqlStore::with_table)); none on Redis.
/// - `payload`: `json` (default), `php` (PHP's `serialize()` under the
///   circuit's key; Redis only) or `laravel` (PHP's `serialize()` under
///   Laravel's cache key; Redis only, see `RedisStore::laravel_cache`).
///   A database keeps JSON, as milon/fuse's `DatabaseStore` writes it.
/// - `payload_read`: `written` (default) or `auto` (JSON and PHP alike;
///   Redis only).
/// - `laravel_redis_prefix`, `laravel_cache_prefix`: the prefixes of
///   Laravel's cache keys (defaults `laravel_database_` and
///   `laravel_cache_`; with `payload = laravel` alone).
///
/// ```
/// use fuse_breaker::config::PayloadKind;
/// use fuse_breaker::store::StoreOptions;
///
/// let mut options = StoreOptions::default();
/// options.payload = Some(PayloadKind::Laravel);
/// options.laravel_redis_prefix = Some("shop_database_".to_owned());
/// assert_eq!(options.table, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreOptions {
    /// A database's table.
    pub table: Option<String>,
    /// What the store writes, and where.
    pub payload: Option<PayloadKind>,
    /// What the store reads.
    pub payload_read: Option<PayloadRead>,
    /// The Redis connection's prefix of Laravel's keys (`REDIS_PREFIX`).
    pub laravel_redis_prefix: Option<String>,
    /// The cache's prefix of Laravel's keys (`CACHE_PREFIX`).
    pub laravel_cache_prefix: Option<String>,
}

impl StoreOptions {
    /// These options with a database's `table` (`None`: the default).
    ///
    /// ```
    /// let options = fuse_breaker::store::StoreOptions::default().with_table(Some("shop_circuits"));
    /// assert_eq!(options.table.as_deref(), Some("shop_circuits"));
    /// ```
    #[must_use]
    pub fn with_table(mut self, table: Option<&str>) -> Self {
        self.table = table.map(str::to_owned);
        self
    }

    /// `self` with every option that `url` (a URL's parameters) gives
    /// replaced by the URL's.
    #[cfg(feature = "redis")]
    pub(crate) fn under(self, url: StoreOptions) -> StoreOptions {
        StoreOptions {
            table: url.table.or(self.table),
            payload: url.payload.or(self.payload),
            payload_read: url.payload_read.or(self.payload_read),
            laravel_redis_prefix: url.laravel_redis_prefix.or(self.laravel_redis_prefix),
            laravel_cache_prefix: url.laravel_cache_prefix.or(self.laravel_cache_prefix),
        }
    }

    /// The codec these options ask for.
    #[cfg(feature = "redis")]
    pub(crate) fn codec(&self) -> Codec {
        let encoding = match self.payload.unwrap_or_default() {
            PayloadKind::Json => Encoding::Json,
            PayloadKind::Php | PayloadKind::Laravel => Encoding::Php,
        };
        match self.payload_read.unwrap_or_default() {
            PayloadRead::Written => Codec::new(encoding),
            PayloadRead::Auto => Codec::new(encoding).reading_any(),
        }
    }

    /// The Laravel prefixes given, by name, when the payload is not
    /// `laravel`: what is wrong with them then.
    #[cfg(feature = "redis")]
    pub(crate) fn stray_prefixes(&self) -> Option<String> {
        let payload = self.payload.unwrap_or_default();
        if payload == PayloadKind::Laravel {
            return None;
        }
        let given: Vec<&str> = [
            ("laravel_redis_prefix", &self.laravel_redis_prefix),
            ("laravel_cache_prefix", &self.laravel_cache_prefix),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_ref().map(|_| name))
        .collect();
        (!given.is_empty()).then(|| {
            format!(
                "{} applies to payload = \"laravel\" alone, and the payload is {:?}",
                given.join(" and "),
                payload.as_str()
            )
        })
    }

    /// What is wrong with these options for a database (which keeps
    /// JSON, as milon/fuse's `DatabaseStore` writes it), if anything.
    #[cfg(feature = "sql")]
    pub(crate) fn database_refuses(&self) -> Option<String> {
        let why = "a database keeps JSON, as milon/fuse's DatabaseStore writes it; \
                   PHP payloads and Laravel's cache keys live on Redis";
        if let Some(payload) = self.payload.filter(|&p| p != PayloadKind::Json) {
            return Some(format!(
                "a database, which takes no payload = {:?} ({why})",
                payload.as_str()
            ));
        }
        if self.payload_read == Some(PayloadRead::Auto) {
            return Some(format!(
                "a database, which takes no payload_read = \"auto\" ({why})"
            ));
        }
        let prefix = [
            ("laravel_redis_prefix", &self.laravel_redis_prefix),
            ("laravel_cache_prefix", &self.laravel_cache_prefix),
        ]
        .into_iter()
        .find_map(|(name, value)| value.as_ref().map(|_| name));
        prefix.map(|name| format!("a database, which takes no {name} ({why})"))
    }
}
