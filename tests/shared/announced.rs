//! Transitions announced through the store (SPEC §8, cached mode): another
//! process's opening and closing reach a cached circuit's mirror at once,
//! not up to its staleness later, through one read of the key that the
//! announcement asks for (an announcement is a hint), after which the
//! mirror decides alone; the mirror goes when the channel of announcements
//! drops, and comes back with it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuse_breaker::store::{Counting, MemoryStore, SharedFuse, Store};

use super::{block_on, config};

/// A minute: no mirror expires by staleness within a scenario, so what
/// changes it is an announcement.
const LONG: Duration = Duration::from_mins(1);

type Step<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Two processes' stores on one server (`here` caches, `there` is
/// strict), and how to drop `here`'s channel and wait until it is back.
struct Fleet {
    name: &'static str,
    here: Arc<dyn Store>,
    there: Arc<dyn Store>,
    /// Waits until `here` listens for the key given (its subscription is
    /// made by a task).
    listening: Box<dyn Fn(String) -> Step<'static>>,
    /// Drops `here`'s channel and waits until it is listening again for
    /// the key given.
    drop_channel: Box<dyn Fn(String) -> Step<'static>>,
}

/// Polls `done` until it holds, for up to two seconds (an announcement
/// crosses the server's pub/sub).
pub(super) async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !done().await {
        assert!(start.elapsed() < Duration::from_secs(2), "{what}: never");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The scenario under both policies: `count` (threshold 3) on `circuit`,
/// then `rate` (80 % of at least 5 calls: the same three failures open it)
/// on a circuit of its own.
async fn scenario(fleet: Fleet, circuit: &str) {
    scenario_of(&fleet, circuit, config(3, 1)).await;
    let rate = fuse_breaker::Config::builder()
        .policy(fuse_breaker::config::Policy::Rate)
        .failure_rate(80)
        .minimum_calls(5)
        .build()
        .unwrap();
    scenario_of(&fleet, &format!("{circuit}-rate"), rate).await;
}

/// The reads one announcement may cost a cached circuit: the one it asks
/// for, one more if another announcement crossed it, and as many for the
/// announcements a channel that came back hands over again (the cluster
/// client does), two at a time at most. Never one per call.
const READS: u64 = 4;

/// Whether `here`'s call is refused by an open circuit (`open`) or
/// admitted and succeeds (`!open`).
async fn finds(here: &SharedFuse, open: bool) -> bool {
    match here.try_acquire().await {
        Ok(permit) if !open => permit.success().await.is_ok(),
        Ok(permit) => {
            permit.ignore().await.unwrap();
            false
        }
        Err(refused) => open && refused.open_error().is_some(),
    }
}

/// Waits until twenty calls in a row of `here` find the circuit `open` (or
/// closed) with no round trip: its mirror decides alone.
async fn decided_by_the_mirror(
    what: &str,
    here: &SharedFuse,
    trips: &Counting<Arc<dyn Store>>,
    open: bool,
) {
    eventually(what, async || {
        let before = trips.round_trips();
        for _ in 0..20 {
            if !finds(here, open).await {
                return false;
            }
        }
        trips.round_trips() == before
    })
    .await;
}

async fn scenario_of(fleet: &Fleet, circuit: &str, config: fuse_breaker::Config) {
    let name = fleet.name;
    let trips = Arc::new(Counting::new(fleet.here.clone()));
    let here = fuse_breaker::Fuse::builder(circuit)
        .store(trips.clone())
        .config(config.clone())
        .cached(LONG)
        .build();
    let there = fuse_breaker::Fuse::builder(circuit)
        .store(fleet.there.clone())
        .config(config)
        .build();
    (fleet.listening)(here.key().to_owned()).await;
    // The key exists before `here` reads it (its first write is
    // announced too): a failure and the success that clears it.
    there.try_acquire().await.unwrap().failure().await.unwrap();
    there.try_acquire().await.unwrap().success().await.unwrap();
    here.try_acquire().await.unwrap().success().await.unwrap();
    decided_by_the_mirror(name, &here, &trips, false).await;

    // Three failures elsewhere: the third opens the circuit, announced,
    // and `here` reads the key once: its mirror rejects from then on.
    let read = trips.round_trips();
    for _ in 0..3 {
        there.try_acquire().await.unwrap().failure().await.unwrap();
    }
    eventually(name, async || finds(&here, true).await).await;
    let reads = trips.round_trips() - read;
    assert!(
        (1..=READS).contains(&reads),
        "{name}: open by announcement, {reads} reads"
    );
    decided_by_the_mirror(name, &here, &trips, true).await;

    // Closed elsewhere: closed here, and quiet, after one read.
    let read = trips.round_trips();
    there.force_closed().await.unwrap();
    eventually(name, async || finds(&here, false).await).await;
    let reads = trips.round_trips() - read;
    assert!(
        (1..=READS).contains(&reads),
        "{name}: closed by announcement, {reads} reads"
    );
    decided_by_the_mirror(name, &here, &trips, false).await;

    // The channel drops: the mirror goes, and the key is read again, by
    // the next call or by a read an announcement asked for meanwhile (the
    // cluster client hands over again, once it has subscribed anew,
    // announcements it delivered before).
    let read = trips.round_trips();
    (fleet.drop_channel)(here.key().to_owned()).await;
    here.try_acquire().await.unwrap().success().await.unwrap();
    let reads = trips.round_trips() - read;
    assert!(
        (1..=READS).contains(&reads),
        "{name}: read again, {reads} round trips"
    );
    // And it is back: the next transition is announced again.
    there.force_open().await.unwrap();
    eventually(name, async || here.try_acquire().await.is_err()).await;
    decided_by_the_mirror(name, &here, &trips, true).await;
}

#[test]
fn transitions_elsewhere_reach_the_mirror_at_once_in_memory() {
    let store = Arc::new(MemoryStore::frozen());
    let lost = store.clone();
    let fleet = Fleet {
        name: "memory",
        here: store.clone(),
        there: store,
        listening: Box::new(|_| Box::pin(async {})),
        drop_channel: Box::new(move |_| {
            let store = lost.clone();
            Box::pin(async move { store.changes().unwrap().lost() })
        }),
    };
    block_on(scenario(fleet, "billing"));
}

#[cfg(feature = "redis")]
#[test]
fn transitions_elsewhere_reach_the_mirror_at_once_on_redis() {
    use fuse_breaker::store::RedisStore;

    let Some(url) = super::redis_url() else {
        return;
    };
    block_on(async move {
        // Two processes' connections (each store its own), on a channel of
        // this test's own.
        let channel = super::unique("changes");
        let here = RedisStore::open(&url).unwrap().with_channel(&channel);
        let there = RedisStore::open(&url).unwrap().with_channel(&channel);
        let subscribers = {
            let (url, channel) = (url.clone(), channel.clone());
            move || {
                let (url, channel) = (url.clone(), channel.clone());
                async move {
                    let mut raw = super::on_redis::raw(&url).await;
                    let counts: Vec<(String, u64)> = redis::cmd("PUBSUB")
                        .arg("NUMSUB")
                        .arg(&channel)
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    counts.first().map_or(0, |(_, n)| *n)
                }
            }
        };
        let listening = {
            let subscribers = subscribers.clone();
            move |_| -> Step<'static> {
                let subscribers = subscribers.clone();
                Box::pin(async move {
                    eventually("subscribed", async || subscribers().await == 1).await;
                    // The new subscription forgets mirrors once it is made.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }
        };
        let drop_channel = {
            let (url, listening) = (url.clone(), listening.clone());
            move |key| -> Step<'static> {
                let (url, listening, subscribers) =
                    (url.clone(), listening.clone(), subscribers.clone());
                Box::pin(async move {
                    // Every subscriber of the server: no other scenario
                    // here caches on Redis, so only this one's is dropped
                    // (and `here` is its only one).
                    let mut raw = super::on_redis::raw(&url).await;
                    let _: u64 = redis::cmd("CLIENT")
                        .arg("KILL")
                        .arg("TYPE")
                        .arg("pubsub")
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                    eventually("dropped", async || subscribers().await == 0).await;
                    listening(key).await;
                })
            }
        };
        let fleet = Fleet {
            name: "redis",
            here: Arc::new(here),
            there: Arc::new(there),
            listening: Box::new(listening),
            drop_channel: Box::new(drop_channel),
        };
        scenario(fleet, &super::unique("billing")).await;
    });
}

/// On a Redis Cluster: each key's transitions are announced on the
/// sharded channel of its slot, heard by its shard's subscribers alone.
#[cfg(feature = "redis")]
#[test]
fn transitions_elsewhere_reach_the_mirror_at_once_on_a_redis_cluster() {
    use fuse_breaker::store::RedisStore;
    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

    let Some(url) = super::redis_cluster_url() else {
        return;
    };
    block_on(async move {
        let channel = super::unique("changes");
        let here = RedisStore::open(&url).unwrap().with_channel(&channel);
        let there = RedisStore::open(&url).unwrap().with_channel(&channel);
        let sharded = Arc::new(here.clone());
        let nodes: Vec<String> = url
            .trim_start_matches("redis+cluster://")
            .split(',')
            .map(|node| format!("redis://{node}"))
            .collect();
        // The subscribers of `key`'s sharded channel, asked of its slot's
        // primary.
        let subscribers = {
            let (nodes, sharded) = (nodes.clone(), sharded.clone());
            move |key: String| {
                let (nodes, sharded) = (nodes.clone(), sharded.clone());
                async move {
                    let client = redis::cluster::ClusterClient::new(nodes).unwrap();
                    let mut cluster = client.get_async_connection().await.unwrap();
                    let name = sharded.channel_of(&key);
                    let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                        Route::with_key(&name, SlotAddr::Master),
                    ));
                    let reply = cluster
                        .route_command(
                            redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(&name).clone(),
                            routing,
                        )
                        .await
                        .unwrap();
                    let counts: Vec<(String, u64)> = redis::from_redis_value(reply).unwrap();
                    counts.first().map_or(0, |(_, n)| *n)
                }
            }
        };
        let listening = {
            let subscribers = subscribers.clone();
            move |key: String| -> Step<'static> {
                let subscribers = subscribers.clone();
                Box::pin(async move {
                    eventually("subscribed", async || subscribers(key.clone()).await == 1).await;
                    // A new subscription forgets its slot's mirrors once
                    // it is made.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }
        };
        let drop_channel = {
            let (nodes, listening) = (nodes.clone(), listening.clone());
            move |key: String| -> Step<'static> {
                let (nodes, listening) = (nodes.clone(), listening.clone());
                Box::pin(async move {
                    // Every subscriber of every node: no other scenario
                    // here caches on the cluster. (The cluster client
                    // subscribes again at once: what is seen is the
                    // mirror forgotten.)
                    let mut killed = 0;
                    for node in &nodes {
                        let mut raw = super::on_redis::raw(node).await;
                        let n: u64 = redis::cmd("CLIENT")
                            .arg("KILL")
                            .arg("TYPE")
                            .arg("pubsub")
                            .query_async(&mut raw)
                            .await
                            .unwrap();
                        killed += n;
                    }
                    assert!(killed >= 1, "no subscriber was dropped");
                    listening(key).await;
                })
            }
        };
        let fleet = Fleet {
            name: "redis-cluster",
            here: Arc::new(here),
            there: Arc::new(there),
            listening: Box::new(listening),
            drop_channel: Box::new(drop_channel),
        };
        scenario(fleet, &super::unique("billing")).await;
    });
}

#[cfg(feature = "sql")]
#[test]
fn transitions_elsewhere_reach_the_mirror_at_once_on_postgres() {
    use fuse_breaker::store::SqlStore;

    let Some(url) = super::database_url() else {
        return;
    };
    block_on(async move {
        // The table, made once.
        drop(super::sql_store(&url));
        // Two processes' pools (each store its own), on a channel of this
        // test's own.
        let channel = super::unique("changes");
        let here = SqlStore::open(&url).unwrap().with_channel(&channel);
        let there = SqlStore::open(&url).unwrap().with_channel(&channel);
        let listen = format!("LISTEN \"{channel}\"");
        let listeners = {
            let (url, listen) = (url.clone(), listen.clone());
            move || {
                let (url, listen) = (url.clone(), listen.clone());
                async move {
                    let pool = sqlx::PgPool::connect(&url).await.unwrap();
                    let count: i64 = sqlx::query_scalar(
                        "SELECT count(*) FROM pg_stat_activity WHERE query = $1",
                    )
                    .bind(&listen)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
                    count
                }
            }
        };
        let listening = {
            let listeners = listeners.clone();
            move |_| -> Step<'static> {
                let listeners = listeners.clone();
                Box::pin(async move {
                    eventually("listening", async || listeners().await == 1).await;
                    // The new listener forgets mirrors once it listens.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }
        };
        let drop_channel = {
            let (url, listening) = (url.clone(), listening.clone());
            move |key| -> Step<'static> {
                let (url, listening, listeners, listen) = (
                    url.clone(),
                    listening.clone(),
                    listeners.clone(),
                    listen.clone(),
                );
                Box::pin(async move {
                    let pool = sqlx::PgPool::connect(&url).await.unwrap();
                    sqlx::query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1",
                    )
                    .bind(&listen)
                    .execute(&pool)
                    .await
                    .unwrap();
                    eventually("dropped", async || listeners().await == 0).await;
                    listening(key).await;
                })
            }
        };
        let fleet = Fleet {
            name: "postgres",
            here: Arc::new(here),
            there: Arc::new(there),
            listening: Box::new(listening),
            drop_channel: Box::new(drop_channel),
        };
        scenario(fleet, &super::unique("billing")).await;
    });
}
