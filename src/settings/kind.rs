//! [`StoreKind`]: where a registry keeps its circuits, as a file names it.

crate::choice::choices! {
    /// Where a registry keeps its circuits (`store = "..."` in a file,
    /// `FUSE_STORE`): in this process ([`Settings::registry`](crate::settings::Settings::registry)), or in Redis or
    /// a database for every process of a fleet (`Settings::shared_registry`,
    /// with `redis_url` and feature `redis`, or `database_url` and feature
    /// `sql`).
    ///
    /// ```
    /// use fuse_breaker::{settings::Settings, settings::StoreKind};
    ///
    /// assert_eq!(Settings::from_toml(r#"store = "memory""#)?.store, StoreKind::Memory);
    /// assert_eq!(Settings::from_toml(r#"store = "redis""#)?.store, StoreKind::Redis);
    /// assert_eq!(Settings::from_toml(r#"store = "database""#)?.store, StoreKind::Database);
    /// assert!(Settings::from_toml(r#"store = "carrier pigeon""#).is_err());
    /// # Ok::<(), fuse_breaker::settings::SettingsError>(())
    /// ```
    pub enum StoreKind ("store", "fuse_breaker::settings::StoreKind") {
        /// In this process, lock-free.
        Memory = "memory",
        /// In Redis (or Valkey), shared by every process that uses the keys.
        Redis = "redis",
        /// In a table of PostgreSQL or SQLite (milon/fuse's `fuse_circuits`),
        /// shared by every process that uses the rows.
        Database = "database",
    }
}

/// The former name of [`StoreKind`], which said the same as the
/// `store::Store` trait.
#[deprecated(note = "renamed `StoreKind`")]
#[doc(hidden)]
pub type Store = StoreKind;
