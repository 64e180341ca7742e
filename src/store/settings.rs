//! Shared circuits from a configuration file (features `config-file` and
//! `redis` or `sql`): `store = "redis"` and `redis_url`, or
//! `store = "database"`, `database_url` and `database_table`; `fallback`.

use std::sync::Arc;

use super::SharedRegistry;
use crate::settings::{Settings, SettingsError, StoreKind};

/// The error of a store this build has not.
#[cfg(not(all(feature = "redis", feature = "sql")))]
fn missing(store: &str, feature: &str) -> SettingsError {
    SettingsError::Store {
        reason: format!("store = {store:?} needs the crate's feature `{feature}`"),
    }
}

impl Settings {
    /// A registry of circuits shared through the settings' store
    /// (`store = "redis"` and `redis_url`, or `FUSE_STORE=redis` and
    /// `FUSE_REDIS_URL`; `store = "database"`, `database_url` and
    /// `database_table`, or `FUSE_STORE=database`, `FUSE_DATABASE_URL` and
    /// `FUSE_DATABASE_TABLE`), with their defaults, per-name
    /// configurations, app, fallback and capacity. Call it inside a tokio
    /// runtime; connections are made on first use (a database's table is
    /// not made: run [`SqlStore::ensure_schema`](super::SqlStore::ensure_schema)
    /// or milon/fuse's migration first).
    ///
    /// ```
    /// # #[cfg(feature = "redis")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::SettingsError> {
    /// let settings = fuse_breaker::Settings::from_toml(r#"
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
    /// assert_eq!(billing.fallback(), fuse_breaker::Fallback::Reject);
    ///
    /// let in_process = fuse_breaker::Settings::from_toml("")?;
    /// assert!(in_process.shared_registry().is_err());
    /// # Ok(()) }
    /// # #[cfg(not(feature = "redis"))]
    /// # fn main() {}
    /// ```
    pub fn shared_registry(&self) -> Result<SharedRegistry, SettingsError> {
        self.check()?;
        let defaults = self.config()?;
        let store = |err: super::StoreError| SettingsError::Store {
            reason: err.to_string(),
        };
        let store: Arc<dyn super::Store> = match self.store {
            #[cfg(feature = "redis")]
            StoreKind::Redis => {
                let url = self
                    .redis_url
                    .as_deref()
                    .ok_or_else(|| SettingsError::Store {
                        reason: "store = \"redis\" needs redis_url (or FUSE_REDIS_URL)".to_owned(),
                    })?;
                Arc::new(super::RedisStore::open(url).map_err(store)?)
            }
            #[cfg(feature = "sql")]
            StoreKind::Database => {
                let url = self
                    .database_url
                    .as_deref()
                    .ok_or_else(|| SettingsError::Store {
                        reason: "store = \"database\" needs database_url (or FUSE_DATABASE_URL)"
                            .to_owned(),
                    })?;
                let mut sql = super::SqlStore::open(url).map_err(store)?;
                if let Some(table) = &self.database_table {
                    sql = sql.with_table(table).map_err(store)?;
                }
                Arc::new(sql)
            }
            #[cfg(not(feature = "redis"))]
            StoreKind::Redis => return Err(missing("redis", "redis")),
            #[cfg(not(feature = "sql"))]
            StoreKind::Database => return Err(missing("database", "sql")),
            StoreKind::Memory => {
                return Err(SettingsError::Store {
                    reason: "store = \"memory\" keeps circuits in this process: make them \
                             with Settings::registry"
                        .to_owned(),
                });
            }
        };
        let mut builder = SharedRegistry::builder(store)
            .defaults(defaults)
            .fallback(self.fallback);
        if let Some(app) = &self.app {
            builder = builder.app(app.clone());
        }
        if let Some(max) = self.max_circuits {
            builder = builder.max_circuits(max);
        }
        for (name, overrides) in &self.breakers {
            builder = builder.overrides(name.clone(), overrides.clone());
        }
        // Checked above, as `Settings::registry` says.
        builder
            .build()
            .map_err(|source| self.invalid("registry", source))
    }
}
