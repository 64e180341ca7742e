//! What the SQL store refuses before a round trip, and what a round trip's
//! answer means: a key the table cannot hold, an error about the data
//! rather than the connection, a clock reading that is no time.

use std::time::Duration;

use crate::store::StoreError;
use crate::store::model::payload;

/// The longest key the table holds, in characters: milon/fuse's
/// `varchar(191)`.
pub(super) const MAX_KEY_CHARS: usize = 191;

/// `key`, unless the table's key column cannot hold it (on SQLite too,
/// which would: one fleet's keys fit every database it may use).
pub(super) fn key<'a>(store: &str, key: &'a str) -> Result<&'a str, StoreError> {
    let chars = key.chars().count();
    if chars > MAX_KEY_CHARS {
        return Err(StoreError::invalid_key(
            store,
            key,
            format_args!(
                "it is {chars} characters long, above the {MAX_KEY_CHARS} of the table's \
                 key column (varchar({MAX_KEY_CHARS}))"
            ),
        ));
    }
    Ok(key)
}

/// Whether `err` is the database refusing the data of a statement (a
/// value too long, a character its text cannot hold, a constraint),
/// rather than a connection or a server that failed: an answer about the
/// key, not an outage. `postgres`: the error is PostgreSQL's (else
/// SQLite's).
pub(super) fn about_data(err: &sqlx::Error, postgres: bool) -> bool {
    match err {
        sqlx::Error::Encode(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| data_code(&code, postgres)),
        _ => false,
    }
}

/// A PostgreSQL SQLSTATE of class 22 (data exception) or 23 (integrity
/// constraint violation), or SQLite's `SQLITE_TOOBIG`, `SQLITE_CONSTRAINT`
/// or `SQLITE_MISMATCH` (with their extended codes).
fn data_code(code: &str, postgres: bool) -> bool {
    if postgres {
        return code.starts_with("22") || code.starts_with("23");
    }
    code.parse::<i32>()
        .is_ok_and(|code| matches!(code & 0xff, 18..=20))
}

/// The database's clock in microseconds since the Unix epoch, if it is a
/// time (not before the epoch, within what the rules count in).
pub(super) fn clock(micros: i64) -> Option<Duration> {
    let micros = u64::try_from(micros).ok()?;
    payload::clock(micros / 1_000_000, micros % 1_000_000)
}

#[cfg(test)]
mod tests;
