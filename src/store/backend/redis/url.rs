//! What a Redis URL names: one server, a cluster (`redis+cluster://`) or
//! a primary that Sentinel watches (`redis+sentinel://`).
//!
//! - `redis://host:port/db` (and every scheme of the `redis` crate):
//!   one server;
//! - `redis+cluster://[user:password@]host:port[,host:port...]` (or
//!   `rediss+cluster://` for TLS): a Redis Cluster, found from any of the
//!   nodes listed (one is enough; more let it start while one is down);
//! - `redis+sentinel://[user:password@]host:port[,host:port...]/name[/db]`
//!   (or `rediss+sentinel://`): the primary that the listed sentinels know
//!   as `name`; the user and password are the primary's (the sentinels
//!   are asked without).

use std::fmt::Write as _;

/// A cluster's schemes, and whether each speaks TLS.
const CLUSTER: [(&str, bool); 2] = [("redis+cluster", false), ("rediss+cluster", true)];
/// Sentinel's schemes, and whether each speaks TLS to the primary.
const SENTINEL: [(&str, bool); 2] = [("redis+sentinel", false), ("rediss+sentinel", true)];

/// What a URL names.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// One server, at this URL.
    Node(String),
    /// A cluster: a `redis://` (or `rediss://`) URL for each node listed.
    Cluster(Vec<String>),
    /// The primary that the sentinels (`redis://host:port` each) know as
    /// `name`.
    Sentinel {
        sentinels: Vec<String>,
        name: String,
        db: i64,
        user: Option<String>,
        password: Option<String>,
        tls: bool,
    },
}

/// What `url` names, or why it names nothing (a reason that never quotes
/// its password). The user and password are whatever lies before the
/// last `@` (a password may hold `/`, `?`, `#` or `@` unescaped); each
/// node's URL of a cluster has them percent-encoded.
pub(super) fn target(url: &str) -> Result<Target, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(Target::Node(url.to_owned()));
    };
    let cluster = CLUSTER.iter().find(|(name, _)| *name == scheme);
    let sentinel = SENTINEL.iter().find(|(name, _)| *name == scheme);
    let (tls, is_cluster) = match (cluster, sentinel) {
        (Some(&(_, tls)), _) => (tls, true),
        (None, Some(&(_, tls))) => (tls, false),
        (None, None) => return Ok(Target::Node(url.to_owned())),
    };
    let (credentials, rest) = match rest.rsplit_once('@') {
        Some((credentials, rest)) => (Some(credentials), rest),
        None => (None, rest),
    };
    if rest.contains(['?', '#']) {
        return Err(format!("{scheme}:// takes no query parameters or fragment"));
    }
    let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
    let nodes = addresses(scheme, hosts)?;
    let (user, password) = match credentials {
        None => (None, None),
        Some(credentials) => {
            let (user, password) = credentials.split_once(':').unwrap_or((credentials, ""));
            let some = |s: &str| (!s.is_empty()).then(|| decode(s));
            (some(user), some(password))
        }
    };
    if is_cluster {
        if !path.is_empty() {
            return Err(format!(
                "{scheme}:// takes no database or path (a cluster has database 0 only)"
            ));
        }
        let base = if tls { "rediss" } else { "redis" };
        let auth = match (&user, &password) {
            (None, None) => String::new(),
            (user, None) => format!("{}@", encode(user.as_deref().unwrap_or_default())),
            (user, Some(password)) => format!(
                "{}:{}@",
                encode(user.as_deref().unwrap_or_default()),
                encode(password)
            ),
        };
        return Ok(Target::Cluster(
            nodes
                .iter()
                .map(|node| format!("{base}://{auth}{node}"))
                .collect(),
        ));
    }
    let (name, db) = path.split_once('/').unwrap_or((path, ""));
    if name.is_empty() {
        return Err(format!(
            "{scheme}:// needs the name the sentinels monitor, after the hosts \
             ({scheme}://host:port,host:port/name)"
        ));
    }
    let db = match db {
        "" => 0,
        db => db
            .parse()
            .ok()
            .filter(|&db: &i64| db >= 0)
            .ok_or_else(|| format!("its database {db:?} is not a number"))?,
    };
    Ok(Target::Sentinel {
        sentinels: nodes.iter().map(|node| format!("redis://{node}")).collect(),
        name: decode(name),
        db,
        user,
        password,
        tls,
    })
}

/// The `host:port` list of a cluster or Sentinel URL, each checked.
fn addresses(scheme: &str, hosts: &str) -> Result<Vec<String>, String> {
    let mut nodes = Vec::new();
    for node in hosts.split(',') {
        let node = node.trim();
        let Some((host, port)) = node.rsplit_once(':') else {
            return Err(format!(
                "{node:?} is not host:port ({scheme}://host:port,host:port...)"
            ));
        };
        if host.is_empty() || port.parse::<u16>().map_or(true, |port| port == 0) {
            return Err(format!(
                "{node:?} is not host:port ({scheme}://host:port,host:port...)"
            ));
        }
        nodes.push(node.to_owned());
    }
    Ok(nodes)
}

/// `text` with every byte but the unreserved ones (RFC 3986) as a `%XX`
/// escape: a user or password as a node's URL holds it.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// `text` with its `%XX` escapes decoded (left as they are where they
/// are not escapes, or not UTF-8).
pub(super) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests;
