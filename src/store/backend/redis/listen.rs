//! How a [`RedisStore`](super::RedisStore) hears the announcements of
//! other processes, for as long as it lives:
//!
//! - on one server, on its channel (`SUBSCRIBE`);
//! - through Sentinel, on the channel of the primary found last, moving
//!   with the primary after a failover;
//! - on a cluster, on one sharded channel per hash slot that holds a key a
//!   cached circuit watches (`SSUBSCRIBE` to the store's channel followed
//!   by a hash tag in that slot, see [`slot_channel`]), so that an
//!   announcement is published and delivered by its key's shard alone,
//!   never broadcast to every node.
//!
//! An announcement names a key as Redis holds it: a store that keeps
//! circuits under a prefix (Laravel's cache) takes the announcements of
//! its own keys alone, as its circuits' keys, and leaves the others
//! (another store's on the same channel) alone, uncounted.
//!
//! Whenever a subscription begins again (the connection dropped, a slot
//! moved to another node, the primary moved) the mirrors it covers are
//! forgotten: announcements may have been missed. On a cluster that is
//! each confirmation of a sharded subscription, whoever asked for it (the
//! cluster client subscribes again by itself after it remakes a
//! connection). A sharded channel carries the announcements of its own
//! slot's keys: one naming a key of another slot is dropped and counted.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_core::Stream;
use redis::cluster_routing::Slot;
use redis::{PushInfo, PushKind, Value};

use super::link::{CONNECTION_TIMEOUT, Link, Sentinel};
use crate::store::Changes;
use crate::store::backend::changes::{MAX_RELISTEN, MIN_RELISTEN};

/// How often a listening task looks again at what it should listen to
/// (a primary that moved) when nothing wakes it.
const RECHECK: Duration = Duration::from_secs(1);

/// Listens on `channel` of one server and hands each announcement to
/// `changes`, for as long as the store lives; every mirror is forgotten
/// whenever the subscription begins again. `moved`: whether the server
/// is no longer the one to listen to (checked every [`RECHECK`]).
pub(super) async fn listen(
    client: redis::Client,
    channel: String,
    prefix: Arc<str>,
    changes: Weak<Changes>,
    moved: impl Fn() -> bool,
) {
    let mut backoff = MIN_RELISTEN;
    loop {
        if let Ok(Ok(mut pubsub)) =
            tokio::time::timeout(CONNECTION_TIMEOUT, subscribe(&client, &channel)).await
        {
            backoff = MIN_RELISTEN;
            let Some(live) = changes.upgrade() else {
                return;
            };
            live.lost();
            drop(live);
            let mut messages = std::pin::pin!(pubsub.on_message());
            loop {
                let next = std::future::poll_fn(|cx| messages.as_mut().poll_next(cx));
                let message = match tokio::time::timeout(RECHECK, next).await {
                    Ok(Some(message)) => message,
                    Ok(None) => break,
                    Err(_) if moved() => return,
                    Err(_) => continue,
                };
                let Some(live) = changes.upgrade() else {
                    return;
                };
                live.tell_wire_under(message.get_payload_bytes(), &prefix, |_| true);
            }
            let Some(live) = changes.upgrade() else {
                return;
            };
            live.lost();
        }
        if moved() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_RELISTEN);
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

/// Listens through Sentinel: on the primary found last, until it moves,
/// then on the new one (every mirror forgotten in between).
pub(super) async fn listen_sentinel(
    sentinel: Arc<Sentinel>,
    channel: String,
    prefix: Arc<str>,
    changes: Weak<Changes>,
) {
    let mut backoff = MIN_RELISTEN;
    loop {
        if let Ok(primary) = sentinel.current().await {
            backoff = MIN_RELISTEN;
            let (before, address) = (sentinel.moves(), primary.address.clone());
            let watched = Arc::clone(&sentinel);
            let elsewhere =
                move || watched.moves() != before || watched.address().as_ref() != Some(&address);
            listen(
                primary.client.clone(),
                channel.clone(),
                Arc::clone(&prefix),
                changes.clone(),
                elsewhere,
            )
            .await;
        } else {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_RELISTEN);
        }
        let Some(live) = changes.upgrade() else {
            return;
        };
        live.lost();
    }
}

/// The sharded channel of `slot`: `channel` followed by the hash tag
/// `{n}`, `n` the least number whose digits hash to that slot.
pub(super) fn slot_channel(channel: &str, slot: Slot) -> String {
    /// Every slot has a number below this one whose digits hash to it.
    const BELOW: u32 = 110_000;
    static TAGS: std::sync::OnceLock<HashMap<Slot, u32>> = std::sync::OnceLock::new();
    let tags = TAGS.get_or_init(|| {
        let mut tags = HashMap::with_capacity(16_384);
        let mut digits = String::new();
        for n in 0..BELOW {
            digits.clear();
            let _ = std::fmt::Write::write_fmt(&mut digits, format_args!("{n}"));
            tags.entry(Slot::for_key(&digits)).or_insert(n);
        }
        tags
    });
    let tag = tags.get(&slot).copied().unwrap_or_default();
    format!("{channel}{{{tag}}}")
}

/// The sharded channels of the slots subscribed to, each slot's worked
/// out once.
#[derive(Default)]
struct Channels {
    of_slot: HashMap<Slot, String>,
    slot_of: HashMap<Vec<u8>, Slot>,
}

impl Channels {
    fn of(&mut self, channel: &str, slot: Slot) -> String {
        let name = self
            .of_slot
            .entry(slot)
            .or_insert_with(|| slot_channel(channel, slot))
            .clone();
        self.slot_of.insert(name.clone().into_bytes(), slot);
        name
    }
}

/// What the cluster's nodes pushed that the listening task must act on.
#[derive(Default)]
struct News {
    /// A node's connection dropped: every subscription may be gone.
    disconnected: bool,
    /// The channels a node unsubscribed this process from (their slot
    /// moved away from it).
    unsubscribed: Vec<Vec<u8>>,
}

/// Listens on a cluster (see the module docs): subscribes to the slot of
/// every key a cached circuit watches, and again whenever a node drops
/// the subscription.
pub(super) async fn listen_cluster(
    nodes: Vec<String>,
    channel: String,
    prefix: Arc<str>,
    changes: Weak<Changes>,
) {
    // The slot of a circuit's key is its Redis key's.
    let slot_of = {
        let prefix = Arc::clone(&prefix);
        move |key: &str| slot(&prefix, key)
    };
    let news = Arc::new(Mutex::new(News::default()));
    let pushed = {
        let (news, changes) = (Arc::clone(&news), changes.clone());
        let (prefix, slot_of) = (Arc::clone(&prefix), slot_of.clone());
        move |push: PushInfo| {
            let Some(live) = changes.upgrade() else {
                return;
            };
            match (push.kind, push.data.as_slice()) {
                (PushKind::SMessage, [Value::BulkString(channel), Value::BulkString(message)]) => {
                    // A sharded channel carries the keys of its own slot.
                    let slot = Slot::for_key(channel);
                    live.tell_wire_under(message, &prefix, |key| Slot::for_key(key) == slot);
                    return;
                }
                (PushKind::Disconnection, _) => {
                    lock(&news).disconnected = true;
                }
                (PushKind::SSubscribe, [Value::BulkString(name), ..]) => {
                    // A subscription begins (this task's, or the cluster
                    // client's own after a connection was remade): what
                    // its slot's mirrors knew may be older than what was
                    // missed. The channel is in its keys' slot.
                    let slot = Slot::for_key(name);
                    live.lost_where(|key| slot_of(key) == slot);
                    return;
                }
                (PushKind::SUnsubscribe, [Value::BulkString(name), ..]) => {
                    let mut news = lock(&news);
                    // At most one entry per channel subscribed to.
                    if news.unsubscribed.len() < 1 << 15 {
                        news.unsubscribed.push(name.clone());
                    }
                }
                _ => return,
            }
            live.wake.notify_one();
        }
    };
    let Ok(mut connection) = Link::cluster(&nodes, Some(Arc::new(pushed))) else {
        return;
    };
    let mut channels = Channels::default();
    let mut subscribed: HashSet<Slot> = HashSet::new();
    let mut backoff = MIN_RELISTEN;
    loop {
        let Some(live) = changes.upgrade() else {
            return;
        };
        let News {
            disconnected,
            unsubscribed,
        } = std::mem::take(&mut *lock(&news));
        if disconnected {
            subscribed.clear();
            live.lost();
        }
        for name in unsubscribed {
            if let Some(&slot) = channels.slot_of.get(&name) {
                subscribed.remove(&slot);
                live.lost_where(|key| slot_of(key) == slot);
            }
        }
        let wanted: HashSet<Slot> = live.keys().iter().map(|key| slot_of(key)).collect();
        drop(live);
        let mut fresh = Vec::new();
        let mut failed = false;
        for &slot in wanted.difference(&subscribed) {
            let name = channels.of(&channel, slot);
            match tokio::time::timeout(CONNECTION_TIMEOUT, connection.ssubscribe(&name)).await {
                Ok(Ok(())) => fresh.push(slot),
                _ => failed = true,
            }
        }
        subscribed.extend(fresh.iter().copied());
        let unwanted: Vec<Slot> = subscribed.difference(&wanted).copied().collect();
        for slot in unwanted {
            let name = channels.of(&channel, slot);
            if let Ok(Ok(())) =
                tokio::time::timeout(CONNECTION_TIMEOUT, connection.sunsubscribe(&name)).await
            {
                subscribed.remove(&slot);
            }
        }
        let Some(live) = changes.upgrade() else {
            return;
        };
        if !fresh.is_empty() {
            live.lost_where(|key| fresh.contains(&slot_of(key)));
        }
        let wait = if failed {
            let wait = backoff;
            backoff = (backoff * 2).min(MAX_RELISTEN);
            wait
        } else {
            backoff = MIN_RELISTEN;
            RECHECK
        };
        // Woken by a new key or a node's news, or after `wait`.
        let _ = tokio::time::timeout(wait, live.wake.notified()).await;
    }
}

/// The slot of the Redis key of the circuit under `key`.
fn slot(prefix: &str, key: &str) -> Slot {
    if prefix.is_empty() {
        return Slot::for_key(key);
    }
    Slot::for_key(format!("{prefix}{key}"))
}

fn lock(news: &Mutex<News>) -> std::sync::MutexGuard<'_, News> {
    news.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
