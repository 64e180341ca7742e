//! The SQL store's statements on PostgreSQL: one statement per round trip,
//! the server's `clock_timestamp()` as the clock, a compare-and-set on the
//! payload's text (a `json` column keeps the text as written), and the
//! announcement of a transition by `pg_notify` in the statement that
//! writes it.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::Weak;

use sqlx::postgres::{PgListener, PgPool};

use super::Statements;
use super::table::Table;
use crate::store::Changes;
use crate::store::backend::changes::{MAX_RELISTEN, MIN_RELISTEN};

/// The server's time, in microseconds since the Unix epoch.
const NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint";

/// What announces a write that wrote (`w`) on channel `$4`, unless the
/// channel is empty or the message would pass PostgreSQL's 8000 bytes.
const NOTIFY: &str = "n AS (SELECT pg_notify($4, (c.now / 1000000)::text || ' ' || \
     (c.now % 1000000)::text || ' ' || octet_length($1)::text || ' ' || $1 || $2) \
     FROM w, c WHERE $4 <> '' AND octet_length($1) + octet_length($2) < 7900)";

/// The statements on `table`.
pub(super) fn statements(table: &Table) -> Statements {
    let mut schema = String::new();
    let _ = write!(
        schema,
        "CREATE TABLE IF NOT EXISTS {table} (\n    \
             key varchar(191) PRIMARY KEY,\n    \
             payload json NOT NULL,\n    \
             expires_at bigint NULL\n\
         );\n\
         CREATE INDEX IF NOT EXISTS \"{name}_expires_at_index\" ON {table} (expires_at);\n",
        name = table.name(),
    );
    Statements {
        // The payload's length, and the payload unless it is above $2.
        load: format!(
            "WITH c AS (SELECT {NOW} AS now), \
             r AS (SELECT t.payload::text AS p FROM {table} AS t, c WHERE t.key = $1 \
             AND (t.expires_at IS NULL OR t.expires_at >= c.now / 1000000)) \
             SELECT c.now, (SELECT octet_length(r.p)::bigint FROM r), \
             (SELECT r.p FROM r WHERE octet_length(r.p) <= $2) FROM c"
        )
        .into(),
        // Absent, or present and expired: an insert, or an update of
        // the expired row.
        create: format!(
            "WITH c AS (SELECT {NOW} AS now), \
             w AS (INSERT INTO {table} AS t (key, payload, expires_at) \
             SELECT $1, $2::json, (c.now + $3 + 999999) / 1000000 FROM c \
             ON CONFLICT (key) DO UPDATE SET payload = EXCLUDED.payload, \
             expires_at = EXCLUDED.expires_at \
             WHERE t.expires_at IS NOT NULL AND t.expires_at < (SELECT now FROM c) / 1000000 \
             RETURNING 1), {NOTIFY} \
             SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM n)"
        )
        .into(),
        update: format!(
            "WITH c AS (SELECT {NOW} AS now), \
             w AS (UPDATE {table} AS t SET payload = $2::json, \
             expires_at = (c.now + $3 + 999999) / 1000000 FROM c \
             WHERE t.key = $1 AND t.payload::text = $5 \
             AND (t.expires_at IS NULL OR t.expires_at >= c.now / 1000000) \
             RETURNING 1), {NOTIFY} \
             SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM n)"
        )
        .into(),
        replace: format!(
            "WITH c AS (SELECT {NOW} AS now), \
             w AS (UPDATE {table} AS t SET payload = $2::json, \
             expires_at = (c.now + $3 + 999999) / 1000000 FROM c \
             WHERE t.key = $1 AND left(t.payload::text, char_length($5)) = $5 \
             AND (t.expires_at IS NULL OR t.expires_at >= c.now / 1000000) \
             RETURNING 1), {NOTIFY} \
             SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM n)"
        )
        .into(),
        // A reset: the row goes whatever it holds, announced with an
        // empty payload.
        increment: super::increment::postgres(table, NOW, false).into(),
        answered: super::increment::postgres(table, NOW, true).into(),
        delete: format!(
            "WITH c AS (SELECT {NOW} AS now), \
             w AS (DELETE FROM {table} WHERE key = $1 RETURNING 1), \
             n AS (SELECT pg_notify($2, (c.now / 1000000)::text || ' ' || \
             (c.now % 1000000)::text || ' ' || octet_length($1)::text || ' ' || $1) \
             FROM c WHERE $2 <> '') \
             SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM n)"
        )
        .into(),
        sweep: format!(
            "DELETE FROM {table} WHERE key IN (SELECT key FROM {table} \
             WHERE expires_at < floor(EXTRACT(EPOCH FROM clock_timestamp()))::bigint \
             LIMIT $1 FOR UPDATE SKIP LOCKED)"
        )
        .into(),
        // A literal prefix: compared, not matched (no character of it is
        // a pattern); pages in byte order ("C"), resumed after a key.
        keys: format!(
            "SELECT key FROM {table} WHERE left(key, char_length($1)) = $1 COLLATE \"C\" \
             AND ($2::text IS NULL OR key COLLATE \"C\" > $2) \
             AND (expires_at IS NULL \
             OR expires_at >= floor(EXTRACT(EPOCH FROM clock_timestamp()))::bigint) \
             ORDER BY key COLLATE \"C\" LIMIT $3"
        )
        .into(),
        schema: schema.into(),
    }
}

/// Creates the table and its index unless they exist, under an advisory
/// lock so that processes starting together do not race each other's
/// `CREATE`.
pub(super) async fn ensure_schema(
    pool: &PgPool,
    table: &Table,
    schema: &Arc<str>,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
        .bind(format!("fuse_breaker schema {}", table.name()))
        .execute(&mut *tx)
        .await?;
    sqlx::raw_sql(super::safe(schema)).execute(&mut *tx).await?;
    tx.commit().await
}

/// Listens on `channel` and hands each announcement to `changes`, for as
/// long as the store lives; every mirror is forgotten whenever listening
/// begins again (announcements may have been missed).
pub(super) async fn listen(pool: PgPool, channel: String, changes: Weak<Changes>) {
    let mut backoff = MIN_RELISTEN;
    loop {
        if let Ok(mut listener) = PgListener::connect_with(&pool).await
            && listener.listen(&channel).await.is_ok()
        {
            backoff = MIN_RELISTEN;
            let Some(live) = changes.upgrade() else {
                return;
            };
            live.lost();
            drop(live);
            // `Ok(None)`: the connection dropped (the listener would
            // reconnect by itself on the next call, but whatever came in
            // between would be lost unseen): listen anew.
            while let Ok(Some(notification)) = listener.try_recv().await {
                let Some(live) = changes.upgrade() else {
                    return;
                };
                live.tell_wire(notification.payload().as_bytes(), |_| true);
            }
            let Some(live) = changes.upgrade() else {
                return;
            };
            live.lost();
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_RELISTEN);
    }
}
