//! [`SqlStore`]: a [`Store`] in a table of PostgreSQL or SQLite (feature
//! `sql`), the table milon/fuse's `DatabaseStore` uses.

mod classify;
mod postgres;
mod sqlite;
mod table;

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

use super::changes::Listening;
use super::error::public_name;
use super::payload::{self, PayloadError};
use super::{Changes, KeyPage, Loaded, Store, StoreError, Swap};
use table::Table;

/// How long a round trip to PostgreSQL may take before the store counts as
/// unreachable (the fallback then decides).
const POSTGRES_TIMEOUT: Duration = Duration::from_millis(500);

/// How long SQLite may wait for another process's write lock before a
/// round trip fails (its busy timeout), and how long a round trip may take.
const SQLITE_BUSY: Duration = Duration::from_secs(5);

/// A [`Store`] in a table of PostgreSQL or SQLite: milon/fuse's
/// `fuse_circuits`, made atomic. Cheap to share: put it in an `Arc` and
/// give it to every circuit. Create the table with
/// [`ensure_schema`](Self::ensure_schema) (or milon/fuse's migration).
///
/// One row per circuit: `key` (varchar(191), the primary key), `payload`
/// (the JSON snapshot; `json` on PostgreSQL, text on SQLite) and
/// `expires_at` (Unix seconds, nullable), as milon/fuse's migration makes
/// it. Each round trip is one statement, run with the `sqlx` crate:
///
/// - *load*: the database's time and the row's payload, unless it expired;
/// - *swap*: an `UPDATE` of the row if its payload is still the text the
///   caller read (or an `INSERT`, or an update of an expired row, if the
///   caller found none), which the database applies atomically under its
///   row (PostgreSQL) or write (SQLite) lock; on PostgreSQL the statement
///   also `pg_notify`s a transition to the cached circuits of every
///   process.
///
/// No rule of the circuit is written in SQL: the crate's model decides, the
/// database only compares and sets, on its own clock. A read takes no lock.
/// Expired rows read as absent and are deleted, at most [`SqlStore::SWEEP_ROWS`]
/// at a time, after every [`SqlStore::SWEEP_EVERY`] writes of a process (or by
/// [`SqlStore::sweep`]).
///
/// ```no_run
/// use std::sync::Arc;
/// use fuse_breaker::store::{SharedFuse, SqlStore};
///
/// # async fn run() -> Result<(), fuse_breaker::store::StoreError> {
/// let store = SqlStore::open("postgres://fuse@127.0.0.1/shop")?;
/// store.ensure_schema().await?;
/// let fuse = SharedFuse::builder("billing", Arc::new(store)).build();
/// let permit = fuse.try_acquire().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqlStore {
    name: String,
    table: Table,
    backend: Backend,
    statements: Arc<Statements>,
    channel: String,
    changes: Arc<Changes>,
    listening: Arc<Listening>,
    writes: Arc<AtomicU64>,
    runtime: tokio::runtime::Handle,
}

#[derive(Clone)]
enum Backend {
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

/// The store's statements, for its database and table: constant text and
/// the checked table name, values bound.
#[derive(Debug)]
struct Statements {
    load: Arc<str>,
    create: Arc<str>,
    update: Arc<str>,
    delete: Arc<str>,
    sweep: Arc<str>,
    keys: Arc<str>,
    schema: Arc<str>,
}

impl Statements {
    fn new(backend: &Backend, table: &Table) -> Self {
        match backend {
            Backend::Postgres(_) => postgres::statements(table),
            Backend::Sqlite(_) => sqlite::statements(table),
        }
    }
}

impl fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore")
            .field("name", &self.name)
            .field("table", &self.table.name())
            .finish_non_exhaustive()
    }
}

impl SqlStore {
    /// The channel transitions are announced on (PostgreSQL), unless
    /// [`with_channel`](Self::with_channel) names another.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::SqlStore::DEFAULT_CHANNEL, "fuse_changes");
    /// ```
    pub const DEFAULT_CHANNEL: &str = "fuse_changes";

    /// The table milon/fuse uses, unless [`with_table`](Self::with_table)
    /// names another.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::SqlStore::DEFAULT_TABLE, "fuse_circuits");
    /// ```
    pub const DEFAULT_TABLE: &str = table::DEFAULT_TABLE;

    /// How many expired rows one automatic sweep deletes at most.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::SqlStore::SWEEP_ROWS, 256);
    /// ```
    pub const SWEEP_ROWS: u64 = 256;

    /// After how many writes of a process its store sweeps expired rows.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::SqlStore::SWEEP_EVERY, 1024);
    /// ```
    pub const SWEEP_EVERY: u64 = 1024;

    /// A store on the database at `url`: `postgres://user@host:port/db`
    /// (or `postgresql://`), or `sqlite:path` (`sqlite://path`; the file
    /// is created if missing, in WAL mode). Connections are made on first
    /// use and remade after they drop. An error for a URL that is neither
    /// ([`StoreError::is_invalid_url`], no outage), and outside a tokio
    /// runtime (the connections' tasks run on it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let err = fuse_breaker::store::SqlStore::open("mysql://127.0.0.1/shop").unwrap_err();
    /// assert!(err.is_invalid_url());
    /// assert!(err.to_string().contains("mysql://127.0.0.1/shop is not a database URL"));
    /// # }
    /// ```
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let name = public_name(url);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(StoreError::unreachable(
                &name,
                "SqlStore::open was called outside a tokio runtime",
            ));
        };
        let table = Table::default();
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(8)
                .acquire_timeout(POSTGRES_TIMEOUT)
                .connect_lazy(url)
                .map_err(|err| StoreError::invalid_url(&name, "database", err))?;
            Backend::Postgres(pool)
        } else if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|err| StoreError::invalid_url(&name, "database", err))?
                .create_if_missing(true)
                .busy_timeout(SQLITE_BUSY);
            let pool = SqlitePoolOptions::new()
                .max_connections(4)
                .acquire_timeout(SQLITE_BUSY)
                .after_connect(|conn, _| Box::pin(sqlite::wal(conn, SQLITE_BUSY)))
                .connect_lazy_with(options);
            Backend::Sqlite(pool)
        } else {
            return Err(StoreError::invalid_url(
                &name,
                "database",
                "postgres://..., postgresql://... or sqlite:...",
            ));
        };
        Ok(SqlStore {
            name,
            statements: Arc::new(Statements::new(&backend, &table)),
            table,
            backend,
            channel: Self::DEFAULT_CHANNEL.to_owned(),
            changes: Arc::default(),
            listening: Arc::default(),
            writes: Arc::default(),
            runtime,
        })
    }

    /// Keeps circuits in the table `table` instead of
    /// [`DEFAULT_TABLE`](Self::DEFAULT_TABLE): letters, digits and
    /// underscores, not starting with a digit, at most 63 bytes (an error
    /// otherwise, naming it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// use fuse_breaker::store::SqlStore;
    /// let store = SqlStore::open("sqlite::memory:")?.with_table("shop_circuits")?;
    /// assert_eq!(store.table(), "shop_circuits");
    /// assert!(SqlStore::open("sqlite::memory:")?.with_table("x; DROP TABLE users").is_err());
    /// # Ok(()) }
    /// ```
    pub fn with_table(mut self, table: &str) -> Result<Self, StoreError> {
        self.table =
            Table::new(table).map_err(|reason| StoreError::unreachable(&self.name, reason))?;
        self.statements = Arc::new(Statements::new(&self.backend, &self.table));
        Ok(self)
    }

    /// Announces transitions on `channel` (PostgreSQL `NOTIFY`; default
    /// [`DEFAULT_CHANNEL`](Self::DEFAULT_CHANNEL)), and listens there: the
    /// processes of one fleet use the same one. SQLite has no channel:
    /// cached circuits on it see other processes' transitions within
    /// their staleness.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::SqlStore::open("postgres://127.0.0.1/shop")?
    ///     .with_channel("shop_fuse_changes");
    /// assert_eq!(store.channel(), "shop_fuse_changes");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// The table circuits are kept in.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::SqlStore::open("sqlite::memory:")?;
    /// assert_eq!(store.table(), "fuse_circuits");
    /// # Ok(()) }
    /// ```
    pub fn table(&self) -> &str {
        self.table.name()
    }

    /// The channel transitions are announced on (PostgreSQL).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::SqlStore::open("sqlite::memory:")?;
    /// assert_eq!(store.channel(), "fuse_changes");
    /// # Ok(()) }
    /// ```
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The statements that create the table and its index, for this
    /// store's database and table (idempotent: `IF NOT EXISTS`), as a
    /// migration would run them. The columns are milon/fuse's.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::SqlStore::open("postgres://127.0.0.1/shop")?;
    /// assert!(store.schema().contains("payload json NOT NULL"));
    /// let store = fuse_breaker::store::SqlStore::open("sqlite::memory:")?;
    /// assert!(store.schema().contains("payload text NOT NULL"));
    /// # Ok(()) }
    /// ```
    pub fn schema(&self) -> &str {
        &self.statements.schema
    }

    /// Creates the table and its index unless they exist: safe to call
    /// from every process at start.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::SqlStore::open("sqlite::memory:")?;
    /// store.ensure_schema().await?;
    /// store.ensure_schema().await?;
    /// # Ok(()) }
    /// ```
    pub async fn ensure_schema(&self) -> Result<(), StoreError> {
        let done = match &self.backend {
            Backend::Postgres(pool) => {
                postgres::ensure_schema(pool, &self.table, &self.statements.schema).await
            }
            Backend::Sqlite(pool) => sqlite::ensure_schema(pool, &self.statements.schema).await,
        };
        done.map_err(|err| self.failed("ensure_schema", &err))
    }

    /// Deletes at most `limit` expired rows; how many it deleted.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::SqlStore::open("sqlite::memory:")?;
    /// store.ensure_schema().await?;
    /// assert_eq!(store.sweep(100).await?, 0);
    /// # Ok(()) }
    /// ```
    pub async fn sweep(&self, limit: u64) -> Result<u64, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let swept = match &self.backend {
            Backend::Postgres(pool) => {
                let query = sqlx::query(safe(&self.statements.sweep))
                    .bind(limit)
                    .execute(pool);
                timed(POSTGRES_TIMEOUT, query)
                    .await
                    .map(|done| done.rows_affected())
            }
            Backend::Sqlite(pool) => {
                let query = sqlx::query(safe(&self.statements.sweep))
                    .bind(limit)
                    .execute(pool);
                timed(SQLITE_BUSY, query)
                    .await
                    .map(|done| done.rows_affected())
            }
        };
        swept.map_err(|err| self.failed("sweep", &err))
    }

    /// The error of a round trip: a payload of another type under `key` is
    /// an unreadable payload, data the database refused is a key it
    /// cannot keep a circuit under, anything else an outage, named.
    fn error(&self, key: &str, what: &str, err: &sqlx::Error) -> StoreError {
        if let sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) = err {
            return StoreError::payload(
                &self.name,
                PayloadError::new(key, format_args!("the row's payload is not text: {err}")),
            );
        }
        if classify::about_data(err, matches!(self.backend, Backend::Postgres(_))) {
            return StoreError::invalid_key(
                &self.name,
                key,
                format_args!("{what} on {} refused the data: {err}", self.table),
            );
        }
        self.failed(what, err)
    }

    fn failed(&self, what: &str, err: &sqlx::Error) -> StoreError {
        StoreError::unreachable(&self.name, format_args!("{what} on {}: {err}", self.table))
    }

    /// Counts a write, and every [`Self::SWEEP_EVERY`] of them sweeps expired
    /// rows in a task of its own.
    fn wrote(&self) {
        if self.writes.fetch_add(1, Ordering::Relaxed) % Self::SWEEP_EVERY == Self::SWEEP_EVERY - 1
        {
            let store = self.clone();
            self.runtime.spawn(async move {
                // A sweep that fails is tried again after the next writes.
                let _ = store.sweep(Self::SWEEP_ROWS).await;
            });
        }
    }

    /// The payload under `key` (unless it is above
    /// [`PayloadError::MAX_BYTES`]: the database sends its length alone)
    /// and the database's time.
    async fn loaded(&self, key: &str) -> Result<Loaded, StoreError> {
        let key = classify::key(&self.name, key)?;
        let limit = i64::try_from(PayloadError::MAX_BYTES).unwrap_or(i64::MAX);
        let row: Result<(i64, Option<i64>, Option<String>), sqlx::Error> = match &self.backend {
            Backend::Postgres(pool) => {
                let query = sqlx::query_as(safe(&self.statements.load))
                    .bind(key)
                    .bind(limit)
                    .fetch_one(pool);
                timed(POSTGRES_TIMEOUT, query).await
            }
            Backend::Sqlite(pool) => {
                let query = sqlx::query_as(safe(&self.statements.load))
                    .bind(key)
                    .bind(limit)
                    .fetch_one(pool);
                timed(SQLITE_BUSY, query).await
            }
        };
        let (now, length, payload) = row.map_err(|err| self.error(key, "load", &err))?;
        let now = classify::clock(now).ok_or_else(|| {
            StoreError::unreachable(
                &self.name,
                format_args!("its clock answered {now} us since the Unix epoch, which is no time"),
            )
        })?;
        self.changes.saw_clock(now);
        if let (None, Some(length)) = (&payload, length)
            && length > limit
        {
            let length = u64::try_from(length).unwrap_or(u64::MAX);
            return Err(StoreError::payload(
                &self.name,
                payload::too_large(key, length),
            ));
        }
        Ok(Loaded {
            payload: payload.map(String::into_bytes),
            now,
        })
    }
}

/// A statement of the store's: constant text and a checked table name
/// ([`Table`]), nothing else put in it (values are bound).
fn safe(sql: &Arc<str>) -> sqlx::AssertSqlSafe<Arc<str>> {
    sqlx::AssertSqlSafe(sql.clone())
}

/// `query`, failing as a timeout after `limit`.
async fn timed<T>(
    limit: Duration,
    query: impl Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, sqlx::Error> {
    tokio::time::timeout(limit, query)
        .await
        .unwrap_or(Err(sqlx::Error::PoolTimedOut))
}

/// The payload as text (the column's type): every payload this crate
/// writes is, and one read from the column was.
fn text<'a>(store: &SqlStore, key: &str, bytes: &'a [u8]) -> Result<&'a str, StoreError> {
    std::str::from_utf8(bytes).map_err(|_| {
        StoreError::payload(
            &store.name,
            PayloadError::new(key, "the payload is not UTF-8"),
        )
    })
}

#[async_trait::async_trait]
impl Store for SqlStore {
    fn name(&self) -> &str {
        &self.name
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        self.loaded(key).await
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        let key = classify::key(&self.name, key)?;
        let new = text(self, key, new)?;
        let expected = expected.map(|bytes| text(self, key, bytes)).transpose()?;
        let ttl = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
        let written: Result<u64, sqlx::Error> = match &self.backend {
            Backend::Postgres(pool) => {
                let channel = if announce { self.channel.as_str() } else { "" };
                let query = match expected {
                    None => sqlx::query_as(safe(&self.statements.create))
                        .bind(key)
                        .bind(new)
                        .bind(ttl)
                        .bind(channel),
                    Some(expected) => sqlx::query_as(safe(&self.statements.update))
                        .bind(key)
                        .bind(new)
                        .bind(ttl)
                        .bind(channel)
                        .bind(expected),
                };
                timed(POSTGRES_TIMEOUT, query.fetch_one(pool))
                    .await
                    .map(|(written, _told): (i64, i64)| u64::try_from(written).unwrap_or(0))
            }
            Backend::Sqlite(pool) => {
                let query = match expected {
                    None => sqlx::query(safe(&self.statements.create))
                        .bind(key)
                        .bind(new)
                        .bind(ttl),
                    Some(expected) => sqlx::query(safe(&self.statements.update))
                        .bind(key)
                        .bind(new)
                        .bind(ttl)
                        .bind(expected),
                };
                timed(SQLITE_BUSY, query.execute(pool))
                    .await
                    .map(|done| done.rows_affected())
            }
        };
        if written.map_err(|err| self.error(key, "swap", &err))? == 1 {
            self.wrote();
            return Ok(Swap::Written);
        }
        Ok(Swap::Changed(self.loaded(key).await?))
    }

    /// One statement per page, in byte order: the prefix compared as
    /// text (not a `LIKE` or `GLOB` pattern), resumed after the page's
    /// last key (on SQLite the cursor is that key's bytes in hex: a key
    /// may be a blob there).
    async fn keys(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        let limit = limit.max(1);
        // One row more than the page tells whether another page follows.
        let rows = i64::try_from(limit).unwrap_or(i64::MAX - 1) + 1;
        let mut found: Vec<Vec<u8>> = match &self.backend {
            Backend::Postgres(pool) => {
                let query = sqlx::query_scalar(safe(&self.statements.keys))
                    .bind(prefix)
                    .bind(after)
                    .bind(rows)
                    .fetch_all(pool);
                timed(POSTGRES_TIMEOUT, query)
                    .await
                    .map(|keys: Vec<String>| keys.into_iter().map(String::into_bytes).collect())
            }
            Backend::Sqlite(pool) => {
                let after = after
                    .map(|after| {
                        sqlite::bytes_of(after).ok_or_else(|| {
                            StoreError::unreachable(
                                &self.name,
                                format_args!(
                                    "{after:?} is not a cursor of this store's key listing"
                                ),
                            )
                        })
                    })
                    .transpose()?;
                let query = sqlx::query_scalar(safe(&self.statements.keys))
                    .bind(prefix)
                    .bind(after)
                    .bind(rows)
                    .fetch_all(pool);
                timed(SQLITE_BUSY, query).await
            }
        }
        .map_err(|err| self.failed("keys", &err))?;
        let more = found.len() > limit;
        found.truncate(limit);
        let next = more
            .then(|| found.last())
            .flatten()
            .map(|last| match &self.backend {
                Backend::Postgres(_) => String::from_utf8_lossy(last).into_owned(),
                Backend::Sqlite(_) => sqlite::cursor_of(last),
            });
        let mut keys = Vec::with_capacity(found.len());
        let mut not_utf8 = Vec::new();
        for key in found {
            if !key.starts_with(prefix.as_bytes()) {
                continue;
            }
            match String::from_utf8(key) {
                Ok(key) => keys.push(key),
                Err(err) => not_utf8.push(err.into_bytes()),
            }
        }
        let mut page = KeyPage::new(keys, next);
        page.not_utf8 = not_utf8;
        Ok(page)
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        let deleted: Result<(), sqlx::Error> = match &self.backend {
            Backend::Postgres(pool) => {
                let channel = if announce { self.channel.as_str() } else { "" };
                let query = sqlx::query(safe(&self.statements.delete))
                    .bind(key)
                    .bind(channel)
                    .execute(pool);
                timed(POSTGRES_TIMEOUT, query).await.map(drop)
            }
            Backend::Sqlite(pool) => {
                let query = sqlx::query(safe(&self.statements.delete))
                    .bind(key)
                    .execute(pool);
                timed(SQLITE_BUSY, query).await.map(drop)
            }
        };
        deleted.map_err(|err| self.error(key, "delete", &err))
    }

    /// On PostgreSQL, starts listening on the channel the first time (a
    /// cached circuit is being built); SQLite has none.
    fn changes(&self) -> Option<&Changes> {
        let Backend::Postgres(pool) = &self.backend else {
            return None;
        };
        let (pool, channel) = (pool.clone(), self.channel.clone());
        let changes: Weak<Changes> = Arc::downgrade(&self.changes);
        self.listening
            .start(&self.runtime, changes.clone(), move || {
                postgres::listen(pool.clone(), channel.clone(), changes.clone())
            });
        Some(&self.changes)
    }
}
