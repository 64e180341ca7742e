//! URLs as the crate prints them: without their secrets.
//!
//! Every URL the crate puts in an error, an event, a `Debug` output, the
//! admin API's views or the `fuse` command's output goes through
//! [`url`] (or [`text`], for a message that may quote one): the user and
//! password before the host are left out, and the values of query
//! parameters that look like secrets (a name containing `pass`, `pwd`,
//! `secret`, `token`, `key`, `auth` or `credential`, in any case) are
//! replaced by `***`. It is the same for every scheme the crate reads
//! (`postgres`, `postgresql`, `redis`, `rediss`, `redis+unix`, `unix`,
//! `sqlite`, `http`, `https`), and for strings that are not valid URLs at
//! all, which are the ones that end up in error messages.
//!
//! ```
//! use fuse_breaker::redact;
//! assert_eq!(
//!     redact::url("postgres://admin:hunter2@db.internal/shop?sslmode=require&password=hunter2"),
//!     "postgres://db.internal/shop?sslmode=require&password=***"
//! );
//! assert_eq!(redact::url("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
//! ```

use std::borrow::Cow;

/// What a query parameter's name contains when its value is a secret.
const SECRET_NAMES: [&str; 7] = [
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "credential",
];

/// What a redacted value is replaced by.
const HIDDEN: &str = "***";

/// `url` without its user, password and secret query values (see the
/// [module docs](self)); borrowed when there is nothing to hide.
///
/// The user and password are whatever lies between `://` and the last `@`
/// before the query (a password with an unescaped `/` or `@` is hidden
/// too, at the cost of the host when the path has an `@`).
///
/// ```
/// use fuse_breaker::redact;
/// assert_eq!(redact::url("http://admin:hunter2@host:8080/fuse"), "http://host:8080/fuse");
/// assert_eq!(redact::url("redis+unix:///run/redis.sock?db=2&pass=hunter2"),
///            "redis+unix:///run/redis.sock?db=2&pass=***");
/// assert_eq!(redact::url("sqlite:/var/lib/fuse.db"), "sqlite:/var/lib/fuse.db");
/// ```
pub fn url(url: &str) -> Cow<'_, str> {
    let (before_query, query) = match url.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (url, None),
    };
    let mut out: Option<String> = None;
    let mut base = before_query;
    if let Some(start) = before_query.find("://").map(|at| at + 3)
        && let Some(at) = before_query[start..].rfind('@')
    {
        let mut kept = String::with_capacity(url.len());
        kept.push_str(&before_query[..start]);
        kept.push_str(&before_query[start + at + 1..]);
        out = Some(kept);
        base = "";
    }
    let Some(query) = query else {
        return out.map_or(Cow::Borrowed(url), Cow::Owned);
    };
    let redacted = redact_query(query);
    if out.is_none() && matches!(redacted, Cow::Borrowed(_)) {
        return Cow::Borrowed(url);
    }
    let mut whole = out.unwrap_or_default();
    whole.push_str(base);
    whole.push('?');
    whole.push_str(&redacted);
    Cow::Owned(whole)
}

/// `query` (after the `?`) with the values of secret-looking parameters
/// hidden.
fn redact_query(query: &str) -> Cow<'_, str> {
    let secret = |pair: &str| {
        pair.split_once('=').is_some_and(|(name, value)| {
            let name = name.to_ascii_lowercase();
            !value.is_empty() && SECRET_NAMES.iter().any(|secret| name.contains(secret))
        })
    };
    if !query.split(['&', ';']).any(secret) {
        return Cow::Borrowed(query);
    }
    let mut out = String::with_capacity(query.len());
    let mut rest = query;
    loop {
        let end = rest.find(['&', ';']).unwrap_or(rest.len());
        let pair = &rest[..end];
        match pair.split_once('=') {
            Some((name, _)) if secret(pair) => {
                out.push_str(name);
                out.push('=');
                out.push_str(HIDDEN);
            }
            _ => out.push_str(pair),
        }
        if end == rest.len() {
            break;
        }
        out.push_str(&rest[end..=end]);
        rest = &rest[end + 1..];
    }
    Cow::Owned(out)
}

/// `message` with every URL in it redacted (see [`url`]): for the text of
/// an error from a client library, which may quote the URL it was given.
/// A URL is taken to run from its scheme to the next whitespace, quote,
/// bracket or parenthesis.
///
/// ```
/// use fuse_breaker::redact;
/// assert_eq!(
///     redact::text("error sending request for url (http://admin:hunter2@host/fuse/circuits)"),
///     "error sending request for url (http://host/fuse/circuits)"
/// );
/// assert_eq!(redact::text("connection refused"), "connection refused");
/// ```
pub fn text(message: &str) -> Cow<'_, str> {
    if !message.contains("://") && !message.contains('?') {
        return Cow::Borrowed(message);
    }
    let is_end = |c: char| c.is_whitespace() || "\"'`()<>[]{},".contains(c);
    let mut out = String::with_capacity(message.len());
    let mut changed = false;
    let mut rest = message;
    while !rest.is_empty() {
        let start = rest.find(|c: char| !is_end(c)).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(is_end).unwrap_or(rest.len());
        let word = &rest[..end];
        let looks_like_url = word.contains("://") || word.contains(":/") || word.contains('?');
        let redacted = if looks_like_url {
            url(word)
        } else {
            Cow::Borrowed(word)
        };
        changed |= matches!(redacted, Cow::Owned(_));
        out.push_str(&redacted);
        rest = &rest[end..];
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_left_out_for_every_scheme() {
        for (given, printed) in [
            (
                "postgres://admin:hunter2@db:5432/shop",
                "postgres://db:5432/shop",
            ),
            ("postgresql://admin:hunter2@db/shop", "postgresql://db/shop"),
            ("redis://:hunter2@cache:6379/2", "redis://cache:6379/2"),
            ("redis://user:hunter2@cache", "redis://cache"),
            ("rediss://user:hunter2@cache:6380", "rediss://cache:6380"),
            ("http://admin:hunter2@host/fuse", "http://host/fuse"),
            ("https://admin:hunter2@host/fuse", "https://host/fuse"),
            // Unescaped separators in the password are hidden with it.
            ("redis://:hun@ter/2@cache:6379", "redis://cache:6379"),
        ] {
            assert_eq!(url(given), printed, "{given}");
        }
    }

    #[test]
    fn secret_query_parameters_are_hidden_for_every_scheme() {
        for (given, printed) in [
            (
                "postgres://127.0.0.1:1/shop?user=admin&password=hunter2",
                "postgres://127.0.0.1:1/shop?user=admin&password=***",
            ),
            (
                "postgresql://db/shop?sslpassword=hunter2&sslmode=require",
                "postgresql://db/shop?sslpassword=***&sslmode=require",
            ),
            (
                "redis+unix:///x.sock?pass=hunter2",
                "redis+unix:///x.sock?pass=***",
            ),
            (
                "unix:///x.sock?db=1&user=u&password=hunter2",
                "unix:///x.sock?db=1&user=u&password=***",
            ),
            (
                "redis://cache/?Password=hunter2",
                "redis://cache/?Password=***",
            ),
            (
                "rediss://u:p@cache?token=hunter2;db=3",
                "rediss://cache?token=***;db=3",
            ),
            (
                "http://host/fuse?access_key=hunter2&x=1",
                "http://host/fuse?access_key=***&x=1",
            ),
            (
                "sqlite:/tmp/a.db?mode=rwc&key=hunter2",
                "sqlite:/tmp/a.db?mode=rwc&key=***",
            ),
        ] {
            assert_eq!(url(given), printed, "{given}");
        }
    }

    #[test]
    fn urls_without_secrets_are_borrowed_unchanged() {
        for given in [
            "redis://127.0.0.1:6379",
            "postgres://db/shop?sslmode=require",
            "sqlite::memory:",
            "sqlite:/tmp/fuse.db?mode=rwc",
            "not a url at all",
            "",
            "http://host/path?password=",
        ] {
            assert!(matches!(url(given), Cow::Borrowed(_)), "{given}");
        }
    }

    #[test]
    fn urls_in_messages_are_redacted() {
        assert_eq!(
            text("invalid URL \"postgres://a:hunter2@db/x?password=hunter2\": bad port"),
            "invalid URL \"postgres://db/x?password=***\": bad port"
        );
        assert_eq!(
            text("Redis URL did not parse- redis+unix:///s?pass=hunter2"),
            "Redis URL did not parse- redis+unix:///s?pass=***"
        );
        let plain = "store redis://127.0.0.1:6379 unreachable: timed out";
        assert!(matches!(text(plain), Cow::Borrowed(_)));
    }
}
