//! [`SqlStore`]: a [`Store`](crate::store::Store) in a table of PostgreSQL or
//! SQLite (feature `sql`), the table milon/fuse's `DatabaseStore` uses:
//! opening it and its table here, its round trips in `trips`.

mod classify;
mod increment;
mod postgres;
mod sqlite;
mod table;
mod trips;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

use crate::store::backend::changes::Listening;
use crate::store::backend::error::public_name;
use crate::store::{Changes, StoreError};
use table::Table;

/// How long a round trip to PostgreSQL may take before the store counts as
/// unreachable (the fallback then decides).
const POSTGRES_TIMEOUT: Duration = Duration::from_millis(500);

/// How long SQLite may wait for another process's write lock before a
/// round trip fails (its busy timeout), and how long a round trip may take.
const SQLITE_BUSY: Duration = Duration::from_secs(5);

/// A [`Store`](crate::store::Store) in a table of PostgreSQL or SQLite:
/// milon/fuse's `fuse_circuits`, made atomic. Cheap to share: put it in an
/// `Arc` and give it to every circuit. Create the table with
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
///   process;
/// - *increment* (a closed success under `rate`): an `UPDATE` whose new
///   payload the statement computes from the row as the database holds it
///   ([`Increment::apply`](crate::store::Increment::apply)'s rule in SQL), so
///   that two processes' successes commute.
///
/// Only the increment is a rule of the circuit written in SQL (adding a
/// success to a `rate` window, which never opens it; a test pins it to the
/// model's rule): the crate's model makes every other decision, and the
/// database only compares and sets, on its own clock. A read takes no lock.
/// A row is live through the second its `expires_at` names and expired
/// once `expires_at` is before the database's second, as milon/fuse's
/// `DatabaseStore` has it. Expired rows read as absent and are deleted, at most [`SqlStore::SWEEP_ROWS`]
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
/// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(store)).build();
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
    /// The update of a payload that starts with a prefix (see
    /// [`Store::swap_prefixed`](crate::store::Store::swap_prefixed)).
    replace: Arc<str>,
    increment: Arc<str>,
    /// The increment that returns the payload written and the time (a
    /// failure's, see [`Increment::answers`](crate::store::Increment::answers)).
    answered: Arc<str>,
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
        // What `sqlx` says may quote pieces of a password it misread (as
        // a file name, a query parameter).
        let invalid = |err: &sqlx::Error| {
            let said = crate::redact::text_about(url, &err.to_string()).into_owned();
            StoreError::invalid_url(&name, "database", said)
        };
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(8)
                .acquire_timeout(POSTGRES_TIMEOUT)
                .connect_lazy(url)
                .map_err(|err| invalid(&err))?;
            Backend::Postgres(pool)
        } else if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|err| invalid(&err))?
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
