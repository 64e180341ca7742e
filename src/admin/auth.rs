//! Who may do what: the admin token (writes always need it, reads when
//! they are private) checked against `Authorization: Bearer <token>` in
//! constant time.

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq as _;

use super::ApiError;

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
    /// bare `Bearer`.
    pub(super) fn new(token: Option<&str>, private_reads: bool) -> Self {
        Access {
            token: token
                .filter(|token| !token.is_empty())
                .map(|token| token.as_bytes().into()),
            private_reads,
        }
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
    fn the_rules() {
        let open = Access::new(None, false);
        assert!(open.check(&HeaderMap::new(), Need::Read).is_ok());
        assert_eq!(
            open.check(&with("Bearer x"), Need::Write)
                .unwrap_err()
                .code(),
            "read_only"
        );
        let guarded = Access::new(Some("s3cret"), false);
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
        let private = Access::new(Some("s3cret"), true);
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
        let empty = Access::new(Some(""), false);
        assert!(!empty.writable());
        assert_eq!(
            empty
                .check(&with("Bearer "), Need::Write)
                .unwrap_err()
                .code(),
            "read_only"
        );
        let nobody = Access::new(None, true);
        assert_eq!(
            nobody
                .check(&with("Bearer x"), Need::Read)
                .unwrap_err()
                .status(),
            401
        );
    }
}
