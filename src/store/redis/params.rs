//! A Redis URL's parameters of the store's own (`payload`,
//! `payload_read`, `laravel_redis_prefix`, `laravel_cache_prefix`; see
//! [`StoreOptions`]), taken out of the URL before the rest of it is read:
//! `redis://127.0.0.1:6379/1?payload=laravel&laravel_cache_prefix=shop_cache_`.
//!
//! Values are percent-decoded (`%2F`); an `@` in one must be (`%40`): a
//! URL's user and password run to its last `@`. On one server the `redis`
//! crate's own parameters are left in the URL for it (`protocol`; and
//! `db`, `user`, `pass` for a Unix socket); any other parameter is an
//! error naming it (a cluster's or Sentinel's URL takes the store's alone).

use super::url::decode;
use crate::store::StoreOptions;
use crate::{PayloadKind, PayloadRead};

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
    if let Some(name) = OURS
        .iter()
        .find(|name| held.contains(&format!("?{name}=")) || held.contains(&format!("&{name}=")))
    {
        return Err(format!(
            "its parameter {name} holds an `@`: write it %40 (a URL's user and password \
             run to its last `@`)"
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
            return Err(unknown(&name, known));
        }
        let value = decode(value);
        let twice = || format!("its parameter {name} is given twice");
        match name.as_str() {
            "payload" => {
                let payload = PayloadKind::parse(&value).ok_or_else(|| {
                    format!(
                        "its parameter payload={value:?} is none of the payloads ({})",
                        PayloadKind::CHOICES
                    )
                })?;
                if options.payload.replace(payload).is_some() {
                    return Err(twice());
                }
            }
            "payload_read" => {
                let read = PayloadRead::parse(&value).ok_or_else(|| {
                    format!(
                        "its parameter payload_read={value:?} is none of {}",
                        PayloadRead::CHOICES
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
/// crate's (`known`): its name (never its value, which may be a secret).
fn unknown(name: &str, known: &[&str]) -> String {
    let shown: String = name.chars().take(64).collect();
    let mut reason = format!(
        "its parameter {shown:?} is not one of the store's ({})",
        OURS.join(", ")
    );
    if !known.is_empty() {
        reason = format!("{reason} nor the redis crate's ({})", known.join(", "));
    }
    reason
}

#[cfg(test)]
mod tests;
