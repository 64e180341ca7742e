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
mod tests {
    use super::*;

    #[test]
    fn one_server_is_left_to_the_redis_crate() {
        for url in [
            "redis://127.0.0.1:6379/2",
            "rediss://h:1",
            "unix:///run/r.sock",
        ] {
            assert_eq!(target(url), Ok(Target::Node(url.to_owned())));
        }
    }

    #[test]
    fn a_cluster_lists_its_nodes() {
        assert_eq!(
            target("redis+cluster://10.0.0.1:7000,10.0.0.2:7001"),
            Ok(Target::Cluster(vec![
                "redis://10.0.0.1:7000".into(),
                "redis://10.0.0.2:7001".into()
            ]))
        );
        assert_eq!(
            target("rediss+cluster://app:s%40cret@cache.internal:6379"),
            Ok(Target::Cluster(vec![
                "rediss://app:s%40cret@cache.internal:6379".into()
            ]))
        );
        for (url, says) in [
            ("redis+cluster://h:1/2", "no database"),
            ("redis+cluster://h:1?password=x", "no query"),
            ("redis+cluster://h", "\"h\" is not host:port"),
            ("redis+cluster://h:1,,h:2", "\"\" is not host:port"),
            ("redis+cluster://h:0", "not host:port"),
            ("redis+cluster://:1", "not host:port"),
            ("redis+cluster://h:99999", "not host:port"),
        ] {
            let err = target(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn sentinel_names_the_primary() {
        assert_eq!(
            target("redis+sentinel://app:p%2Fw@s1:26379,s2:26379/shop/3"),
            Ok(Target::Sentinel {
                sentinels: vec!["redis://s1:26379".into(), "redis://s2:26379".into()],
                name: "shop".into(),
                db: 3,
                user: Some("app".into()),
                password: Some("p/w".into()),
                tls: false,
            })
        );
        assert_eq!(
            target("rediss+sentinel://:pw@s1:26379/shop"),
            Ok(Target::Sentinel {
                sentinels: vec!["redis://s1:26379".into()],
                name: "shop".into(),
                db: 0,
                user: None,
                password: Some("pw".into()),
                tls: true,
            })
        );
        for (url, says) in [
            ("redis+sentinel://s1:26379", "needs the name"),
            ("redis+sentinel://s1:26379/", "needs the name"),
            ("redis+sentinel://s1:26379/shop/x", "\"x\" is not a number"),
            ("redis+sentinel://s1/shop", "not host:port"),
        ] {
            let err = target(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
        let err = target("redis+sentinel://u:hunter2@s1/shop").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn a_password_may_hold_separators_unescaped() {
        assert_eq!(
            target("redis+cluster://app:hun/ter2@127.0.0.1:7000"),
            Ok(Target::Cluster(vec![
                "redis://app:hun%2Fter2@127.0.0.1:7000".into()
            ]))
        );
        assert_eq!(
            target("redis+cluster://:a@b?c#d/e%2F@[::1]:7000"),
            Ok(Target::Cluster(vec![
                "redis://:a%40b%3Fc%23d%2Fe%2F@[::1]:7000".into()
            ]))
        );
        let Ok(Target::Sentinel {
            user,
            password,
            name,
            ..
        }) = target("redis+sentinel://app:/hunter2@s1:26379/shop")
        else {
            panic!("not a Sentinel URL");
        };
        assert_eq!(
            (user.as_deref(), password.as_deref(), name.as_str()),
            (Some("app"), Some("/hunter2"), "shop")
        );
    }

    #[test]
    fn no_error_quotes_the_user_or_password() {
        for url in [
            "redis+cluster://app:hun/ter2@127.0.0.1",
            "redis+cluster://app:hun/ter2@127.0.0.1:7000/1",
            "rediss+cluster://app:hun?ter2@127.0.0.1:7000?x",
            "redis+sentinel://app:/hunter2@s1:26379",
            "redis+sentinel://app:/hunter2@s1/shop",
            "redis+sentinel://app:/hunter2@s1:26379/shop/x",
            "redis+sentinel://app:hun#ter2@s1:1#x/shop",
        ] {
            let err = target(url).unwrap_err();
            for piece in ["app", "hun", "ter2"] {
                assert!(!err.contains(piece), "{url}: {err}");
            }
        }
    }

    #[test]
    fn escapes_are_decoded_where_they_are_escapes() {
        assert_eq!(decode("a%2Fb%zz%4"), "a/b%zz%4");
        assert_eq!(decode("%ff"), "%ff");
    }
}
