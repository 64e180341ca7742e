//! [`RedisStore`]: a [`Store`] on Redis or Valkey (feature `redis`).
//!
//! One key per circuit (so it works on Redis Cluster), a plain string
//! holding the JSON payload, written with `PX` (the time-to-live). Two
//! scripts, run by `EVALSHA` (reloaded on `NOSCRIPT` by the `redis` crate),
//! each one round trip:
//!
//! - *load*: `TIME` and `GET` of the key;
//! - *swap*: `SET ... PX` if the key still holds the payload the caller
//!   read (or is still absent), and for a transition a `PUBLISH` of the
//!   new payload with the server's `TIME` on the store's channel; else
//!   `TIME` and what the key holds;
//! - *delete* (a reset): `DEL` of the key whatever it holds (a value of
//!   any type), and its announcement with an empty payload.
//!
//! Neither knows a rule of the circuit: the crate's model decides, Redis
//! only applies the compare-and-set atomically, on its own clock.
//!
//! Once a cached circuit is built on the store, one more connection
//! subscribes to the channel and hands each announcement to [`Changes`]
//! (the cached circuits of this process on its key take the payload as
//! their mirror). When that connection drops, every mirror is forgotten,
//! and the connection is remade with a backoff.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_core::Stream;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, Script, Value};

use super::changes::Listening;
use super::error::public_name;
use super::payload::PayloadError;
use super::{Changes, KeyPage, Loaded, Store, StoreError, Swap};

const LOAD: &str = r"
local t = redis.call('TIME')
return {t[1], t[2], redis.call('GET', KEYS[1])}
";

const SWAP: &str = r"
local v = redis.call('GET', KEYS[1])
local same
if ARGV[1] == '0' then same = (v == false) else same = (v == ARGV[2]) end
if same then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  if ARGV[5] ~= '' then
    local t = redis.call('TIME')
    redis.call('PUBLISH', ARGV[5], t[1] .. ' ' .. t[2] .. ' ' .. #KEYS[1] .. ' ' .. KEYS[1] .. ARGV[3])
  end
  return {1}
end
local t = redis.call('TIME')
return {0, t[1], t[2], v}
";

const DELETE: &str = r"
redis.call('DEL', KEYS[1])
if ARGV[1] ~= '' then
  local t = redis.call('TIME')
  redis.call('PUBLISH', ARGV[1], t[1] .. ' ' .. t[2] .. ' ' .. #KEYS[1] .. ' ' .. KEYS[1])
end
return 1
";

/// How long a round trip may take before the store counts as unreachable
/// (the fallback then decides), and how long a connection attempt may
/// take.
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);
const CONNECTION_TIMEOUT: Duration = Duration::from_millis(500);

/// The first wait before the channel's connection is remade; it doubles
/// with each failure in a row, up to the second.
const MIN_RESUBSCRIBE: Duration = Duration::from_millis(100);
const MAX_RESUBSCRIBE: Duration = Duration::from_secs(2);

/// A [`Store`] on Redis or Valkey, through one multiplexed connection that
/// reconnects by itself (the `redis` crate's `ConnectionManager`). Cheap to
/// share: put it in an `Arc` and give it to every circuit.
///
/// ```no_run
/// use std::sync::Arc;
/// use fuse_breaker::store::{RedisStore, SharedFuse};
///
/// # async fn run() -> Result<(), fuse_breaker::store::StoreError> {
/// let store = Arc::new(RedisStore::open("redis://127.0.0.1:6379")?);
/// let fuse = SharedFuse::builder("billing", store).build();
/// let permit = fuse.try_acquire().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    name: String,
    client: redis::Client,
    connection: ConnectionManager,
    load: Script,
    swap: Script,
    delete: Script,
    channel: String,
    changes: Arc<Changes>,
    listening: Arc<Listening>,
    runtime: tokio::runtime::Handle,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// The channel transitions are announced on, unless
    /// [`with_channel`](Self::with_channel) names another.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::RedisStore::DEFAULT_CHANNEL, "fuse:changes");
    /// ```
    pub const DEFAULT_CHANNEL: &str = "fuse:changes";

    /// A store on the server at `url` (`redis://host:port/db`,
    /// `rediss://` for TLS where the `redis` crate is built with it). The
    /// connection is made on first use and remade after it drops; a round
    /// trip that takes over 500 ms is an outage. An error for a URL that
    /// is not one, and outside a tokio runtime (the connection's tasks run
    /// on it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let err = fuse_breaker::store::RedisStore::open("http://example.com").unwrap_err();
    /// assert!(err.to_string().contains("http://example.com"));
    /// # }
    /// ```
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let name = public_name(url);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(StoreError::unreachable(
                &name,
                "RedisStore::open was called outside a tokio runtime",
            ));
        };
        let client = redis::Client::open(url).map_err(|err| {
            StoreError::unreachable(&name, format_args!("not a Redis URL: {err}"))
        })?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECTION_TIMEOUT))
            .set_number_of_retries(1);
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|err| StoreError::unreachable(&name, err))?;
        Ok(RedisStore {
            name,
            client,
            connection,
            load: Script::new(LOAD),
            swap: Script::new(SWAP),
            delete: Script::new(DELETE),
            channel: Self::DEFAULT_CHANNEL.to_owned(),
            changes: Arc::default(),
            listening: Arc::default(),
            runtime,
        })
    }

    /// Announces transitions on `channel` (default [`Self::DEFAULT_CHANNEL`]),
    /// and listens there: the processes of one fleet use the same one
    /// (Redis pub/sub channels are one namespace per server or cluster,
    /// apart from keys).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::RedisStore::open("redis://127.0.0.1:6379")?
    ///     .with_channel("shop:fuse:changes");
    /// assert_eq!(store.channel(), "shop:fuse:changes");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// The channel transitions are announced on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// let store = fuse_breaker::store::RedisStore::open("redis://127.0.0.1:6379")?;
    /// assert_eq!(store.channel(), fuse_breaker::store::RedisStore::DEFAULT_CHANNEL);
    /// # Ok(()) }
    /// ```
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The error of a round trip: a key of another type is an unreadable
    /// payload under it, anything else an outage.
    fn error(&self, key: &str, err: &RedisError) -> StoreError {
        if err.code() == Some("WRONGTYPE") || err.to_string().contains("WRONGTYPE") {
            return StoreError::payload(
                &self.name,
                PayloadError::new(key, "the key holds a Redis value that is not a string"),
            );
        }
        StoreError::unreachable(&self.name, err)
    }

    fn protocol(&self, what: &str, value: &Value) -> StoreError {
        StoreError::unreachable(
            &self.name,
            format_args!("unexpected reply to {what}: {value:?}"),
        )
    }
}

/// Listens on `channel` and hands each announcement to `changes`, for as
/// long as the store lives; every mirror is forgotten whenever the
/// subscription begins again (announcements may have been missed).
async fn listen(client: redis::Client, channel: String, changes: Weak<Changes>) {
    let mut backoff = MIN_RESUBSCRIBE;
    loop {
        if let Ok(Ok(mut pubsub)) =
            tokio::time::timeout(CONNECTION_TIMEOUT, subscribe(&client, &channel)).await
        {
            backoff = MIN_RESUBSCRIBE;
            let Some(live) = changes.upgrade() else {
                return;
            };
            live.lost();
            drop(live);
            let mut messages = std::pin::pin!(pubsub.on_message());
            while let Some(message) =
                std::future::poll_fn(|cx| messages.as_mut().poll_next(cx)).await
            {
                let Some(live) = changes.upgrade() else {
                    return;
                };
                live.tell_wire(message.get_payload_bytes());
            }
            let Some(live) = changes.upgrade() else {
                return;
            };
            live.lost();
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_RESUBSCRIBE);
    }
}

async fn subscribe(
    client: &redis::Client,
    channel: &str,
) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    Ok(pubsub)
}

/// The `SCAN ... MATCH` pattern of the keys that start with `prefix`: its
/// glob characters escaped, then `*`.
fn glob_of(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('*');
    pattern
}

/// A number Redis sent as a string (`TIME`'s parts) or an integer.
fn number(value: &Value) -> Option<u64> {
    match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// `TIME`'s seconds and microseconds.
fn time(seconds: &Value, micros: &Value) -> Option<Duration> {
    Some(Duration::from_secs(number(seconds)?) + Duration::from_micros(number(micros)?))
}

fn loaded(values: &[Value]) -> Option<Loaded> {
    let (seconds, micros, payload) = match values {
        [seconds, micros] | [seconds, micros, Value::Nil] => (seconds, micros, None),
        [seconds, micros, Value::BulkString(bytes)] => (seconds, micros, Some(bytes.clone())),
        _ => return None,
    };
    Some(Loaded {
        payload,
        now: time(seconds, micros)?,
    })
}

#[async_trait::async_trait]
impl Store for RedisStore {
    fn name(&self) -> &str {
        &self.name
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        let mut connection = self.connection.clone();
        let reply: Value = self
            .load
            .key(key)
            .invoke_async(&mut connection)
            .await
            .map_err(|err| self.error(key, &err))?;
        match &reply {
            Value::Array(values) => loaded(values),
            _ => None,
        }
        .ok_or_else(|| self.protocol("load", &reply))
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        let mut connection = self.connection.clone();
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let reply: Value = self
            .swap
            .key(key)
            .arg(if expected.is_some() { "1" } else { "0" })
            .arg(expected.unwrap_or_default())
            .arg(new)
            .arg(ttl)
            .arg(if announce { self.channel.as_str() } else { "" })
            .invoke_async(&mut connection)
            .await
            .map_err(|err| self.error(key, &err))?;
        let swapped = match &reply {
            Value::Array(values) => match values.as_slice() {
                [written] if number(written) == Some(1) => Some(Swap::Written),
                [lost, rest @ ..] if number(lost) == Some(0) => loaded(rest).map(Swap::Changed),
                _ => None,
            },
            _ => None,
        };
        swapped.ok_or_else(|| self.protocol("swap", &reply))
    }

    /// `SCAN`s (which never block the server) with the prefix's glob
    /// characters escaped, each key checked against the prefix again; the
    /// cursor is `SCAN`'s. A page ends at `SCAN`'s step that reaches
    /// `limit`, so it may hold a few more.
    async fn keys(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        let mut cursor: u64 = match after {
            None => 0,
            Some(after) => after
                .parse()
                .ok()
                .filter(|&cursor| cursor != 0)
                .ok_or_else(|| {
                    StoreError::unreachable(
                        &self.name,
                        format_args!("{after:?} is not a cursor of this store's key listing"),
                    )
                })?,
        };
        let pattern = glob_of(prefix);
        let limit = limit.max(1);
        let count = limit.clamp(10, 1000);
        let mut connection = self.connection.clone();
        let mut found: Vec<Vec<u8>> = Vec::new();
        loop {
            let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(count)
                .query_async(&mut connection)
                .await
                .map_err(|err| StoreError::unreachable(&self.name, err))?;
            found.extend(
                batch
                    .into_iter()
                    .filter(|key| key.starts_with(prefix.as_bytes())),
            );
            cursor = next;
            if cursor == 0 || found.len() >= limit {
                break;
            }
        }
        found.sort_unstable();
        found.dedup();
        let mut keys = Vec::with_capacity(found.len());
        let mut not_utf8 = Vec::new();
        for key in found {
            match String::from_utf8(key) {
                Ok(key) => keys.push(key),
                Err(err) => not_utf8.push(err.into_bytes()),
            }
        }
        let mut page = KeyPage::new(keys, (cursor != 0).then(|| cursor.to_string()));
        page.not_utf8 = not_utf8;
        Ok(page)
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        let mut connection = self.connection.clone();
        let reply: Value = self
            .delete
            .key(key)
            .arg(if announce { self.channel.as_str() } else { "" })
            .invoke_async(&mut connection)
            .await
            .map_err(|err| StoreError::unreachable(&self.name, err))?;
        match number(&reply) {
            Some(1) => Ok(()),
            _ => Err(self.protocol("delete", &reply)),
        }
    }

    /// Starts listening on the channel the first time (a cached circuit
    /// is being built).
    fn changes(&self) -> Option<&Changes> {
        self.listening.start(|| {
            let listening = listen(
                self.client.clone(),
                self.channel.clone(),
                Arc::downgrade(&self.changes),
            );
            self.runtime.spawn(listening).abort_handle()
        });
        Some(&self.changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_matched_literally() {
        assert_eq!(glob_of("fuse:shop:"), "fuse:shop:*");
        assert_eq!(glob_of("fuse:a*b?[c]\\"), "fuse:a\\*b\\?\\[c\\]\\\\*");
    }

    #[test]
    fn replies_are_read_strictly() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let now = Duration::from_secs(1_700_000_000) + Duration::from_micros(12);
        assert_eq!(
            loaded(&[bulk("1700000000"), bulk("12"), Value::Nil]),
            Some(Loaded { payload: None, now })
        );
        assert_eq!(
            loaded(&[bulk("1700000000"), bulk("12"), bulk("{}")]),
            Some(Loaded {
                payload: Some(b"{}".to_vec()),
                now
            })
        );
        assert_eq!(loaded(&[bulk("17x"), bulk("12"), Value::Nil]), None);
        assert_eq!(loaded(&[bulk("1"), bulk("2"), Value::Int(3)]), None);
        assert_eq!(loaded(&[]), None);
    }
}
