//! The SQL store's statements on SQLite: one statement per round trip
//! (each one atomic under the database's write lock; WAL and a busy
//! timeout let processes on one file wait for each other), the database's
//! `julianday('now')` as the clock (the same for every use within one
//! statement), and a compare-and-set on the payload's text.

use std::fmt::Write as _;
use std::sync::Arc;

use super::Statements;
use super::table::Table;
use sqlx::SqlitePool;

/// The database's time, in microseconds since the Unix epoch (SQLite keeps
/// milliseconds).
const NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)";

/// The statements on `table`.
pub(super) fn statements(table: &Table) -> Statements {
    let mut schema = String::new();
    let _ = write!(
        schema,
        "CREATE TABLE IF NOT EXISTS {table} (\n    \
             key varchar(191) NOT NULL PRIMARY KEY,\n    \
             payload text NOT NULL,\n    \
             expires_at integer NULL\n\
         );\n\
         CREATE INDEX IF NOT EXISTS \"{name}_expires_at_index\" ON {table} (expires_at);\n",
        name = table.name(),
    );
    let live = format!("(expires_at IS NULL OR expires_at >= {NOW} / 1000000)");
    Statements {
        // The payload's length, and the payload unless it is above ?2.
        load: format!(
            "SELECT {NOW}, (SELECT octet_length(payload) FROM {table} WHERE key = ?1 AND {live}), \
             (SELECT payload FROM {table} WHERE key = ?1 AND {live} AND octet_length(payload) <= ?2)"
        )
        .into(),
        // Absent, or present and expired: an insert, or an update of
        // the expired row. (`WHERE true` tells SQLite's parser the
        // `ON CONFLICT` is the upsert's.)
        create: format!(
            "INSERT INTO {table} (key, payload, expires_at) \
             SELECT ?1, ?2, ({NOW} + ?3 + 999999) / 1000000 WHERE true \
             ON CONFLICT (key) DO UPDATE SET payload = excluded.payload, \
             expires_at = excluded.expires_at \
             WHERE {table}.expires_at IS NOT NULL \
             AND {table}.expires_at < {NOW} / 1000000"
        )
        .into(),
        update: format!(
            "UPDATE {table} SET payload = ?2, expires_at = ({NOW} + ?3 + 999999) / 1000000 \
             WHERE key = ?1 AND payload = ?4 AND {live}"
        )
        .into(),
        replace: format!(
            "UPDATE {table} SET payload = ?2, expires_at = ({NOW} + ?3 + 999999) / 1000000 \
             WHERE key = ?1 AND substr(payload, 1, length(?4)) = ?4 AND {live}"
        )
        .into(),
        increment: super::increment::sqlite(table, NOW, false).into(),
        answered: super::increment::sqlite(table, NOW, true).into(),
        delete: format!("DELETE FROM {table} WHERE key = ?1").into(),
        sweep: format!(
            "DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} \
             WHERE expires_at < {NOW} / 1000000 LIMIT ?1)"
        )
        .into(),
        // A literal prefix, compared byte by byte (a key stored as a blob
        // too); pages in byte order, resumed after a key.
        keys: format!(
            "SELECT CAST(key AS BLOB) FROM {table} \
             WHERE substr(CAST(key AS BLOB), 1, length(CAST(?1 AS BLOB))) = CAST(?1 AS BLOB) \
             AND (?2 IS NULL OR CAST(key AS BLOB) > ?2) AND {live} \
             ORDER BY CAST(key AS BLOB) LIMIT ?3"
        )
        .into(),
        schema: schema.into(),
    }
}

/// The key listing's cursor after the key `key`: its bytes in hex.
pub(super) fn cursor_of(key: &[u8]) -> String {
    use std::fmt::Write as _;
    key.iter()
        .fold(String::with_capacity(key.len() * 2), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// The key a cursor of [`cursor_of`] resumes after, if it is one.
pub(super) fn bytes_of(cursor: &str) -> Option<Vec<u8>> {
    if !cursor.len().is_multiple_of(2) || !cursor.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..cursor.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&cursor[at..at + 2], 16).ok())
        .collect()
}

/// Runs `schema` in one `BEGIN IMMEDIATE` transaction: the write lock is
/// taken first, under the busy timeout, so that processes making the table
/// together wait for each other instead of failing with "database is
/// locked" when one read the schema before another wrote it.
pub(super) async fn ensure_schema(pool: &SqlitePool, schema: &Arc<str>) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::raw_sql(super::safe(schema)).execute(&mut *tx).await?;
    tx.commit().await
}

/// Puts the file in WAL mode from a new connection, waiting up to `patience`
/// while another connection changes it: SQLite answers that change with
/// "database is locked" at once, without the busy timeout, when two
/// connections make a new file at the same time.
pub(super) async fn wal(
    conn: &mut sqlx::SqliteConnection,
    patience: std::time::Duration,
) -> Result<(), sqlx::Error> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match sqlx::raw_sql("PRAGMA journal_mode = WAL")
            .execute(&mut *conn)
            .await
        {
            Err(err) if locked(&err) && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            done => return done.map(drop),
        }
    }
}

/// Whether `err` is SQLite's `SQLITE_BUSY` (or one of its extended codes).
fn locked(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(sqlx::error::DatabaseError::code)
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == 5)
}

#[cfg(test)]
mod tests;
