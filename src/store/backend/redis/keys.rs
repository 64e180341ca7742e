//! The keys of a [`RedisStore`](super::RedisStore) that start with a
//! prefix, a page at a time, by `SCAN` (which never blocks the server): on
//! one server (or Sentinel's primary) its cursor is `SCAN`'s; on a cluster
//! every primary is scanned in turn (in the order of their addresses), and
//! the cursor is `SCAN`'s on the node being scanned followed by `@` and
//! that node's `host:port`.

use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{RedisError, Value};

use super::link::Link;
use crate::store::{KeyPage, StoreError};

/// A page of the circuits' keys that start with `prefix`, from `after`
/// (a cursor a page before gave), about `limit` of them: a page ends at
/// `SCAN`'s step that reaches `limit`, so it may hold a few more. The
/// store keeps each circuit under `layout` followed by its key (Laravel's
/// prefixes, or nothing): the keys `SCAN`ned start with `layout` and
/// `prefix`, and are handed back without `layout`.
pub(super) async fn page(
    link: &Link,
    store: &str,
    layout: &str,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<KeyPage, StoreError> {
    let bad_cursor = |after: &str, why: &str| {
        StoreError::unreachable(
            store,
            format_args!("{after:?} is not a cursor of this store's key listing{why}"),
        )
    };
    let full = format!("{layout}{prefix}");
    let scan = Scan::new(&full, limit);
    let (mut found, next) = match link {
        Link::Cluster(cluster) => {
            let primaries = primaries(&mut cluster.clone())
                .await
                .map_err(|err| StoreError::unreachable(store, err))?;
            let (mut at, mut cursor) = match after {
                None => (0, 0),
                Some(after) => {
                    let (cursor, node) = after
                        .split_once('@')
                        .and_then(|(cursor, node)| Some((cursor.parse().ok()?, node)))
                        .ok_or_else(|| bad_cursor(after, ""))?;
                    let at = primaries.iter().position(|p| p == node).ok_or_else(|| {
                        bad_cursor(
                            after,
                            &format!(
                                ": {node} is no longer one of the cluster's primaries (a \
                                 failover or a resharding since the listing began); list again"
                            ),
                        )
                    })?;
                    (at, cursor)
                }
            };
            let mut found = Vec::new();
            loop {
                let Some(node) = primaries.get(at) else {
                    break (found, None);
                };
                let routing = by_address(node);
                let mut connection = cluster.clone();
                let (next, batch) = scan
                    .step(cursor, |cmd| {
                        let routing = routing.clone();
                        async move { connection.route_command(cmd, routing).await }
                    })
                    .await
                    .map_err(|err| StoreError::unreachable(store, err))?;
                found.extend(batch);
                cursor = next;
                if cursor == 0 {
                    at += 1;
                }
                if found.len() >= scan.limit {
                    let next = primaries.get(at).map(|node| format!("{cursor}@{node}"));
                    break (found, next);
                }
            }
        }
        Link::Node(_) | Link::Sentinel(_) => {
            let mut cursor: u64 = match after {
                None => 0,
                Some(after) => after
                    .parse()
                    .ok()
                    .filter(|&cursor| cursor != 0)
                    .ok_or_else(|| bad_cursor(after, ""))?,
            };
            let mut found = Vec::new();
            loop {
                let mut connection = link.clone();
                let (next, batch) = scan
                    .step(cursor, |cmd| async move {
                        cmd.query_async::<Value>(&mut connection).await
                    })
                    .await
                    .map_err(|err| StoreError::unreachable(store, err))?;
                found.extend(batch);
                cursor = next;
                if cursor == 0 || found.len() >= scan.limit {
                    break (found, (cursor != 0).then(|| cursor.to_string()));
                }
            }
        }
    };
    for key in &mut found {
        key.drain(..layout.len());
    }
    Ok(page_of(found, next))
}

/// One listing's `SCAN` arguments.
struct Scan<'a> {
    prefix: &'a str,
    pattern: String,
    limit: usize,
    count: usize,
}

impl<'a> Scan<'a> {
    fn new(prefix: &'a str, limit: usize) -> Self {
        let limit = limit.max(1);
        Scan {
            prefix,
            pattern: glob_of(prefix),
            limit,
            count: limit.clamp(10, 1000),
        }
    }

    /// One `SCAN` from `cursor`, sent by `send`: the next cursor, and the
    /// keys it found that start with the prefix.
    async fn step<F>(
        &self,
        cursor: u64,
        send: impl FnOnce(redis::Cmd) -> F,
    ) -> Result<(u64, Vec<Vec<u8>>), RedisError>
    where
        F: Future<Output = Result<Value, RedisError>>,
    {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(&self.pattern)
            .arg("COUNT")
            .arg(self.count);
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::from_redis_value(send(cmd).await?)?;
        let prefix = self.prefix.as_bytes();
        Ok((
            next,
            batch
                .into_iter()
                .filter(|key| key.starts_with(prefix))
                .collect(),
        ))
    }
}

/// The page of the keys found (sorted, each once; those that are not
/// UTF-8 apart).
fn page_of(mut found: Vec<Vec<u8>>, next: Option<String>) -> KeyPage {
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
    let mut page = KeyPage::new(keys, next);
    page.not_utf8 = not_utf8;
    page
}

/// The cluster's primaries that serve slots, `host:port` each, sorted (as
/// `CLUSTER NODES` on any node tells them).
async fn primaries(cluster: &mut ClusterConnection) -> Result<Vec<String>, RedisError> {
    let nodes: String = redis::from_redis_value(
        cluster
            .route_command(
                redis::cmd("CLUSTER").arg("NODES").clone(),
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary),
            )
            .await?,
    )?;
    let mut primaries = primaries_of(&nodes);
    primaries.sort_unstable();
    Ok(primaries)
}

/// The primaries that serve slots in `CLUSTER NODES`'s answer: lines of
/// `id host:port@bus[,hostname] flags primary-id ping pong epoch link
/// slots...`.
fn primaries_of(nodes: &str) -> Vec<String> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2)?.split(',').collect::<Vec<_>>();
            let serving = flags.contains(&"master")
                && !flags
                    .iter()
                    .any(|f| matches!(*f, "fail" | "noaddr" | "handshake"))
                && fields.get(7) == Some(&"connected")
                && fields.len() > 8;
            let address = fields.get(1)?.split('@').next()?;
            (serving && !address.starts_with(':')).then(|| address.to_owned())
        })
        .collect()
}

/// The routing of a command to the node at `host:port`.
fn by_address(node: &str) -> RoutingInfo {
    let (host, port) = node.rsplit_once(':').unwrap_or((node, "0"));
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
        host: host.to_owned(),
        port: port.parse().unwrap_or_default(),
    })
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

#[cfg(test)]
mod tests;
