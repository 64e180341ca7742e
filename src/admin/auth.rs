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
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn a_token_no_bearer_header_can_carry_is_refused_by_place_and_kind() {
        for good in ["s3cret", "a-b.c_d~e+f/g", "YWJj==", "x=", "0"] {
            assert_eq!(token68(good), Ok(()), "{good}");
        }
        for (bad, at, what) in [
            ("s3cret\n", 7, "a line break"),
            (" s3cret", 1, "a space"),
            ("s3cret ", 7, "a space"),
            ("s\u{e9}cret", 2, "a non-ASCII character"),
            ("s3\tcret", 3, "a tab"),
            ("s3\u{7f}", 3, "a control character"),
            ("ab=cd", 3, "an = before the end"),
            ("==", 1, "an = with nothing before it"),
            ("s3@cret", 3, "a punctuation mark other than -._~+/"),
        ] {
            assert_eq!(token68(bad), Err(BuildError::Token { at, what }), "{bad:?}");
            let said = token68(bad).unwrap_err().to_string();
            assert!(!said.contains("cret"), "{said}");
        }
        assert!(Access::new(Some("s3cret\r\n"), false).is_err());
        assert!(Access::new(Some(""), false).is_ok());
    }

    fn access(token: Option<&str>, private_reads: bool) -> Access {
        Access::new(token, private_reads).unwrap()
    }

    #[test]
    fn the_rules() {
        let open = access(None, false);
        assert!(open.check(&HeaderMap::new(), Need::Read).is_ok());
        assert_eq!(
            open.check(&with("Bearer x"), Need::Write)
                .unwrap_err()
                .code(),
            "read_only"
        );
        let guarded = access(Some("s3cret"), false);
        assert!(guarded.check(&HeaderMap::new(), Need::Read).is_ok());
        assert!(guarded.check(&with("Bearer s3cret"), Need::Write).is_ok());
        assert!(guarded.check(&with("bearer s3cret"), Need::Write).is_ok());
        for wrong in [
            "Bearer s3cre",
            "Bearer s3crets",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            let err = guarded.check(&with(wrong), Need::Write).unwrap_err();
            assert_eq!(err.status(), 401, "{wrong}");
        }
        assert_eq!(
            guarded
                .check(&HeaderMap::new(), Need::Write)
                .unwrap_err()
                .status(),
            401
        );
        let private = access(Some("s3cret"), true);
        assert_eq!(
            private
                .check(&HeaderMap::new(), Need::Read)
                .unwrap_err()
                .status(),
            401
        );
        assert!(private.check(&with("Bearer s3cret"), Need::Read).is_ok());
        assert!(guarded.authorised(&with("Bearer s3cret")));
        for other in ["Bearer s3cre", "s3cret", "Bearer "] {
            assert!(!guarded.authorised(&with(other)), "{other}");
        }
        assert!(!guarded.authorised(&HeaderMap::new()));
        assert!(!open.authorised(&with("Bearer ")));
        let empty = access(Some(""), false);
        assert!(!empty.writable());
        assert_eq!(
            empty
                .check(&with("Bearer "), Need::Write)
                .unwrap_err()
                .code(),
            "read_only"
        );
        let nobody = access(None, true);
        assert_eq!(
            nobody
                .check(&with("Bearer x"), Need::Read)
                .unwrap_err()
                .status(),
            401
        );
    }
}
