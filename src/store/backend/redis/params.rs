//! A Redis URL's parameters of the store's own (`payload`,
//! `payload_read`, `laravel_redis_prefix`, `laravel_cache_prefix`; see
//! [`StoreOptions`]), taken out of the URL before the rest of it is read:
//! `redis://127.0.0.1:6379/1?payload=laravel&laravel_cache_prefix=shop_cache_`.
//!
//! Values are percent-decoded (`%2F`); an `@` in one must be (`%40`): a
//! URL's user and password run to its last `@`. A URL with a `?` before
//! that `@` is ambiguous (a password holding a `?`, or a value an `@`):
//! its refusals then name no parameter it holds, since what reads as one
//! may be part of a password. On one server the `redis`
//! crate's own parameters are left in the URL for it (`protocol`; and
//! `db`, `user`, `pass` for a Unix socket); any other parameter is an
//! error naming it (a cluster's or Sentinel's URL takes the store's alone).

use super::url::decode;
use crate::store::StoreOptions;
use crate::{config::PayloadKind, config::PayloadRead};

/// The store's own parameters.
const OURS: [&str; 4] = [
    "payload",
    "payload_read",
    "laravel_redis_prefix",
    "laravel_cache_prefix",
];

/// The `redis` crate's parameters of a server at a host (`redis://`).
const CRATE_TCP: [&str; 1] = ["protocol"];
/// The `redis` crate's parameters of a server on a Unix socket.
const CRATE_UNIX: [&str; 4] = ["protocol", "db", "user", "pass"];

/// `url` without the store's own parameters, and what they say; or why
/// they say nothing (a reason that quotes no value but the store's own
/// parameters').
pub(super) fn split(url: &str) -> Result<(String, StoreOptions), String> {
    let mut options = StoreOptions::default();
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    // The user and password run to the last `@`; the query starts at the
    // first `?` after them.
    let after = url
        .rfind('@')
        .map_or_else(|| url.find("://").map_or(0, |at| at + 3), |at| at + 1);
    // A parameter of ours before that `@` has an `@` in its value: the
    // URL would be misread (its host taken for a password).
    let held = &url[..after];
    let start = url.find("://").map_or(0, |at| at + 3);
    let ambiguous = after > start && held[start..].contains('?');
    // Nor does a parameter of ours start (`&name=`) between that `@` and
    // the query read after it: its `?` came before the `@`.
    let between = &url[after..];
    let between = &between[..between.find(['?', '#']).unwrap_or(between.len())];
    if let Some(name) = OURS.iter().find(|name| {
        held.contains(&format!("?{name}="))
            || held.contains(&format!("&{name}="))
            || (ambiguous && between.contains(&format!("&{name}=")))
    }) {
        return Err(format!(
            "its parameter {name} is on the wrong side of an `@`: write a value's `@` %40 \
             (a URL's user and password run to its last `@`)"
        ));
    }
    let Some(query) = url[after..].find('?').map(|at| after + at) else {
        return Ok((url.to_owned(), options));
    };
    let end = url[query..].find('#').map_or(url.len(), |at| query + at);
    let known: &[&str] = match scheme {
        "redis+cluster" | "rediss+cluster" | "redis+sentinel" | "rediss+sentinel" => &[],
        "redis+unix" | "unix" | "valkey+unix" => &CRATE_UNIX,
        _ => &CRATE_TCP,
    };
    let mut kept = Vec::new();
    for piece in url[query + 1..end].split('&').filter(|p| !p.is_empty()) {
        let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
        let name = decode(name);
        if !OURS.contains(&name.as_str()) {
            if known.contains(&name.as_str()) {
                kept.push(piece);
                continue;
            }
            return Err(unknown((!ambiguous).then_some(name.as_str()), known));
        }
        let value = decode(value);
        // What an ambiguous URL reads as a value may be a password's.
        let shown = if ambiguous { "…" } else { value.as_str() };
        let twice = || format!("its parameter {name} is given twice");
        match name.as_str() {
            "payload" => {
                let payload = PayloadKind::parse(&value).ok_or_else(|| {
                    format!(
                        "its parameter payload={shown:?} is none of the payloads ({})",
                        <PayloadKind as crate::choice::Choice>::choices()
                    )
                })?;
                if options.payload.replace(payload).is_some() {
                    return Err(twice());
                }
            }
            "payload_read" => {
                let read = PayloadRead::parse(&value).ok_or_else(|| {
                    format!(
                        "its parameter payload_read={shown:?} is none of {}",
                        <PayloadRead as crate::choice::Choice>::choices()
                    )
                })?;
                if options.payload_read.replace(read).is_some() {
                    return Err(twice());
                }
            }
            "laravel_redis_prefix" => {
                if options.laravel_redis_prefix.replace(value).is_some() {
                    return Err(twice());
                }
            }
            _ => {
                if options.laravel_cache_prefix.replace(value).is_some() {
                    return Err(twice());
                }
            }
        }
    }
    let mut rest = url[..query].to_owned();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    rest.push_str(&url[end..]);
    Ok((rest, options))
}

/// The error of a parameter that is neither the store's nor the `redis`
/// crate's (`known`): its name if it may be shown (never its value, which
/// may be a secret; nor the name of an ambiguous URL, which may be one).
fn unknown(name: Option<&str>, known: &[&str]) -> String {
    let mut reason = match name {
        Some(name) => {
            let shown: String = name.chars().take(64).collect();
            format!("its parameter {shown:?}")
        }
        None => String::from(
            "a parameter after its last `@` (not shown: with a `?` before that `@`, \
             it may be part of a password; write a password's `?` %3F, a value's `@` %40)",
        ),
    };
    reason = format!("{reason} is not one of the store's ({})", OURS.join(", "));
    if !known.is_empty() {
        reason = format!("{reason} nor the redis crate's ({})", known.join(", "));
    }
    reason
}

#[cfg(test)]
mod tests;
