//! Announcements anyone on a store's channel can send (SPEC §8, cached
//! mode: an announcement is a hint). A message that is not one, with
//! numbers that overflow, is dropped (and counted) and the listening task
//! goes on; a forged opening of a closed key, dated at the store's time or
//! after it, makes the cached circuit read the key, and no call is
//! refused; on a cluster, an opening published on another slot's channel
//! is dropped and counted, and one published on the key's own channel
//! through a replica refuses no call either.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{Counting, SharedFuse, Store};

use super::announced::eventually;
use super::{block_on, config, unique};

/// No mirror expires by staleness within a scenario.
const LONG: Duration = Duration::from_mins(1);

type Step = Pin<Box<dyn Future<Output = ()>>>;

/// Two processes' stores on one server and channel: `here` caches (and is
/// the store whose count of dropped announcements is read), `there` is
/// strict; `send` publishes a message on the channel of the key given
/// (the key's shard channel on a cluster) as anyone could, and
/// `listening` waits until `here` listens for the key given.
struct Channel {
    name: &'static str,
    here: Arc<dyn Store>,
    there: Arc<dyn Store>,
    send: Box<dyn Fn(String, Vec<u8>) -> Step>,
    listening: Box<dyn Fn(String) -> Step>,
}

/// What the crate's stores publish: the store's time in seconds and
/// microseconds, the key's length, then the key and the payload.
fn message(seconds: u64, micros: u64, key: &str, payload: &str) -> Vec<u8> {
    format!("{seconds} {micros} {} {key}{payload}", key.len()).into_bytes()
}

/// milon/fuse's payload of a circuit open since `opened_at` (Unix seconds).
fn open_since(opened_at: u64) -> String {
    format!(
        r#"{{"state":"open","opened_at":{opened_at},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#
    )
}

/// A cached circuit on `here` and a strict one on `there`, on `circuit`.
fn pair(
    channel: &Channel,
    circuit: &str,
) -> (SharedFuse, SharedFuse, Arc<Counting<Arc<dyn Store>>>) {
    let trips = Arc::new(Counting::new(channel.here.clone()));
    let here = fuse_breaker::Fuse::builder(circuit)
        .store(trips.clone())
        .config(config(3, 1))
        .cached(LONG)
        .build();
    let there = fuse_breaker::Fuse::builder(circuit)
        .store(channel.there.clone())
        .config(config(3, 1))
        .build();
    (here, there, trips)
}

/// Waits until `here` is refused, then refused by its mirror alone (ten
/// calls with no round trip): another process's opening reached it.
async fn refused_by_announcement(what: &str, here: &SharedFuse, trips: &Counting<Arc<dyn Store>>) {
    let refused = async || match here.try_acquire().await {
        Ok(permit) => {
            permit.ignore().await.unwrap();
            false
        }
        Err(refused) => refused.open_error().is_some(),
    };
    eventually(what, async || {
        let before = trips.round_trips();
        for _ in 0..10 {
            if !refused().await {
                return false;
            }
        }
        trips.round_trips() == before
    })
    .await;
}

async fn malformed_messages_leave_the_listener_listening(channel: Channel) {
    let name = channel.name;
    let circuit = unique("malformed");
    let (here, there, trips) = pair(&channel, &circuit);
    (channel.listening)(here.key().to_owned()).await;
    here.try_acquire().await.unwrap().success().await.unwrap();
    let dropped = channel.here.changes().unwrap().dropped();
    let key = here.key().to_owned();
    let bad: Vec<Vec<u8>> = vec![
        // Seconds and microseconds whose sum overflows a duration.
        b"18446744073709551615 1000000 1 x{}".to_vec(),
        // Microseconds that are not a fraction of a second.
        message(1_700_000_000, 1_000_000, &key, "{}"),
        // A time past what the clock of a store can say.
        message(u64::MAX, 0, &key, "{}"),
        // A key longer than the message, a key that is not UTF-8, no key.
        b"1700000000 0 18446744073709551615 fuse:a{}".to_vec(),
        b"1700000000 0 2 \xff\xfe{}".to_vec(),
        b"1700000000 0 0 {}".to_vec(),
        b"-1 0 1 x{}".to_vec(),
        b"".to_vec(),
    ];
    let count = u64::try_from(bad.len()).unwrap();
    for message in bad {
        (channel.send)(key.clone(), message).await;
    }
    // Still listening: an opening elsewhere reaches the mirror at once.
    there.force_open().await.unwrap();
    refused_by_announcement(name, &here, &trips).await;
    assert_eq!(
        channel.here.changes().unwrap().dropped() - dropped,
        count,
        "{name}: each malformed message dropped and counted"
    );
}

/// How many calls `here` makes after the forged announcements.
const CALLS: u64 = 1_000;

/// Forged openings of `here`'s closed key, dated at the store's time and a
/// day after it (`scheme` sends each on the channel as anyone could; the
/// channel itself is `channel`'s): once they were handled, `CALLS` calls
/// are all admitted, no announcement was dropped (each is a hint), and
/// each cost at most two reads of the key. A real opening still gets
/// through.
async fn a_forged_opening_refuses_no_call(channel: Channel) {
    let name = channel.name;
    // Two circuits in one hash slot (one shard channel on a cluster): the
    // second's opening marks when the forged messages (sent before it, on
    // the same channel) were handled.
    let tag = unique("forged");
    let (here, there, trips) = pair(&channel, &format!("{{{tag}}}open"));
    let (mark_here, mark_elsewhere, mark_trips) = pair(&channel, &format!("{{{tag}}}marker"));
    (channel.listening)(here.key().to_owned()).await;
    (channel.listening)(mark_here.key().to_owned()).await;
    here.try_acquire().await.unwrap().success().await.unwrap();
    mark_here
        .try_acquire()
        .await
        .unwrap()
        .success()
        .await
        .unwrap();
    let dropped = channel.here.changes().unwrap().dropped();
    let now = channel.here.load("fuse:clock").await.unwrap().now;
    let key = here.key().to_owned();
    let read = trips.round_trips();
    let forged = [now.as_secs(), now.as_secs() + 86_400];
    for at in forged {
        let micros = u64::from(now.subsec_micros());
        (channel.send)(key.clone(), message(at, micros, &key, &open_since(at))).await;
    }
    mark_elsewhere.force_open().await.unwrap();
    refused_by_announcement(name, &mark_here, &mark_trips).await;
    let mut refused = 0;
    for _ in 0..CALLS {
        match here.try_acquire().await {
            Ok(permit) => permit.success().await.unwrap(),
            Err(_) => refused += 1,
        }
    }
    assert_eq!(refused, 0, "{name}: calls refused by a forged opening");
    let reads = trips.round_trips() - read;
    assert!(
        reads <= 2 * forged.len() as u64,
        "{name}: {reads} round trips for {} forged announcements",
        forged.len()
    );
    assert_eq!(
        channel.here.changes().unwrap().dropped(),
        dropped,
        "{name}: announcements in the crate's format are hints, not dropped"
    );
    // A real opening still gets through.
    there.force_open().await.unwrap();
    refused_by_announcement(name, &here, &trips).await;
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use fuse_breaker::store::RedisStore;

    async fn subscribers(url: &str, channel: &str) -> u64 {
        let mut raw = crate::on_redis::raw(url).await;
        let counts: Vec<(String, u64)> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(channel)
            .query_async(&mut raw)
            .await
            .unwrap();
        counts.first().map_or(0, |(_, n)| *n)
    }

    fn channel(url: &str) -> Channel {
        channel_on("redis", url, url)
    }

    /// Two processes' stores opened on `url`, on a channel of their own
    /// that `send` publishes on and `listening` asks of the server `node`.
    pub(super) fn channel_on(name: &'static str, url: &str, node: &str) -> Channel {
        let channel = unique("forged");
        let here = RedisStore::open(url).unwrap().with_channel(&channel);
        let there = RedisStore::open(url).unwrap().with_channel(&channel);
        let (send_url, send_channel) = (node.to_owned(), channel.clone());
        let (wait_url, wait_channel) = (node.to_owned(), channel);
        Channel {
            name,
            here: Arc::new(here),
            there: Arc::new(there),
            send: Box::new(move |_, message| {
                let (url, channel) = (send_url.clone(), send_channel.clone());
                Box::pin(async move {
                    let mut raw = crate::on_redis::raw(&url).await;
                    let _: u64 = redis::cmd("PUBLISH")
                        .arg(&channel)
                        .arg(message)
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                })
            }),
            listening: Box::new(move |_| {
                let (url, channel) = (wait_url.clone(), wait_channel.clone());
                Box::pin(async move {
                    eventually("subscribed", async || {
                        subscribers(&url, &channel).await == 1
                    })
                    .await;
                    // The new subscription forgets mirrors once it is made.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }),
        }
    }

    #[test]
    fn malformed_announcements_on_redis_leave_the_listener_listening() {
        let Some(url) = crate::redis_url() else {
            return;
        };
        block_on(async { malformed_messages_leave_the_listener_listening(channel(&url)).await });
    }

    #[test]
    fn a_forged_opening_on_redis_refuses_no_call() {
        let Some(url) = crate::redis_url() else {
            return;
        };
        block_on(async { a_forged_opening_refuses_no_call(channel(&url)).await });
    }
}

#[cfg(feature = "sql")]
mod on_postgres {
    use super::*;
    use fuse_breaker::store::SqlStore;

    async fn listeners(url: &str, channel: &str) -> i64 {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE query = $1")
            .bind(format!("LISTEN \"{channel}\""))
            .fetch_one(&pool)
            .await
            .unwrap()
    }

    fn channel(url: &str) -> Channel {
        // The table, made once.
        drop(crate::sql_store(url));
        let channel = unique("forged");
        let here = SqlStore::open(url).unwrap().with_channel(&channel);
        let there = SqlStore::open(url).unwrap().with_channel(&channel);
        let (send_url, send_channel) = (url.to_owned(), channel.clone());
        let (wait_url, wait_channel) = (url.to_owned(), channel);
        Channel {
            name: "postgres",
            here: Arc::new(here),
            there: Arc::new(there),
            send: Box::new(move |_, message| {
                let (url, channel) = (send_url.clone(), send_channel.clone());
                Box::pin(async move {
                    // A NOTIFY payload is text: bytes that are not UTF-8
                    // cannot be sent, and are not sent by this test.
                    let text = String::from_utf8_lossy(&message).into_owned();
                    let pool = sqlx::PgPool::connect(&url).await.unwrap();
                    sqlx::query("SELECT pg_notify($1, $2)")
                        .bind(&channel)
                        .bind(text)
                        .execute(&pool)
                        .await
                        .unwrap();
                })
            }),
            listening: Box::new(move |_| {
                let (url, channel) = (wait_url.clone(), wait_channel.clone());
                Box::pin(async move {
                    eventually("listening", async || listeners(&url, &channel).await == 1).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }),
        }
    }

    #[test]
    fn malformed_announcements_on_postgres_leave_the_listener_listening() {
        let Some(url) = crate::database_url() else {
            return;
        };
        block_on(async { malformed_messages_leave_the_listener_listening(channel(&url)).await });
    }

    #[test]
    fn a_forged_opening_on_postgres_refuses_no_call() {
        let Some(url) = crate::database_url() else {
            return;
        };
        block_on(async { a_forged_opening_refuses_no_call(channel(&url)).await });
    }
}

#[cfg(feature = "redis")]
mod on_cluster {
    use super::*;
    use fuse_breaker::store::RedisStore;
    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

    /// `command` on the node of `channel`'s slot that `to` picks.
    async fn on_slot_of(
        url: &str,
        channel: &str,
        to: SlotAddr,
        command: &redis::Cmd,
    ) -> redis::Value {
        let nodes: Vec<String> = url
            .trim_start_matches("redis+cluster://")
            .split(',')
            .map(|node| format!("redis://{node}"))
            .collect();
        let client = redis::cluster::ClusterClient::new(nodes).unwrap();
        let mut cluster = client.get_async_connection().await.unwrap();
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
            Route::with_key(channel, to),
        ));
        cluster
            .route_command(command.clone(), routing)
            .await
            .unwrap()
    }

    /// The cluster's stores on a channel of their own; `send` publishes on
    /// the key's shard channel through the node `to` picks (its primary,
    /// or a replica).
    fn channel(url: &str, to: SlotAddr) -> Channel {
        let name = unique("forged");
        let here = RedisStore::open(url).unwrap().with_channel(&name);
        let there = RedisStore::open(url).unwrap().with_channel(&name);
        let (sender, waiter) = (here.clone(), here.clone());
        let (send_url, wait_url) = (url.to_owned(), url.to_owned());
        Channel {
            name: if matches!(to, SlotAddr::Master) {
                "redis-cluster"
            } else {
                "redis-cluster through a replica"
            },
            here: Arc::new(here),
            there: Arc::new(there),
            send: Box::new(move |key, message| {
                let (url, channel) = (send_url.clone(), sender.channel_of(&key));
                Box::pin(async move {
                    let publish = redis::cmd("SPUBLISH").arg(&channel).arg(message).clone();
                    on_slot_of(&url, &channel, to, &publish).await;
                })
            }),
            listening: Box::new(move |key| {
                let (url, channel) = (wait_url.clone(), waiter.channel_of(&key));
                Box::pin(async move {
                    eventually("subscribed", async || {
                        let count = redis::cmd("PUBSUB")
                            .arg("SHARDNUMSUB")
                            .arg(&channel)
                            .clone();
                        let reply = on_slot_of(&url, &channel, SlotAddr::Master, &count).await;
                        let counts: Vec<(String, u64)> = redis::from_redis_value(reply).unwrap();
                        counts.first().is_some_and(|(_, n)| *n >= 1)
                    })
                    .await;
                    // A new subscription forgets its slot's mirrors once it
                    // is made.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }),
        }
    }

    #[test]
    fn a_forged_opening_on_a_redis_cluster_refuses_no_call() {
        let Some(url) = crate::redis_cluster_url() else {
            return;
        };
        block_on(async { a_forged_opening_refuses_no_call(channel(&url, SlotAddr::Master)).await });
    }

    #[test]
    fn a_forged_opening_through_a_cluster_replica_refuses_no_call() {
        let Some(url) = crate::redis_cluster_url() else {
            return;
        };
        block_on(async {
            a_forged_opening_refuses_no_call(channel(&url, SlotAddr::ReplicaRequired)).await;
        });
    }

    /// An opening of one key published on the shard channel of another
    /// slot (one this process listens on): dropped and counted, and not
    /// even a read; an opening of that other slot's own key, sent after it
    /// on the same channel, gets through.
    #[test]
    fn an_announcement_on_another_slot_s_channel_is_dropped_and_counted() {
        let Some(url) = crate::redis_cluster_url() else {
            return;
        };
        block_on(async {
            let channel = channel(&url, SlotAddr::Master);
            let (here, _, trips) = pair(&channel, &unique("slot-a"));
            let (b_here, b_elsewhere, b_trips) = pair(&channel, &unique("slot-b"));
            let (key, other) = (here.key().to_owned(), b_here.key().to_owned());
            assert_ne!(
                redis::cluster_routing::Slot::for_key(&key),
                redis::cluster_routing::Slot::for_key(&other),
                "two slots"
            );
            (channel.listening)(key.clone()).await;
            (channel.listening)(other.clone()).await;
            here.try_acquire().await.unwrap().success().await.unwrap();
            b_here.try_acquire().await.unwrap().success().await.unwrap();
            let dropped = channel.here.changes().unwrap().dropped();
            let read = trips.round_trips();
            let now = channel.here.load("fuse:clock").await.unwrap().now.as_secs();
            // `key`'s opening, on `other`'s slot's channel.
            (channel.send)(other.clone(), message(now, 0, &key, &open_since(now))).await;
            b_elsewhere.force_open().await.unwrap();
            refused_by_announcement("redis-cluster", &b_here, &b_trips).await;
            assert_eq!(
                channel.here.changes().unwrap().dropped() - dropped,
                1,
                "dropped and counted"
            );
            for _ in 0..CALLS {
                here.try_acquire().await.unwrap().success().await.unwrap();
            }
            assert_eq!(trips.round_trips(), read, "not even a read");
        });
    }
}

#[cfg(feature = "redis")]
mod on_sentinel {
    use super::*;
    use fuse_breaker::store::RedisStore;

    fn sentinel_url() -> Option<String> {
        crate::common::server("FUSE_TEST_REDIS_SENTINEL_URL", "Redis Sentinel")
    }

    /// The primary's URL, as a store opened on `url` finds it.
    async fn primary(url: &str) -> String {
        let store = RedisStore::open(url).unwrap();
        store.load("fuse:clock").await.unwrap();
        let address = store
            .changes()
            .unwrap()
            .primary()
            .expect("the primary was found");
        format!("redis://{address}")
    }

    /// The stores of two processes through Sentinel; `send` publishes on
    /// the channel of the primary.
    async fn channel(url: &str) -> Channel {
        super::on_redis::channel_on("redis-sentinel", url, &primary(url).await)
    }

    #[test]
    fn a_forged_opening_through_sentinel_refuses_no_call() {
        let Some(url) = sentinel_url() else {
            return;
        };
        block_on(async { a_forged_opening_refuses_no_call(channel(&url).await).await });
    }
}
