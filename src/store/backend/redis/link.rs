//! The connection a [`RedisStore`](super::RedisStore) sends its scripts
//! over: to one server, to a cluster (the `redis` crate routes each key
//! to its slot's primary, following `MOVED` and `ASK`, and refreshes the
//! slots itself), or to the primary Sentinel names (found again after a
//! failover).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use crate::store::Changes;

/// How long a round trip may take before the store counts as unreachable
/// (the fallback then decides), and how long a connection attempt may
/// take.
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);
pub(super) const CONNECTION_TIMEOUT: Duration = Duration::from_millis(500);

/// The shortest time between two questions to the sentinels: a burst of
/// failed round trips asks once.
const REDISCOVER_EVERY: Duration = Duration::from_millis(200);

/// One connection, whatever stands behind it. Cheap to clone.
#[derive(Clone)]
pub(super) enum Link {
    Node(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(Arc<Sentinel>),
}

/// A connection manager's settings: the timeouts above, one retry.
pub(super) fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        .set_connection_timeout(Some(CONNECTION_TIMEOUT))
        .set_number_of_retries(1)
}

impl Link {
    /// A connection to one server, made on first use.
    pub(super) fn node(client: &redis::Client) -> RedisResult<Link> {
        ConnectionManager::new_lazy_with_config(client.clone(), manager_config()).map(Link::Node)
    }

    /// A connection to the cluster the `nodes` belong to, made on first
    /// use; `push`: where the nodes' pushes go (RESP3, for the sharded
    /// subscriptions), `None` for the scripts' connection.
    pub(super) fn cluster(
        nodes: &[String],
        push: Option<Arc<dyn Fn(redis::PushInfo) + Send + Sync>>,
    ) -> RedisResult<ClusterConnection> {
        let mut builder = ClusterClientBuilder::new(nodes.to_vec())
            .connection_timeout(CONNECTION_TIMEOUT)
            .response_timeout(RESPONSE_TIMEOUT)
            .overall_response_timeout(Some(RESPONSE_TIMEOUT))
            // A redirection (a slot moving) or a node going away is
            // retried a few times, quickly: the whole round trip is still
            // bounded by the response timeout.
            .retries(4)
            .min_retry_wait(10)
            .max_retry_wait(100);
        if let Some(push) = push {
            builder = builder
                .use_protocol(redis::ProtocolVersion::RESP3)
                .push_sender(move |info| {
                    push(info);
                    Ok::<(), std::convert::Infallible>(())
                });
        }
        let client = builder.build()?;
        Ok(client.get_pending_async_connection_with_config(ClusterConfig::new()))
    }
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Node(manager) => manager.req_packed_command(cmd),
            Link::Cluster(cluster) => cluster.req_packed_command(cmd),
            Link::Sentinel(sentinel) => {
                let sentinel = Arc::clone(sentinel);
                Box::pin(async move {
                    let mut primary = sentinel.primary().await?;
                    let result = primary.req_packed_command(cmd).await;
                    if let Err(err) = &result {
                        sentinel.failed(err);
                    }
                    result
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Link::Node(manager) => manager.req_packed_commands(pipeline, offset, count),
            Link::Cluster(cluster) => cluster.req_packed_commands(pipeline, offset, count),
            Link::Sentinel(sentinel) => {
                let sentinel = Arc::clone(sentinel);
                Box::pin(async move {
                    let mut primary = sentinel.primary().await?;
                    let result = primary.req_packed_commands(pipeline, offset, count).await;
                    if let Err(err) = &result {
                        sentinel.failed(err);
                    }
                    result
                })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Node(manager) => manager.get_db(),
            Link::Cluster(cluster) => cluster.get_db(),
            Link::Sentinel(sentinel) => sentinel.db,
        }
    }
}

/// The primary that Sentinel names, asked again when a round trip to it
/// fails the way a failover makes it fail.
pub(super) struct Sentinel {
    client: tokio::sync::Mutex<SentinelClient>,
    /// The sentinels' addresses and the name they monitor, for the task
    /// that hears their `+switch-master` announcements.
    sentinels: Vec<String>,
    name: String,
    /// That task, started on first use.
    watching: std::sync::OnceLock<tokio::task::AbortHandle>,
    db: i64,
    /// The primary found last, with its address.
    primary: ArcSwapOption<Primary>,
    /// Set when a failed round trip says the primary may have moved.
    stale: std::sync::atomic::AtomicBool,
    /// When the sentinels were last asked.
    asked: std::sync::Mutex<Option<Instant>>,
    /// Where the store tells its circuits that the primary moved.
    changes: Weak<Changes>,
}

/// A primary: its address and a connection to it.
pub(super) struct Primary {
    pub(super) address: String,
    pub(super) client: redis::Client,
    manager: ConnectionManager,
}

impl Sentinel {
    /// Asks the `sentinels` for the primary they know as `name`, on first
    /// use.
    pub(super) fn new(
        sentinels: &[String],
        name: String,
        db: i64,
        user: Option<String>,
        password: Option<String>,
        tls: bool,
        changes: Weak<Changes>,
    ) -> RedisResult<Sentinel> {
        let mut redis = redis::RedisConnectionInfo::default().set_db(db);
        if let Some(user) = user {
            redis = redis.set_username(user);
        }
        if let Some(password) = password {
            redis = redis.set_password(password);
        }
        let mut node = SentinelNodeConnectionInfo::default().set_redis_connection_info(redis);
        if tls {
            node = node.set_tls_mode(redis::TlsMode::Secure);
        }
        let client = SentinelClient::build(
            sentinels.to_vec(),
            name.clone(),
            Some(node),
            SentinelServerType::Master,
        )?;
        Ok(Sentinel {
            client: tokio::sync::Mutex::new(client),
            sentinels: sentinels.to_vec(),
            name,
            watching: std::sync::OnceLock::new(),
            db,
            primary: ArcSwapOption::empty(),
            stale: std::sync::atomic::AtomicBool::new(false),
            asked: std::sync::Mutex::new(None),
            changes,
        })
    }

    /// How many times the primary moved (a failover) since the store was
    /// opened.
    pub(super) fn moves(&self) -> u64 {
        self.changes
            .upgrade()
            .map_or(0, |changes| Changes::failovers(&changes))
    }

    /// The primary's address as last found.
    pub(super) fn address(&self) -> Option<String> {
        self.primary.load().as_ref().map(|p| p.address.clone())
    }

    /// The primary now: the one found last, unless a failed round trip
    /// marked it stale (then the sentinels are asked, at most every
    /// [`REDISCOVER_EVERY`]).
    pub(super) async fn current(self: &Arc<Self>) -> RedisResult<Arc<Primary>> {
        self.watching.get_or_init(|| {
            let watch = watch(
                self.sentinels.clone(),
                self.name.clone(),
                Arc::downgrade(self),
            );
            tokio::spawn(watch).abort_handle()
        });
        if let Some(primary) = self.primary.load_full()
            && !self.stale.load(Ordering::Relaxed)
        {
            return Ok(primary);
        }
        let mut client = self.client.lock().await;
        // Another caller may have asked while this one waited.
        if let Some(primary) = self.primary.load_full()
            && !self.stale.load(Ordering::Relaxed)
        {
            return Ok(primary);
        }
        let recent = self
            .asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|at| at.elapsed() < REDISCOVER_EVERY);
        if recent && let Some(primary) = self.primary.load_full() {
            return Ok(primary);
        }
        *self
            .asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        let found = tokio::time::timeout(CONNECTION_TIMEOUT * 2, client.async_get_client())
            .await
            .map_err(|_| {
                RedisError::from((redis::ErrorKind::Io, "no sentinel answered within a second"))
            })??;
        let address = found.get_connection_info().addr().to_string();
        self.stale.store(false, Ordering::Relaxed);
        if let Some(old) = self.primary.load_full()
            && old.address == address
        {
            return Ok(old);
        }
        let manager = ConnectionManager::new_lazy_with_config(found.clone(), manager_config())?;
        let primary = Arc::new(Primary {
            address,
            client: found,
            manager,
        });
        let moved = self.primary.swap(Some(Arc::clone(&primary))).is_some();
        if let Some(changes) = self.changes.upgrade() {
            changes.found_primary(&primary.address, moved);
        }
        Ok(primary)
    }

    async fn primary(self: &Arc<Self>) -> RedisResult<ConnectionManager> {
        Ok(self.current().await?.manager.clone())
    }

    /// The sentinels announced that the primary moved: the next round
    /// trip asks them where.
    fn switched(&self) {
        self.stale.store(true, Ordering::Relaxed);
    }

    /// A round trip failed: when the way it failed is how a moved primary
    /// answers (it is gone, or it is a replica now), ask the sentinels
    /// again on the next one.
    fn failed(&self, err: &RedisError) {
        let moved = err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_timeout()
            || err.code() == Some("READONLY")
            || err.to_string().contains("READONLY");
        if moved {
            self.stale.store(true, Ordering::Relaxed);
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(watching) = self.watching.get() {
            watching.abort();
        }
    }
}

/// Hears the `+switch-master` announcements of the first of `sentinels`
/// that answers, for as long as `sentinel` lives: a failover of `name`
/// marks its primary stale at once (before it, the old primary may go on
/// taking writes until the sentinels turn it into a replica, seconds
/// later: a round trip's failure would find the move that late).
async fn watch(sentinels: Vec<String>, name: String, sentinel: std::sync::Weak<Sentinel>) {
    use futures_core::Stream;
    let mut backoff = crate::store::backend::changes::MIN_RELISTEN;
    loop {
        for address in &sentinels {
            let Ok(client) = redis::Client::open(address.as_str()) else {
                continue;
            };
            let subscribed = tokio::time::timeout(CONNECTION_TIMEOUT, async {
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe("+switch-master").await?;
                RedisResult::Ok(pubsub)
            })
            .await;
            let Ok(Ok(mut pubsub)) = subscribed else {
                continue;
            };
            backoff = crate::store::backend::changes::MIN_RELISTEN;
            // Whatever happened while no sentinel was heard.
            match sentinel.upgrade() {
                Some(live) => live.switched(),
                None => return,
            }
            let mut messages = std::pin::pin!(pubsub.on_message());
            while let Some(message) =
                std::future::poll_fn(|cx| messages.as_mut().poll_next(cx)).await
            {
                let Some(live) = sentinel.upgrade() else {
                    return;
                };
                // `name old-ip old-port new-ip new-port`.
                let text = message.get_payload_bytes();
                if text.split(|&b| b == b' ').next() == Some(name.as_bytes()) {
                    live.switched();
                }
            }
        }
        if sentinel.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(crate::store::backend::changes::MAX_RELISTEN);
    }
}
