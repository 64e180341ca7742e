//! Who may do what: the admin token (writes always need it, reads when
//! they are private), one a bearer header can carry, checked against
//! `Authorization: Bearer <token>` in constant time.

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq as _;

use super::{ApiError, BuildError};

/// What a request asks to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Need {
    /// A read: the list, one circuit, the events.
    Read,
    /// Open, close or reset.
    Write,
}

/// The token rules of one admin API.
#[derive(Clone, Debug, Default)]
pub(super) struct Access {
    /// The admin token; `None`: writes are off.
    token: Option<Box<[u8]>>,
    /// Whether reads need the token too.
    private_reads: bool,
}

impl Access {
    /// An empty token is no token: writes stay off rather than open to a
    /// bare `Bearer`. A token no bearer header can carry is refused.
    pub(super) fn new(token: Option<&str>, private_reads: bool) -> Result<Self, BuildError> {
        let token = token.filter(|token| !token.is_empty());
        if let Some(token) = token {
            token68(token)?;
        }
        Ok(Access {
            token: token.map(|token| token.as_bytes().into()),
            private_reads,
        })
    }

    /// Whether writes are on.
    pub(super) fn writable(&self) -> bool {
        self.token.is_some()
    }

    /// Whether `headers` bring the admin token (never, with none set).
    pub(super) fn authorised(&self, headers: &HeaderMap) -> bool {
        bearer(headers).is_ok_and(|given| self.is_token(given))
    }

    /// Whether `given` is the admin token (compared in constant time).
    fn is_token(&self, given: &str) -> bool {
        self.token
            .as_ref()
            .is_some_and(|token| bool::from(given.as_bytes().ct_eq(token)))
    }

    /// Whether `headers` allow `need`.
    pub(super) fn check(&self, headers: &HeaderMap, need: Need) -> Result<(), ApiError> {
        if self.token.is_none() {
            return match need {
                Need::Write => Err(ApiError::read_only()),
                // Private reads with no token: nobody may read.
                Need::Read if self.private_reads => Err(ApiError::unauthorized(
                    "reads are private and the application set no admin token",
                )),
                Need::Read => Ok(()),
            };
        }
        if need == Need::Read && !self.private_reads {
            return Ok(());
        }
        let given = bearer(headers)?;
        if self.is_token(given) {
            Ok(())
        } else {
            Err(ApiError::unauthorized(
                "the bearer token is not the admin token",
            ))
        }
    }
}

/// Whether `token` is RFC 6750's token68: ASCII letters, digits and
/// `-._~+/`, then `=` at the end only. The error says where and what the
/// first character that is not is, never the token.
fn token68(token: &str) -> Result<(), BuildError> {
    let padding = token.len() - token.trim_end_matches('=').len();
    let body = token.chars().count() - padding;
    let wrong = token.chars().enumerate().find_map(|(i, c)| {
        let what = match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '.' | '_' | '~' | '+' | '/' => return None,
            '=' if i >= body && body > 0 => return None,
            '=' if body == 0 => "an = with nothing before it",
            '=' => "an = before the end",
            ' ' => "a space",
            '\n' | '\r' => "a line break",
            '\t' => "a tab",
            c if c.is_ascii_control() => "a control character",
            c if !c.is_ascii() => "a non-ASCII character",
            _ => "a punctuation mark other than -._~+/",
        };
        Some(BuildError::Token { at: i + 1, what })
    });
    wrong.map_or(Ok(()), Err)
}

/// The token of `Authorization: Bearer <token>` (the scheme in any case).
fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized("this needs the admin token: Authorization: Bearer <token>")
    })?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not text"))?;
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => Ok(token.trim()),
        _ => Err(ApiError::unauthorized(
            "the Authorization header is not `Bearer <token>`",
        )),
    }
}

#[cfg(test)]
mod tests;
