//! Which hosts the admin API answers to, and what every answer carries.
//!
//! A page on another site can reach a loopback port through a name of its
//! own that it points at 127.0.0.1 (DNS rebinding); the browser then names
//! that site in `Host`. So the API answers to loopback (`localhost`,
//! `127.0.0.0/8`, `[::1]`, any port) and the hosts the application allows,
//! or to any host when it says so, and refuses the others with an
//! [`ApiError`]. Every answer, refusals included, says
//! `X-Content-Type-Options: nosniff`.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, BuildError};

/// The hosts an admin API answers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Hosts {
    /// Loopback and these.
    Listed(Vec<Host>),
    /// Whatever a request names.
    Any,
}

impl Default for Hosts {
    fn default() -> Self {
        Hosts::Listed(Vec::new())
    }
}

/// A host: a name in lower case without a trailing dot, an IPv4 address,
/// or an IPv6 address in brackets; and its port, if one is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Host {
    name: String,
    port: Option<u16>,
}

impl Host {
    /// `given` as the application allows it (`name`, `name:port`, an IP
    /// address with or without a port).
    pub(super) fn allowed(given: &str) -> Result<Host, BuildError> {
        Host::parse(given).map_err(|why| BuildError::Host {
            host: given.to_owned(),
            why,
        })
    }

    /// `authority` (`name`, `name:port`, `[v6]:port`), or what is wrong
    /// with it.
    fn parse(authority: &str) -> Result<Host, &'static str> {
        if authority.contains('/') {
            return Err("has a / (a URL or a path, not a host)");
        }
        let (name, port) = if let Some(rest) = authority.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or("has no ] after its [")?;
            inside
                .parse::<Ipv6Addr>()
                .map_err(|_| "is not an IPv6 address in brackets")?;
            (&authority[..inside.len() + 2], after)
        } else {
            match authority.rsplit_once(':') {
                Some((name, _)) if name.contains(':') => {
                    return Err("is an IPv6 address without brackets");
                }
                Some((name, _)) => (name, &authority[name.len()..]),
                None => (authority, ""),
            }
        };
        let port = match port {
            "" => None,
            port => Some(
                port.strip_prefix(':')
                    .and_then(|port| port.parse::<u16>().ok())
                    .ok_or("has a port that is not a number from 0 to 65535")?,
            ),
        };
        let name = name.strip_suffix('.').unwrap_or(name);
        if name.is_empty() {
            return Err("has no name");
        }
        let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
        if !name.starts_with('[') && !name.chars().all(fine) {
            return Err("has a character no host name has");
        }
        Ok(Host {
            name: name.to_ascii_lowercase(),
            port,
        })
    }

    fn is_loopback(&self) -> bool {
        self.name == "localhost"
            || self
                .name
                .parse::<Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
            || self
                .name
                .strip_prefix('[')
                .and_then(|name| name.strip_suffix(']'))
                .and_then(|ip| ip.parse::<Ipv6Addr>().ok())
                .is_some_and(|ip| ip.is_loopback())
    }

    /// Whether a request for `self` may be answered as for `allowed`.
    fn is(&self, allowed: &Host) -> bool {
        self.name == allowed.name && allowed.port.is_none_or(|port| self.port == Some(port))
    }
}

impl Hosts {
    /// Whether the API answers to `host`.
    fn admit(&self, host: &Host) -> bool {
        match self {
            Hosts::Any => true,
            Hosts::Listed(allowed) => {
                host.is_loopback() || allowed.iter().any(|allowed| host.is(allowed))
            }
        }
    }
}

/// The host `request` names, as given: its URI's authority (as HTTP/2
/// sends it), else its `Host` header.
fn given(request: &Request) -> Result<&str, ApiError> {
    if let Some(authority) = request.uri().authority() {
        return Ok(authority.as_str());
    }
    request
        .headers()
        .get(header::HOST)
        .ok_or_else(|| ApiError::host_not_allowed("", "the request names no host"))?
        .to_str()
        .map_err(|_| ApiError::host_not_allowed("", "the Host header is not text"))
}

/// Whether `hosts` admit the host `request` names.
fn check(hosts: &Hosts, request: &Request) -> Result<(), ApiError> {
    if *hosts == Hosts::Any {
        return Ok(());
    }
    let given = given(request)?;
    match Host::parse(given) {
        Ok(host) if hosts.admit(&host) => Ok(()),
        Ok(_) => Err(ApiError::host_not_allowed(
            given,
            "is not one this admin API answers to",
        )),
        Err(why) => Err(ApiError::host_not_allowed(given, why)),
    }
}

/// The layer over every route: refuses the hosts not admitted, and marks
/// every answer `nosniff`.
pub(super) async fn guard(
    State(hosts): State<Arc<Hosts>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = match check(&hosts, &request) {
        Ok(()) => next.run(request).await,
        Err(err) => err.into_response(),
    };
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests;
