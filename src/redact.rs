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
//! `redis+cluster`, `rediss+cluster`, `redis+sentinel`, `sqlite`, `http`,
//! `https`), and for strings that are not valid URLs at all, which are the
//! ones that end up in error messages. Where a password holds what ends a
//! part of a URL (`@`, `/`, `?`, `#`, `:` unescaped), everything it could
//! be is hidden: the user and password run to the URL's last `@`.
//! [`text_about`] also hides, in what a library said about a URL, any
//! piece of its secrets the library quoted (having misread the URL).
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

/// What no URL holds unescaped (RFC 3986): where a secret query value
/// quoted in a message ends, if not at a `&`, `;` or `#` before.
const NOT_IN_URLS: &str = "\"<>\\^`{|}";

/// A part of a text to leave out of what is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hidden {
    /// Its byte range.
    start: usize,
    end: usize,
    /// Whether `***` stands in its place (a query value), or nothing (a
    /// user and password).
    marked: bool,
}

/// `url` without its user, password and secret query values (see the
/// [module docs](self)); borrowed when there is nothing to hide.
///
/// The user and password are whatever lies between `://` (or the
/// scheme's `:`, but for `sqlite:`) and the last `@` of the URL: a
/// password is hidden whatever it holds unescaped (`@`, `/`, `?`, `#`,
/// `:`...), at the cost of the host when the path or the query has an
/// `@`. A secret query value runs to the next `&`, `;` or `#`.
///
/// ```
/// use fuse_breaker::redact;
/// assert_eq!(redact::url("http://admin:hunter2@host:8080/fuse"), "http://host:8080/fuse");
/// assert_eq!(redact::url("redis+cluster://app:hun/ter@2@10.0.0.1:7000"),
///            "redis+cluster://10.0.0.1:7000");
/// assert_eq!(redact::url("redis+unix:///run/redis.sock?db=2&pass=hunter2"),
///            "redis+unix:///run/redis.sock?db=2&pass=***");
/// assert_eq!(redact::url("sqlite:/var/lib/fuse.db"), "sqlite:/var/lib/fuse.db");
/// ```
pub fn url(url: &str) -> Cow<'_, str> {
    let mut hidden = Vec::new();
    if let Some(userinfo) = userinfo(url) {
        hidden.push(userinfo);
    }
    if let Some(query) = url.find('?') {
        secret_values(url, query, url.len(), &mut hidden);
    }
    apply(url, hidden)
}

/// Where the user and password of `url` lie, if it has any: from after
/// `://` (or the scheme's `:`; but `sqlite:` paths, which have none, may
/// hold an `@`) through the last `@`. Without `://`, only a `:` before
/// the `@` says there is a password (a store's name `cache@eu` is kept).
fn userinfo(url: &str) -> Option<Hidden> {
    let at = url.rfind('@')?;
    let start = match url.find("://") {
        Some(slashes) => slashes + 3,
        None if !url[..at].contains(':') => return None,
        None => match scheme(url) {
            Some("sqlite") => return None,
            Some(scheme) => scheme.len() + 1,
            None => 0,
        },
    };
    (at >= start).then_some(Hidden {
        start,
        end: at + 1,
        marked: false,
    })
}

/// The scheme of `url` (a letter, then letters, digits, `+`, `-` and
/// `.`, up to the first `:`), if it has one.
fn scheme(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// The values of secret-looking query parameters in `text[query..end]`
/// (`query`: the first `?`), each up to the next `&`, `;` or `#` (or a
/// character no URL holds), pushed on `hidden`. A parameter starts after
/// any `?`, `&` or `;` from the first `?` on: a `?` in a password does
/// not hide what follows it.
fn secret_values(text: &str, query: usize, end: usize, hidden: &mut Vec<Hidden>) {
    let bytes = text.as_bytes();
    let mut at = query;
    while at < end {
        if !matches!(bytes[at], b'?' | b'&' | b';') {
            at += 1;
            continue;
        }
        let name_start = at + 1;
        let name_end = text[name_start..end]
            .find(['=', '?', '&', ';', '#'])
            .map_or(end, |i| name_start + i);
        at = name_end;
        if bytes.get(name_end) != Some(&b'=') || !secret_name(&text[name_start..name_end]) {
            continue;
        }
        let value_start = name_end + 1;
        let value_end = text[value_start..end]
            .find(|c: char| "&;#".contains(c) || NOT_IN_URLS.contains(c))
            .map_or(end, |i| value_start + i);
        if value_end > value_start {
            hidden.push(Hidden {
                start: value_start,
                end: value_end,
                marked: true,
            });
        }
        at = value_end;
    }
}

/// Whether a query parameter named `name` holds a secret.
fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|secret| name.contains(secret))
}

/// `text` without the parts `hidden` names (overlapping parts hidden as
/// one, `***` standing in for it if any of them is marked); borrowed when
/// there are none.
fn apply(text: &str, mut hidden: Vec<Hidden>) -> Cow<'_, str> {
    if hidden.is_empty() {
        return Cow::Borrowed(text);
    }
    hidden.sort_unstable_by_key(|part| part.start);
    let mut out = String::with_capacity(text.len());
    let mut shown = 0;
    let mut parts = hidden.into_iter().peekable();
    while let Some(mut part) = parts.next() {
        while let Some(next) = parts.next_if(|next| next.start <= part.end) {
            part.end = part.end.max(next.end);
            part.marked |= next.marked;
        }
        out.push_str(&text[shown..part.start]);
        if part.marked {
            out.push_str(HIDDEN);
        }
        shown = part.end;
    }
    out.push_str(&text[shown..]);
    Cow::Owned(out)
}

/// `message` with every URL in it redacted (see [`url`]): for the text of
/// an error from a client library, which may quote the URL it was given.
/// A URL's user and password run from its `://` to the last `@` before
/// the next whitespace (a password may hold quotes, brackets and
/// parentheses); its secret query values, in a word that holds a `?`,
/// to the next `&`, `;` or `#`, or a character no URL holds (a quote,
/// an angle bracket, whitespace).
///
/// ```
/// use fuse_breaker::redact;
/// assert_eq!(
///     redact::text("error sending request for url (http://admin:hun(ter)2@host/fuse/circuits)"),
///     "error sending request for url (http://host/fuse/circuits)"
/// );
/// assert_eq!(redact::text("connection refused"), "connection refused");
/// ```
pub fn text(message: &str) -> Cow<'_, str> {
    if !message.contains("://") && !message.contains('?') {
        return Cow::Borrowed(message);
    }
    let mut hidden = Vec::new();
    let mut from = 0;
    while let Some(slashes) = message[from..].find("://").map(|i| from + i) {
        let start = slashes + 3;
        let word_end = message[start..]
            .find(char::is_whitespace)
            .map_or(message.len(), |i| start + i);
        if let Some(at) = message[start..word_end].rfind('@') {
            hidden.push(Hidden {
                start,
                end: start + at + 1,
                marked: false,
            });
        }
        from = start;
    }
    let mut word_start = 0;
    for word in message.split(char::is_whitespace) {
        let word_end = word_start + word.len();
        let looks_like_url = word.contains(":/") || word.contains('?');
        if let (true, Some(query)) = (looks_like_url, word.find('?')) {
            secret_values(message, word_start + query, word_end, &mut hidden);
        }
        // Each whitespace character's own length: the next word starts
        // after it.
        word_start = word_end + message[word_end..].chars().next().map_or(0, char::len_utf8);
    }
    apply(message, hidden)
}

/// How many characters in a row of a secret [`text_about`] lets no
/// message show.
const RUN: usize = 6;

/// `message`, which a library said about `url` (an error of the `redis`,
/// `sqlx` or `reqwest` crate), redacted as [`text`] does, and then
/// without any run of 6 or more characters of `url`'s password or secret
/// query values (as `url` writes them and percent-decoded), however the
/// library quoted them: a library that misread a URL (a password with an
/// unescaped `/` read as a path, a `?` as a query) quotes pieces of a
/// password as something else, a file name or a parameter.
///
/// ```
/// use fuse_breaker::redact;
/// let url = "sqlite://app:hunter2?secret@/var/lib/fuse.db";
/// let said = "unknown query parameter `secret@/var/lib/fuse.db`";
/// assert_eq!(redact::text_about(url, said), "unknown query parameter `***@/var/lib/fuse.db`");
/// let url = "redis://:hunter2@cache:6379";
/// let said = "cannot reach redis://:hunter2@cache:6379 (AUTH hunter2): refused";
/// assert_eq!(redact::text_about(url, said), "cannot reach redis://cache:6379 (AUTH ***): refused");
/// ```
pub fn text_about<'a>(url: &str, message: &'a str) -> Cow<'a, str> {
    let secrets = secrets(url);
    let redacted = text(message);
    let mut hidden = Vec::new();
    for secret in &secrets {
        runs_of(secret.as_bytes(), &redacted, &mut hidden);
    }
    if hidden.is_empty() {
        return redacted;
    }
    Cow::Owned(apply(&redacted, hidden).into_owned())
}

/// What `url` holds that no message may show: its password (what follows
/// the user's `:` before the last `@`) and its secret query values, as
/// written and percent-decoded, those of at least [`RUN`] bytes.
fn secrets(url: &str) -> Vec<String> {
    let mut hidden = Vec::new();
    if let Some(userinfo) = userinfo(url) {
        // The last `@`, which ends the user and password.
        let at = userinfo.end - 1;
        if let Some(colon) = url[userinfo.start..at].find(':') {
            hidden.push(Hidden {
                start: userinfo.start + colon + 1,
                end: at,
                marked: true,
            });
        }
    }
    if let Some(query) = url.find('?') {
        secret_values(url, query, url.len(), &mut hidden);
    }
    let mut secrets = Vec::new();
    for part in hidden {
        let written = &url[part.start..part.end];
        let decoded = decoded(written);
        secrets.extend([written.to_owned(), decoded]);
    }
    secrets.retain(|secret| secret.len() >= RUN);
    secrets
}

/// `text` with its `%XX` escapes decoded (bytes that are not UTF-8 are
/// replaced).
fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escape = bytes
            .get(at + 1..at + 3)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[at], escape) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every run of [`RUN`] bytes of `message` that `secret` holds too,
/// widened to whole characters, pushed on `hidden` (marked: `***` stands
/// in for it).
fn runs_of(secret: &[u8], message: &str, hidden: &mut Vec<Hidden>) {
    let bytes = message.as_bytes();
    if bytes.len() < RUN {
        return;
    }
    for start in 0..=bytes.len() - RUN {
        let run = &bytes[start..start + RUN];
        if !secret.windows(RUN).any(|window| window == run) {
            continue;
        }
        let mut start = start;
        let mut end = start + RUN;
        while !message.is_char_boundary(start) {
            start -= 1;
        }
        while !message.is_char_boundary(end) {
            end += 1;
        }
        hidden.push(Hidden {
            start,
            end,
            marked: true,
        });
    }
}

#[cfg(test)]
mod tests;
