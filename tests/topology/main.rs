//! A Redis Cluster's and Sentinel's topology changing under a busy
//! circuit (SPEC §8): a primary killed and its replica promoted, a slot
//! migrated to another primary, a Sentinel failover. No panic, the
//! fallback decides while no primary answers for the key, no failure a
//! round trip acknowledged is lost, and the processes use the store again
//! without a restart.
//!
//! On the cluster `.ci/servers.sh` starts (`FUSE_TEST_REDIS_CLUSTER_URL`,
//! `FUSE_TEST_REDIS_CLUSTER_DIR`) and the primary Sentinel watches
//! (`FUSE_TEST_REDIS_SENTINEL_URL`). These tests change them: they run one
//! at a time, in this binary of their own, and leave every node running
//! and every slot served.
#![cfg(feature = "redis")]

mod cluster;
#[path = "../common/mod.rs"]
mod common;
mod sentinel;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fuse_breaker::config::Fallback;
use fuse_breaker::events::StoreEvent;
use fuse_breaker::store::{Counting, RedisStore, SharedFuse, Store};
use fuse_breaker::{Config, State, Verdict, events::Listener, events::Transition};
use redis::cluster_routing::Slot;

use common::{server, unique};

/// One test at a time: each changes the topology.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A node of the cluster, as `CLUSTER NODES` tells it.
#[derive(Clone, Debug)]
struct Node {
    id: String,
    port: u16,
    primary: bool,
    /// The slot ranges it serves (a primary).
    slots: Vec<(u16, u16)>,
}

/// The cluster's nodes that are up, asked of any node of `url`'s list.
async fn nodes(url: &str) -> Vec<Node> {
    for port in ports(url) {
        if let Some(nodes) = nodes_seen_by(port).await {
            return nodes;
        }
    }
    panic!("no node of {url} answered");
}

/// The cluster's nodes that are up, as the node on `port` sees them
/// (`None` if it does not answer).
async fn nodes_seen_by(port: u16) -> Option<Vec<Node>> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let mut connection = tokio::time::timeout(
        Duration::from_millis(300),
        client.get_multiplexed_async_connection(),
    )
    .await
    .ok()?
    .ok()?;
    let text = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async::<String>(&mut connection)
        .await
        .ok()?;
    Some(
        text.lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let flags = *fields.get(2)?;
                if flags.contains("fail") || fields.get(7) != Some(&"connected") {
                    return None;
                }
                let port = fields[1]
                    .split('@')
                    .next()?
                    .rsplit(':')
                    .next()?
                    .parse()
                    .ok()?;
                let slots = fields[8..]
                    .iter()
                    .filter(|range| !range.starts_with('['))
                    .filter_map(|range| {
                        let (from, to) = range.split_once('-').unwrap_or((range, range));
                        Some((from.parse().ok()?, to.parse().ok()?))
                    })
                    .collect();
                Some(Node {
                    id: fields[0].to_owned(),
                    port,
                    primary: flags.contains("master"),
                    slots,
                })
            })
            .collect(),
    )
}

/// Which primary serves which slots, in a view of the cluster.
fn slot_map(nodes: &[Node]) -> Vec<(String, Vec<(u16, u16)>)> {
    let mut map: Vec<_> = nodes
        .iter()
        .filter(|n| n.primary && !n.slots.is_empty())
        .map(|n| (n.id.clone(), n.slots.clone()))
        .collect();
    map.sort();
    map
}

fn ports(url: &str) -> Vec<u16> {
    url.trim_start_matches("redis+cluster://")
        .split(',')
        .filter_map(|node| node.rsplit(':').next()?.parse().ok())
        .collect()
}

/// The number of `slot`.
fn number(slot: Slot) -> u16 {
    (0..16_384)
        .find(|&n| Slot::new(n) == Some(slot))
        .expect("a slot")
}

/// The primary serving the slot of `key`.
async fn primary_of(url: &str, key: &str) -> Node {
    let slot = number(Slot::for_key(key));
    nodes(url)
        .await
        .into_iter()
        .find(|node| node.primary && node.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
        .expect("a primary serves every slot")
}

/// A raw connection to the node on `port`.
async fn raw(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Waits until every node says the cluster is ok, and every slot has a
/// primary. A node restarted after a kill learns that it was demoted and
/// syncs from its new primary first, which takes a loaded machine a
/// while: up to a minute, then the failure says what each node saw.
async fn settled(url: &str) {
    let started = Instant::now();
    loop {
        let nodes = nodes(url).await;
        let served: u32 = nodes
            .iter()
            .filter(|n| n.primary)
            .flat_map(|n| n.slots.iter())
            .map(|&(a, b)| u32::from(b - a) + 1)
            .sum();
        let mut ok = served == 16_384;
        let mut views = Vec::new();
        for node in &nodes {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query_async(&mut raw(node.port).await)
                .await
                .unwrap_or_default();
            let state_ok = info.contains("cluster_state:ok");
            // Every node, replicas too, sees every slot where the others
            // do: a replica promoted with a stale view (a reshard that
            // had not reached it) would claim too few slots and leave the
            // cluster failing.
            let seen = nodes_seen_by(node.port).await.unwrap_or_default();
            let same = slot_map(&seen) == slot_map(&nodes);
            ok &= state_ok && same;
            if !(state_ok && same) {
                views.push(format!(
                    "node {}: cluster_state {}, slots {:?}",
                    node.port,
                    if state_ok { "ok" } else { "not ok" },
                    slot_map(&seen)
                ));
            }
        }
        if ok {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_mins(1),
            "the cluster did not settle in a minute: {served} primary slots served; {views:?}; \
             the nodes: {nodes:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a busy circuit's tasks saw.
#[derive(Default)]
struct Seen {
    /// Verdicts the store acknowledged, by kind.
    failures_written: AtomicU64,
    successes_written: AtomicU64,
    /// Calls the local fallback decided.
    local: AtomicU64,
    /// Verdicts the store did not acknowledge.
    unacknowledged: AtomicU64,
    /// Outages and returns the circuit's listener heard.
    outages: AtomicU64,
    returns: AtomicU64,
    /// The failovers it heard of: where the primary moved.
    failovers: Mutex<Vec<String>>,
}

struct Heard(Arc<Seen>);

impl Listener for Heard {
    fn on_transition(&self, _: &Transition) {}

    fn on_store(&self, event: &StoreEvent<'_>) {
        if let Some(error) = event.error {
            println!("store event: {error}");
        }
        if let Some(primary) = event.failover {
            self.0.failovers.lock().unwrap().push(primary.to_owned());
            return;
        }
        let counter = if event.reachable {
            &self.0.returns
        } else {
            &self.0.outages
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Eight tasks on `fuse`, each call a failure and a success in turn
/// (`failing`: `Some(n)`, `n` failures each, 10 ms apart), until `stop`.
fn load(
    fuse: &Arc<SharedFuse>,
    seen: &Arc<Seen>,
    stop: &Arc<AtomicBool>,
    failing: Option<u32>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..8)
        .map(|_| {
            let (fuse, seen, stop) = (fuse.clone(), seen.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut fail, mut calls) = (false, 0);
                while !stop.load(Ordering::Relaxed) && failing.is_none_or(|n| calls < n) {
                    calls += 1;
                    fail = failing.is_some() || !fail;
                    let permit = fuse.try_acquire().await.expect("never opens");
                    if !permit.from_store() {
                        seen.local.fetch_add(1, Ordering::Relaxed);
                    }
                    let from_store = permit.from_store();
                    let verdict = if fail {
                        Verdict::Failure
                    } else {
                        Verdict::Success
                    };
                    match permit.conclude(verdict).await {
                        Ok(()) if from_store => {
                            let written = if fail {
                                &seen.failures_written
                            } else {
                                &seen.successes_written
                            };
                            written.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(()) => {}
                        Err(_) => {
                            seen.unacknowledged.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let pause = if failing.is_some() { 10 } else { 2 };
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
            })
        })
        .collect()
}

/// A circuit that never opens (its threshold is above every failure the
/// tests make), local when the store does not answer.
fn busy(store: &Arc<dyn Store>, name: &str, seen: &Arc<Seen>) -> Arc<SharedFuse> {
    let config = Config::builder()
        .failure_threshold(4096)
        .failure_window(Duration::from_mins(10))
        .build()
        .unwrap();
    let fuse = fuse_breaker::Fuse::builder(name)
        .store(store.clone())
        .config(config)
        .fallback(Fallback::Local)
        .build();
    fuse.on_transition(Heard(seen.clone()));
    Arc::new(fuse)
}

/// Waits until `fuse` has written `n` more verdicts to the store.
async fn writes_again(seen: &Seen, n: u64, within: Duration) {
    let total = || {
        seen.failures_written.load(Ordering::Relaxed)
            + seen.successes_written.load(Ordering::Relaxed)
    };
    let (before, started) = (total(), Instant::now());
    while total() < before + n {
        assert!(started.elapsed() < within, "the store was not used again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Cuts the link of the replica on `port` to its primary, and keeps it
/// down (the replica authenticates to a primary that has no password)
/// until its `masterauth` is emptied again; a connection to it.
async fn cut_link(port: u16) -> redis::aio::MultiplexedConnection {
    let mut on_replica = raw(port).await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("masterauth")
        .arg("not-the-primary-s")
        .query_async(&mut on_replica)
        .await
        .unwrap();
    let _: u64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("master")
        .query_async(&mut on_replica)
        .await
        .unwrap();
    let cut_at = Instant::now();
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut on_replica)
            .await
            .unwrap();
        if info.contains("master_link_status:down") {
            break;
        }
        assert!(
            cut_at.elapsed() < Duration::from_secs(5),
            "the link stays up"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    on_replica
}

/// Waits until the replica of the node on `port` has its writes (`WAIT`).
async fn wait_for_replica(port: u16) {
    let acked: u64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2000)
        .query_async(&mut raw(port).await)
        .await
        .unwrap();
    assert_eq!(acked, 1, "the replica has the writes");
}

/// Kills the cluster node on `port` (`kill -9` of its pid).
fn kill(dir: &str, port: u16) {
    let pid = std::fs::read_to_string(format!("{dir}/{port}/pid")).unwrap();
    let killed = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
}

/// The port of the replica of `primary`.
async fn replica_of(url: &str, primary: &Node) -> u16 {
    for node in nodes(url).await.iter().filter(|n| !n.primary) {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut raw(node.port).await)
            .await
            .unwrap();
        if info.contains(&format!("master_port:{}", primary.port)) {
            return node.port;
        }
    }
    panic!("no replica of the node on port {}", primary.port);
}

/// Starts the node on `port` again, as `.ci/servers.sh` did.
fn restart_node(dir: &str, port: u16) {
    let node = format!("{dir}/{port}");
    let status = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
        .arg("--cluster-config-file")
        .arg(format!("{node}/nodes.conf"))
        .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
        .arg("--pidfile")
        .arg(format!("{node}/pid"))
        .arg("--logfile")
        .arg(format!("{node}/log"))
        .arg("--dir")
        .arg(&node)
        .status()
        .unwrap();
    assert!(status.success(), "redis-server restarted");
}

/// How many slots the resharding test moves (the busy key's first).
const SLOTS: u32 = 50;

/// `redis-cli --cluster reshard`: `slots` slots of the node `from` (its
/// first ones) to the node `to`.
fn reshard(port: u16, from: &str, to: &str, slots: u32) {
    let output = Command::new("redis-cli")
        .args(["--cluster", "reshard", &format!("127.0.0.1:{port}")])
        .args(["--cluster-from", from, "--cluster-to", to])
        .args(["--cluster-slots", &slots.to_string(), "--cluster-yes"])
        .output()
        .expect("redis-cli (installed with redis-server)");
    assert!(
        output.status.success(),
        "redis-cli --cluster reshard: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A cached circuit `name` on `store` (its round trips counted) that has
/// made its first call, and a strict one of another process's store on
/// `url`.
async fn cached_pair(
    store: &Arc<dyn Store>,
    url: &str,
    name: &str,
) -> (SharedFuse, Arc<Counting<Arc<dyn Store>>>, SharedFuse) {
    let counted = Arc::new(Counting::new(store.clone()));
    let here = fuse_breaker::Fuse::builder(name)
        .store(counted.clone())
        .cached(Duration::from_mins(1))
        .build();
    let elsewhere: Arc<dyn Store> = Arc::new(RedisStore::open(url).unwrap());
    let there = fuse_breaker::Fuse::builder(name).store(elsewhere).build();
    here.try_acquire().await.unwrap().success().await.unwrap();
    (here, counted, there)
}

/// Waits until the cached circuit `here` has a mirror of its key (it
/// subscribed again after its slot moved), then opens the circuit
/// through `there` and waits until `here` rejects from its mirror, after
/// the one read the announcement asks for.
async fn mirrored(here: &SharedFuse, counted: &Counting<Arc<dyn Store>>, there: &SharedFuse) {
    let started = Instant::now();
    loop {
        let trips = counted.round_trips();
        here.try_acquire().await.unwrap().success().await.unwrap();
        if counted.round_trips() == trips {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the mirror never came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let trips = counted.round_trips();
    there.force_open().await.unwrap();
    let started = Instant::now();
    while here.try_acquire().await.is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the opening was never announced to the slot's new owner's subscribers"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The announcement is a hint: the one read it asked for (two, if
    // another crossed it) brought the opening.
    let reads = counted.round_trips() - trips;
    assert!(
        (1..=2).contains(&reads),
        "{reads} reads for one announcement"
    );
    let trips = counted.round_trips();
    for _ in 0..10 {
        assert!(here.try_acquire().await.is_err(), "open");
    }
    assert_eq!(counted.round_trips(), trips, "rejected by the mirror");
}
