//! [`BuildError`]: why an admin API's router was not built.

/// A setting of [`Admin`](super::Admin) that no request could satisfy,
/// found when [`Admin::router`](super::Admin::router) builds the router:
/// it names what is wrong, and never prints the token.
///
/// ```
/// use fuse_breaker::admin::{Admin, BuildError};
///
/// let err = Admin::new().token("s3cret\n").router().unwrap_err();
/// assert!(matches!(err, BuildError::Token { at: 7, what: "a line break", .. }));
/// assert!(!err.to_string().contains("s3cret"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The admin token cannot be sent as a bearer token (RFC 6750's
    /// token68: ASCII letters, digits and `-._~+/`, then `=` at the end
    /// only), so no request could ever bring it: `at` is the place of the
    /// first character that cannot be (from 1, in characters), `what`
    /// says what it is (`a space`, `a line break`, `a non-ASCII
    /// character`...).
    #[non_exhaustive]
    #[error(
        "the admin token cannot be sent as a bearer token: its character {at} is {what} (a \
         bearer token is ASCII letters, digits and -._~+/, then = at the end only)"
    )]
    Token {
        /// The character's place in the token, from 1.
        at: usize,
        /// What the character is.
        what: &'static str,
    },
    /// An allowed host is not a host name or an IP address with an
    /// optional port.
    #[non_exhaustive]
    #[error(
        "the allowed host {host:?} {why}: give a name or an IP address, with or without a \
         port (fuse.example.com, 10.0.0.5:8080, [::1])"
    )]
    Host {
        /// The host as given.
        host: String,
        /// What is wrong with it.
        why: &'static str,
    },
}
