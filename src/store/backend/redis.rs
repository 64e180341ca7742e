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
//! - *increment* (a closed success under `rate`): the rule of
//!   [`Increment::apply`] in Lua, on the payload as the key holds it, so
//!   that two processes' successes never race a compare-and-set;
//! - *delete* (a reset): `DEL` of the key whatever it holds (a value of
//!   any type), and its announcement with an empty payload.
//!
//! Both take the value's `STRLEN` first: a value above
//! [`PayloadError::MAX_BYTES`] is answered by its length alone, never sent.
//!
//! Only the increment knows a rule of the circuit (adding a success to a
//! `rate` window, which never opens it; a differential test pins the
//! script to the model); the crate's model makes every other decision, and
//! Redis applies the compare-and-set atomically, on its own clock.
//!
//! Once a cached circuit is built on the store, one more connection
//! subscribes to the channel and hands each announcement to [`Changes`]
//! (the cached circuits of this process on its key take the payload as
//! their mirror). When that connection drops (or its task ends, however),
//! every mirror is forgotten, and the connection is remade with a backoff.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::cluster_routing::Slot;
use redis::{RedisError, Script, Value};

use crate::store::backend::changes::Listening;
use crate::store::backend::error::public_name;
use crate::store::model::payload::{self, PayloadError};
use crate::store::{
    Changes, Codec, Increment, Incremented, KeyPage, Loaded, Store, StoreError, StoreOptions, Swap,
};

mod keys;
mod layout;
mod link;
mod listen;
mod params;
mod reply;
mod scripts;
pub(in crate::store) mod url;

pub use layout::LaravelCache;
use link::{Link, Sentinel};
use reply::{Reading, number, reading};
use scripts::{DELETE, INCREMENT, LOAD, SWAP};
use url::Target;

/// What stands behind the store's URL, as its listening task needs it.
#[derive(Clone)]
enum Topology {
    Node(redis::Client),
    Cluster(Vec<String>),
    Sentinel(Arc<Sentinel>),
}

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
/// let fuse = fuse_breaker::Fuse::builder("billing").store(store).build();
/// let permit = fuse.try_acquire().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    name: String,
    topology: Topology,
    link: Link,
    load: Script,
    swap: Script,
    increment: Script,
    delete: Script,
    channel: String,
    changes: Arc<Changes>,
    listening: Arc<Listening>,
    runtime: tokio::runtime::Handle,
    /// What every circuit's key is preceded by in Redis: empty, or
    /// Laravel's prefixes.
    prefix: Arc<str>,
    laravel: Option<LaravelCache>,
    codec: Codec,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("name", &self.name)
            .field("laravel", &self.laravel)
            .field("codec", &self.codec)
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

    /// A store on what `url` names:
    ///
    /// - one server: `redis://host:port/db` (`rediss://` for TLS where the
    ///   `redis` crate is built with it, `redis+unix:///path.sock`);
    /// - a Redis Cluster: `redis+cluster://host:port,host:port,...`
    ///   (`rediss+cluster://`; any of its nodes, one is enough, more let
    ///   the store start while one is down; a user and password before the
    ///   hosts are every node's): each key goes to its slot's primary, the
    ///   `redis` crate following `MOVED`/`ASK` and refreshing the slots;
    ///   announcements go by sharded pub/sub, on the key's shard alone;
    /// - the primary that Sentinel watches:
    ///   `redis+sentinel://host:port,host:port,.../name[/db]`
    ///   (`rediss+sentinel://`; the sentinels' addresses and the name they
    ///   monitor; a user and password before the hosts are the
    ///   primary's): found on first use, and found again when a round
    ///   trip fails the way a failover makes it fail
    ///   ([`Changes::failovers`]).
    ///
    /// Any of them may end with the store's own parameters (see
    /// [`StoreOptions`]): `?payload=laravel` keeps circuits in Laravel's
    /// cache ([`laravel_cache`](Self::laravel_cache), with
    /// `laravel_redis_prefix=` and `laravel_cache_prefix=`),
    /// `?payload=php` writes PHP's `serialize()` under the circuits' own
    /// keys, `payload_read=auto` reads JSON and PHP alike
    /// ([`with_codec`](Self::with_codec)). Another parameter is an error
    /// naming it, but for the `redis` crate's own on one server
    /// (`protocol`; `db`, `user`, `pass` on a Unix socket).
    ///
    /// Connections are made on first use and remade after they drop; a
    /// round trip that takes over 500 ms is an outage. An error for a URL
    /// that is not one ([`StoreError::is_invalid_url`], no outage), and
    /// outside a tokio runtime (the connections' tasks run on it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use fuse_breaker::store::{RedisStore, Store};
    /// let err = RedisStore::open("http://example.com").unwrap_err();
    /// assert!(err.is_invalid_url());
    /// assert!(err.to_string().contains("http://example.com is not a Redis URL"));
    ///
    /// let cluster = RedisStore::open("redis+cluster://10.0.0.1:6379,10.0.0.2:6379").unwrap();
    /// assert_eq!(cluster.name(), "redis+cluster://10.0.0.1:6379,10.0.0.2:6379");
    /// let err = RedisStore::open("redis+sentinel://10.0.0.1:26379").unwrap_err();
    /// assert!(err.to_string().contains("needs the name the sentinels monitor"));
    /// let err = RedisStore::open("redis://10.0.0.1:6379/1?paylod=laravel").unwrap_err();
    /// assert!(err.to_string().contains("its parameter \"paylod\" is not one of the store's"));
    /// # }
    /// ```
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, &StoreOptions::default())
    }

    /// The store named `name` at `rest` (`url` without the store's own
    /// parameters).
    fn open_at(name: &str, url: &str, rest: &str) -> Result<Self, StoreError> {
        let name = name.to_owned();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(StoreError::unreachable(
                &name,
                "RedisStore::open was called outside a tokio runtime",
            ));
        };
        // What the `redis` crate says may quote the URL, or pieces of a
        // password it misread.
        let said =
            |err: &dyn fmt::Display| crate::redact::text_about(url, &err.to_string()).into_owned();
        let invalid = |err: &dyn fmt::Display, form: &str| {
            StoreError::invalid_url(&name, "Redis", format_args!("{} ({form})", said(err)))
        };
        let target =
            url::target(rest).map_err(|err| StoreError::invalid_url(&name, "Redis", err))?;
        let changes = Arc::<Changes>::default();
        let (topology, link) = match target {
            Target::Node(node) => {
                let client = redis::Client::open(node)
                    .map_err(|err| invalid(&err, "redis://host:port/db"))?;
                let link = Link::node(&client)
                    .map_err(|err| StoreError::unreachable(&name, said(&err)))?;
                (Topology::Node(client), link)
            }
            Target::Cluster(nodes) => {
                let link = Link::cluster(&nodes, None)
                    .map_err(|err| invalid(&err, "redis+cluster://host:port,host:port"))?;
                (Topology::Cluster(nodes), Link::Cluster(link))
            }
            Target::Sentinel {
                sentinels,
                name: service,
                db,
                user,
                password,
                tls,
            } => {
                let found = Arc::downgrade(&changes);
                let sentinel = Sentinel::new(&sentinels, service, db, user, password, tls, found)
                    .map_err(|err| {
                    invalid(&err, "redis+sentinel://host:port,host:port/name")
                })?;
                let sentinel = Arc::new(sentinel);
                (
                    Topology::Sentinel(Arc::clone(&sentinel)),
                    Link::Sentinel(sentinel),
                )
            }
        };
        Ok(RedisStore {
            name,
            topology,
            link,
            load: Script::new(LOAD),
            swap: Script::new(SWAP),
            increment: Script::new(INCREMENT),
            delete: Script::new(DELETE),
            channel: Self::DEFAULT_CHANNEL.to_owned(),
            changes,
            listening: Arc::default(),
            runtime,
            prefix: Arc::from(""),
            laravel: None,
            codec: Codec::default(),
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

    /// The channel a transition of the circuit under `key` is announced
    /// on: the store's [`channel`](Self::channel) on one server; on a
    /// cluster, the sharded channel of the key's hash slot (the channel
    /// followed by a hash tag `{n}` in that slot, `n` the least number
    /// that hashes there), published with `SPUBLISH` and heard with
    /// `SSUBSCRIBE` on the key's shard alone.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fuse_breaker::store::StoreError> {
    /// use fuse_breaker::store::RedisStore;
    /// let node = RedisStore::open("redis://127.0.0.1:6379")?;
    /// assert_eq!(node.channel_of("fuse:billing"), "fuse:changes");
    /// let cluster = RedisStore::open("redis+cluster://127.0.0.1:7000")?;
    /// assert_eq!(cluster.channel_of("fuse:billing"), "fuse:changes{28939}");
    /// # Ok(()) }
    /// ```
    pub fn channel_of(&self, key: &str) -> String {
        self.announced_on(key, true).0
    }

    /// [`channel_of`](Self::channel_of) `key` (a circuit's key; empty unless `announce`:
    /// the scripts publish nothing then), and the command that publishes
    /// there.
    fn announced_on(&self, key: &str, announce: bool) -> (String, &'static str) {
        if !announce {
            return (String::new(), "PUBLISH");
        }
        match &self.topology {
            Topology::Cluster(_) => (
                listen::slot_channel(&self.channel, Slot::for_key(self.redis_key(key))),
                "SPUBLISH",
            ),
            Topology::Node(_) | Topology::Sentinel(_) => (self.channel.clone(), "PUBLISH"),
        }
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

    /// What a script's reply about `key` (the array after its first word,
    /// for a swap) says: the key's payload and the server's time; a value
    /// too large, or a time that is none, is an error.
    fn loaded(&self, key: &str, what: &str, values: &[Value]) -> Result<Loaded, StoreError> {
        let reply = || self.protocol(what, &Value::Array(values.to_vec()));
        match reading(values).ok_or_else(reply)? {
            Reading::TooLarge(bytes) => Err(StoreError::payload(
                &self.name,
                payload::too_large(key, bytes),
            )),
            Reading::Value {
                seconds,
                micros,
                payload,
            } => {
                let now = payload::clock(seconds, micros).ok_or_else(|| {
                    StoreError::unreachable(
                        &self.name,
                        format_args!("its TIME answered {seconds} s {micros} us, which is no time"),
                    )
                })?;
                Ok(Loaded { payload, now })
            }
        }
    }
}

impl RedisStore {
    /// The `SWAP` script on `key`: `mode` 0 (no payload expected), 1
    /// (`compared` expected whole) or 2 (`compared` expected as the
    /// payload's start), writing `new` for `ttl`.
    async fn swap_script(
        &self,
        (key, mode, compared, new): (&str, &str, &[u8], &[u8]),
        ttl: Duration,
        announce: bool,
    ) -> Result<Value, StoreError> {
        let mut connection = self.link.clone();
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let (channel, publish) = self.announced_on(key, announce);
        self.swap
            .key(self.redis_key(key))
            .arg(mode)
            .arg(compared)
            .arg(new)
            .arg(ttl)
            .arg(channel)
            .arg(PayloadError::MAX_BYTES)
            .arg(publish)
            .invoke_async(&mut connection)
            .await
            .map_err(|err| self.error(key, &err))
    }
}

#[async_trait::async_trait]
impl Store for RedisStore {
    fn name(&self) -> &str {
        &self.name
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        let mut connection = self.link.clone();
        let reply: Value = self
            .load
            .key(self.redis_key(key))
            .arg(PayloadError::MAX_BYTES)
            .invoke_async(&mut connection)
            .await
            .map_err(|err| self.error(key, &err))?;
        match &reply {
            Value::Array(values) => self.loaded(key, "load", values),
            _ => Err(self.protocol("load", &reply)),
        }
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        let mode = if expected.is_some() { "1" } else { "0" };
        let swap = (key, mode, expected.unwrap_or_default(), new);
        let reply = self.swap_script(swap, ttl, announce).await?;
        match &reply {
            Value::Array(values) => match values.as_slice() {
                [written] if number(written) == Some(1) => Ok(Swap::Written),
                [lost, rest @ ..] if number(lost) == Some(0) => {
                    self.loaded(key, "swap", rest).map(Swap::Changed)
                }
                _ => Err(self.protocol("swap", &reply)),
            },
            _ => Err(self.protocol("swap", &reply)),
        }
    }

    /// The `SWAP` script, comparing the payload's start with `prefix`.
    async fn swap_prefixed(
        &self,
        key: &str,
        prefix: &[u8],
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<bool, StoreError> {
        let reply = self
            .swap_script((key, "2", prefix, new), ttl, announce)
            .await?;
        match &reply {
            Value::Array(values) => match values.first().and_then(number) {
                Some(written @ (0 | 1)) => Ok(written == 1),
                _ => Err(self.protocol("swap", &reply)),
            },
            _ => Err(self.protocol("swap", &reply)),
        }
    }

    /// The `INCREMENT` script: the rule of [`Increment::apply`] on the
    /// server, in one atomic step, so that increments commute.
    async fn increment(&self, key: &str, increment: &Increment) -> Result<Incremented, StoreError> {
        let mut connection = self.link.clone();
        let ttl = u64::try_from(increment.ttl().as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let reply: Value = self
            .increment
            .key(self.redis_key(key))
            .arg(increment.prefix())
            .arg(increment.width_us())
            .arg(increment.buckets())
            .arg(increment.calls())
            .arg(ttl)
            .arg(PayloadError::MAX_BYTES)
            .arg(increment.failed())
            .arg(increment.slow())
            .arg(
                increment
                    .reporter()
                    .map(|id| id.to_string())
                    .unwrap_or_default(),
            )
            .arg(increment.reporters_kept())
            .invoke_async(&mut connection)
            .await
            .map_err(|err| self.error(key, &err))?;
        match &reply {
            Value::Array(values) if increment.answers() => match values.split_first() {
                Some((applied, rest)) if number(applied) == Some(1) => {
                    self.loaded(key, "increment", rest).map(Incremented::Wrote)
                }
                Some((applied, rest)) if number(applied) == Some(0) => self
                    .loaded(key, "increment", rest)
                    .map(Incremented::Unchanged),
                _ => Err(self.protocol("increment", &reply)),
            },
            _ => match number(&reply) {
                Some(0) => Ok(Incremented::Skipped),
                Some(1) if !increment.answers() => Ok(Incremented::Applied),
                _ => Err(self.protocol("increment", &reply)),
            },
        }
    }

    /// `SCAN`s (which never block the server; on a cluster, every
    /// primary in turn) with the prefix's glob characters escaped, each
    /// key checked against the prefix again (see `redis/keys.rs` for the
    /// cursor). A page ends at `SCAN`'s step that reaches `limit`, so it
    /// may hold a few more.
    async fn keys(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        keys::page(&self.link, &self.name, &self.prefix, prefix, after, limit).await
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        let mut connection = self.link.clone();
        let (channel, publish) = self.announced_on(key, announce);
        let reply: Value = self
            .delete
            .key(self.redis_key(key))
            .arg(channel)
            .arg(publish)
            .invoke_async(&mut connection)
            .await
            .map_err(|err| StoreError::unreachable(&self.name, err))?;
        match number(&reply) {
            Some(1) => Ok(()),
            _ => Err(self.protocol("delete", &reply)),
        }
    }

    /// How many times the primary moved (a failover Sentinel made) since
    /// the store was opened, as this process found out: always 0 on one
    /// server or a cluster (whose failovers the cluster client follows by
    /// itself, unseen).
    /// JSON alone unless the store was opened for PHP payloads or
    /// Laravel's cache ([`with_codec`](Self::with_codec),
    /// [`laravel_cache`](Self::laravel_cache)).
    fn codec(&self) -> Codec {
        self.codec
    }

    /// Listens when a cached circuit first watches a key: on the channel,
    /// or on a cluster the sharded channels of the slots of the keys
    /// cached circuits watch.
    fn changes(&self) -> Option<&Changes> {
        self.changes.on_watch(|| {
            let (topology, channel) = (self.topology.clone(), self.channel.clone());
            let prefix = Arc::clone(&self.prefix);
            let changes = Arc::downgrade(&self.changes);
            let (listening, runtime) = (Arc::downgrade(&self.listening), self.runtime.clone());
            Box::new(move || {
                let Some(listening) = listening.upgrade() else {
                    return;
                };
                let (topology, channel) = (topology.clone(), channel.clone());
                let (prefix, changes) = (Arc::clone(&prefix), changes.clone());
                listening.start(&runtime, changes.clone(), move || {
                    let (channel, changes) = (channel.clone(), changes.clone());
                    let prefix = Arc::clone(&prefix);
                    let listening: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> =
                        match topology.clone() {
                            Topology::Node(client) => {
                                Box::pin(listen::listen(client, channel, prefix, changes, || false))
                            }
                            Topology::Cluster(nodes) => {
                                Box::pin(listen::listen_cluster(nodes, channel, prefix, changes))
                            }
                            Topology::Sentinel(sentinel) => Box::pin(listen::listen_sentinel(
                                sentinel, channel, prefix, changes,
                            )),
                        };
                    listening
                });
            })
        });
        Some(&self.changes)
    }
}

#[cfg(test)]
mod tests;
