//! Shared circuits from a configuration file (features `config-file` and
//! `redis` or `sql`): `store = "redis"` and `redis_url`, or
//! `store = "database"`, `database_url` and `database_table`; `payload`,
//! `payload_read` and Laravel's prefixes; `fallback`.

use super::SharedRegistry;
use crate::settings::{Settings, SettingsError, StoreKind};

impl Settings {
    /// A registry of circuits shared through the settings' store
    /// (`store = "redis"` and `redis_url`, or `FUSE_STORE=redis` and
    /// `FUSE_REDIS_URL`; `store = "database"`, `database_url` and
    /// `database_table`, or `FUSE_STORE=database`, `FUSE_DATABASE_URL` and
    /// `FUSE_DATABASE_TABLE`), with their defaults, per-name
    /// configurations, app, fallback and capacity; on Redis, the payload
    /// and Laravel's cache (`payload`, `payload_read`,
    /// `laravel_redis_prefix`, `laravel_cache_prefix`; the Redis URL's
    /// parameters of the same names win over them, each on its own).
    /// Call it inside a tokio
    /// runtime; connections are made on first use (a database's table is
    /// not made: run [`SqlStore::ensure_schema`](super::SqlStore::ensure_schema)
    /// or milon/fuse's migration first).
    ///
    /// ```
    /// # #[cfg(feature = "redis")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::settings::SettingsError> {
    /// let settings = fuse_breaker::settings::Settings::from_toml(r#"
    ///     store = "redis"
    ///     redis_url = "redis://127.0.0.1:6379"
    ///     fallback = "reject"
    ///     app = "shop"
    ///
    ///     [breakers.billing]
    ///     failure_threshold = 2
    /// "#)?;
    /// let registry = settings.shared_registry()?;
    /// let billing = registry.get("billing");
    /// assert_eq!(billing.key(), "fuse:shop:billing");
    /// assert_eq!(billing.config().failure_threshold(), 2);
    /// assert_eq!(billing.fallback(), fuse_breaker::config::Fallback::Reject);
    ///
    /// let in_process = fuse_breaker::settings::Settings::from_toml("")?;
    /// assert!(in_process.shared_registry().is_err());
    /// # Ok(()) }
    /// # #[cfg(not(feature = "redis"))]
    /// # fn main() {}
    /// ```
    pub fn shared_registry(&self) -> Result<SharedRegistry, SettingsError> {
        self.check()?;
        let (url, table, needed) = match self.store {
            StoreKind::Redis => (
                self.redis_url.as_deref(),
                None,
                "store = \"redis\" needs redis_url (or FUSE_REDIS_URL)",
            ),
            StoreKind::Database => (
                self.database_url.as_deref(),
                self.database_table.as_deref(),
                "store = \"database\" needs database_url (or FUSE_DATABASE_URL)",
            ),
            StoreKind::Memory => {
                return Err(SettingsError::Store {
                    reason: "store = \"memory\" keeps circuits in this process: make them \
                             with Settings::registry"
                        .to_owned(),
                });
            }
        };
        let url = url.ok_or_else(|| SettingsError::Store {
            reason: needed.to_owned(),
        })?;
        let mut options = super::StoreOptions::default().with_table(table);
        options.payload = self.payload;
        options.payload_read = self.payload_read;
        options
            .laravel_redis_prefix
            .clone_from(&self.laravel_redis_prefix);
        options
            .laravel_cache_prefix
            .clone_from(&self.laravel_cache_prefix);
        let store = super::open_with(url, &options).map_err(|err| SettingsError::Store {
            reason: err.to_string(),
        })?;
        let builder = self
            .registry_builder()?
            .store(store)
            .fallback(self.fallback);
        // Checked above, as `Settings::registry` says.
        builder
            .build()
            .map_err(|source| self.invalid("registry", source))
    }
}
