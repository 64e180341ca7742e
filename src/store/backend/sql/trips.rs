//! [`SqlStore`] as a [`Store`]: its round trips, one statement each, and
//! how their errors are told apart (an outage, a payload that is not a
//! circuit, a key the table cannot hold).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{
    Backend, POSTGRES_TIMEOUT, SQLITE_BUSY, SqlStore, classify, postgres, safe, sqlite, timed,
};
use crate::store::model::payload::{self, PayloadError};
use crate::store::{Changes, Increment, Incremented, KeyPage, Loaded, Store, StoreError, Swap};

impl SqlStore {
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

    pub(super) fn failed(&self, what: &str, err: &sqlx::Error) -> StoreError {
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
    /// and the database's time. A key longer than the table's column is
    /// read like any other when the table holds it (SQLite does not
    /// enforce the length, another program's table may be wider); absent,
    /// it is refused, as no circuit may be created under it.
    async fn loaded(&self, key: &str) -> Result<Loaded, StoreError> {
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
        if payload.is_none() && length.is_none() {
            classify::key(&self.name, key)?;
        }
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
        // Only a row the table holds may have a key longer than its column.
        if expected.is_none() {
            classify::key(&self.name, key)?;
        }
        let new = text(self, key, new)?;
        let expected = expected.map(|bytes| text(self, key, bytes)).transpose()?;
        let ttl = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
        // The payload expected, if any, is the statement's last parameter.
        let statement = safe(match expected {
            None => &self.statements.create,
            Some(_) => &self.statements.update,
        });
        let written: Result<u64, sqlx::Error> = match &self.backend {
            Backend::Postgres(pool) => {
                let channel = if announce { self.channel.as_str() } else { "" };
                let query = sqlx::query_as(statement).bind(key).bind(new).bind(ttl);
                let query = query.bind(channel);
                let query = match expected {
                    Some(expected) => query.bind(expected),
                    None => query,
                };
                timed(POSTGRES_TIMEOUT, query.fetch_one(pool))
                    .await
                    .map(|(written, _told): (i64, i64)| u64::try_from(written).unwrap_or(0))
            }
            Backend::Sqlite(pool) => {
                let query = sqlx::query(statement).bind(key).bind(new).bind(ttl);
                let query = match expected {
                    Some(expected) => query.bind(expected),
                    None => query,
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

    /// One `UPDATE` of a row whose payload starts with `prefix` (it
    /// creates no row, so a key longer than the column is no matter).
    async fn swap_prefixed(
        &self,
        key: &str,
        prefix: &[u8],
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<bool, StoreError> {
        let new = text(self, key, new)?;
        let prefix = text(self, key, prefix)?;
        let ttl = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
        let statement = safe(&self.statements.replace);
        let written: Result<u64, sqlx::Error> = match &self.backend {
            Backend::Postgres(pool) => {
                let channel = if announce { self.channel.as_str() } else { "" };
                let query = sqlx::query_as(statement)
                    .bind(key)
                    .bind(new)
                    .bind(ttl)
                    .bind(channel)
                    .bind(prefix);
                timed(POSTGRES_TIMEOUT, query.fetch_one(pool))
                    .await
                    .map(|(written, _told): (i64, i64)| u64::try_from(written).unwrap_or(0))
            }
            Backend::Sqlite(pool) => {
                let query = sqlx::query(statement)
                    .bind(key)
                    .bind(new)
                    .bind(ttl)
                    .bind(prefix);
                timed(SQLITE_BUSY, query.execute(pool))
                    .await
                    .map(|done| done.rows_affected())
            }
        };
        let written = written.map_err(|err| self.error(key, "swap", &err))? == 1;
        if written {
            self.wrote();
        }
        Ok(written)
    }

    /// One `UPDATE` (see the `increment` module): 1 row when it applied,
    /// which an increment that answers returns with the time. It creates
    /// no row, so a key longer than the column is no matter.
    async fn increment(&self, key: &str, increment: &Increment) -> Result<Incremented, StoreError> {
        let prefix = text(self, key, increment.prefix())?;
        let number = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let ttl = i64::try_from(increment.ttl().as_micros()).unwrap_or(i64::MAX);
        let (width, buckets) = (number(increment.width_us()), i64::from(increment.buckets()));
        let (calls, failed, slow) = (
            number(increment.calls()),
            number(increment.failed()),
            number(increment.slow()),
        );
        let reporter = increment.reporter().map(number);
        let kept = i64::from(increment.reporters_kept());
        let answers = increment.answers();
        let statement = if answers {
            safe(&self.statements.answered)
        } else {
            safe(&self.statements.increment)
        };
        macro_rules! bound {
            ($query:expr) => {
                $query
                    .bind(key)
                    .bind(prefix)
                    .bind(width)
                    .bind(buckets)
                    .bind(calls)
                    .bind(ttl)
                    .bind(failed)
                    .bind(slow)
                    .bind(reporter)
                    .bind(kept)
            };
        }
        // (applied, the payload, the time); PostgreSQL's answer tells what
        // the key holds when not applied, SQLite's nothing.
        let done: Result<Option<(bool, Option<String>, i64)>, sqlx::Error> =
            match (&self.backend, answers) {
                (Backend::Postgres(pool), true) => {
                    let query = bound!(sqlx::query_as(statement)).fetch_one(pool);
                    timed(POSTGRES_TIMEOUT, query).await.map(
                        |(applied, payload, now): (i64, Option<String>, i64)| {
                            Some((applied == 1, payload, now))
                        },
                    )
                }
                (Backend::Sqlite(pool), true) => {
                    let query = bound!(sqlx::query_as(statement)).fetch_optional(pool);
                    timed(SQLITE_BUSY, query).await.map(|row| {
                        row.map(|(payload, now): (String, i64)| (true, Some(payload), now))
                    })
                }
                (Backend::Postgres(pool), false) => {
                    let query = bound!(sqlx::query(statement)).execute(pool);
                    timed(POSTGRES_TIMEOUT, query)
                        .await
                        .map(|done| (done.rows_affected() == 1).then_some((true, None, 0)))
                }
                (Backend::Sqlite(pool), false) => {
                    let query = bound!(sqlx::query(statement)).execute(pool);
                    timed(SQLITE_BUSY, query)
                        .await
                        .map(|done| (done.rows_affected() == 1).then_some((true, None, 0)))
                }
            };
        let Some((applied, payload, now)) =
            done.map_err(|err| self.error(key, "increment", &err))?
        else {
            return Ok(Incremented::Skipped);
        };
        if applied {
            self.wrote();
        }
        if !answers {
            return Ok(Incremented::Applied);
        }
        let now = classify::clock(now).ok_or_else(|| {
            StoreError::unreachable(
                &self.name,
                format_args!("its clock answered {now} us since the Unix epoch, which is no time"),
            )
        })?;
        let loaded = Loaded {
            payload: payload.map(String::into_bytes),
            now,
        };
        Ok(if applied {
            Incremented::Wrote(loaded)
        } else {
            Incremented::Unchanged(loaded)
        })
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

    /// On PostgreSQL, listens on the channel when a cached circuit first
    /// watches a key; SQLite has none.
    fn changes(&self) -> Option<&Changes> {
        let Backend::Postgres(pool) = &self.backend else {
            return None;
        };
        self.changes.on_watch(|| {
            let (pool, channel) = (pool.clone(), self.channel.clone());
            let changes: Weak<Changes> = Arc::downgrade(&self.changes);
            let (listening, runtime) = (Arc::downgrade(&self.listening), self.runtime.clone());
            Box::new(move || {
                let Some(listening) = listening.upgrade() else {
                    return;
                };
                let (pool, channel, weak) = (pool.clone(), channel.clone(), changes.clone());
                listening.start(&runtime, changes.clone(), move || {
                    postgres::listen(pool.clone(), channel.clone(), weak.clone())
                });
            })
        });
        Some(&self.changes)
    }
}
