//! The errors of shared circuits: a store that did not answer or holds
//! something unreadable, a refused admission, a protected call's error.

use std::fmt;
use std::sync::Arc;

use crate::error::OpenError;
use crate::store::model::payload::PayloadError;

/// A store that could not be used: unreachable, holding a payload that is
/// not a circuit under the key, a key that other writers kept changing
/// under every compare-and-set of a step, a URL that is not the store's
/// kind, or a key the store cannot hold. Only [`is_unreachable`] is an
/// outage (the fallback decides while it lasts); the others are answers.
///
/// [`is_unreachable`]: Self::is_unreachable
///
/// ```
/// use fuse_breaker::store::StoreError;
/// let err = StoreError::unreachable("redis://127.0.0.1:6379", "connection refused");
/// assert!(err.is_unreachable());
/// assert_eq!(err.to_string(), "store redis://127.0.0.1:6379 unreachable: connection refused");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    store: Arc<str>,
    kind: Kind,
}

/// What went wrong: the end of a [`StoreError`]'s text, after the store's
/// name, and the [`StoreError`]'s source.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum Kind {
    #[error(" unreachable: {0}")]
    Unreachable(String),
    #[error(": {0}")]
    Payload(#[source] PayloadError),
    #[error(": {key} changed under {tries} compare-and-sets in a row")]
    Contended { key: String, tries: u32 },
    /// The URL a store was opened with is not one of its kind (or of
    /// any store's), and why.
    #[error(" is {0}")]
    Url(String),
    /// The store cannot keep a circuit under this key.
    #[cfg_attr(not(feature = "sql"), allow(dead_code))]
    #[error(" cannot keep a circuit under {key}: {reason}")]
    Key { key: String, reason: String },
    /// The store does not do what was asked of it.
    #[error(" cannot {0}")]
    Unsupported(&'static str),
}

impl StoreError {
    /// The store `store` did not answer (or answered with an error of its
    /// own): what a [`Store`](crate::store::Store) implementation returns for a
    /// failed round trip. The fallback decides while it lasts. A URL in
    /// `store` or `reason` is printed without its secrets
    /// ([`redact`](crate::redact)).
    ///
    /// ```
    /// let err = fuse_breaker::store::StoreError::unreachable("memory", "stopped");
    /// assert_eq!(err.store(), "memory");
    /// ```
    pub fn unreachable(store: &str, reason: impl fmt::Display) -> Self {
        StoreError {
            store: crate::redact::url(store).into(),
            kind: Kind::Unreachable(crate::redact::text(&reason.to_string()).into_owned()),
        }
    }

    pub(crate) fn payload(store: &str, err: PayloadError) -> Self {
        StoreError {
            store: store.into(),
            kind: Kind::Payload(err),
        }
    }

    pub(crate) fn contended(store: &str, key: &str, tries: u32) -> Self {
        StoreError {
            store: store.into(),
            kind: Kind::Contended {
                key: key.to_owned(),
                tries,
            },
        }
    }

    /// The URL `store` was opened with is not one of the store's kind
    /// (`kind`: "Redis", "database"), and why.
    #[cfg(any(feature = "redis", feature = "sql"))]
    pub(crate) fn invalid_url(store: &str, kind: &str, reason: impl fmt::Display) -> Self {
        Self::url(store, format_args!("not a {kind} URL: {reason}"))
    }

    /// The URL `store` was opened with cannot open it: `reason`, which
    /// says what it is or is not (see [`open`](crate::store::backend::open)); a URL it
    /// quotes is shown redacted.
    pub(crate) fn url(store: &str, reason: impl fmt::Display) -> Self {
        StoreError {
            store: store.into(),
            kind: Kind::Url(crate::redact::text(&reason.to_string()).into_owned()),
        }
    }

    /// The store cannot keep a circuit under `key` (too long for its
    /// column, or refused by the database as data), and why.
    #[cfg(feature = "sql")]
    pub(crate) fn invalid_key(store: &str, key: &str, reason: impl fmt::Display) -> Self {
        StoreError {
            store: store.into(),
            kind: Kind::Key {
                key: key.to_owned(),
                reason: reason.to_string(),
            },
        }
    }

    /// The store's name.
    ///
    /// ```
    /// let err = fuse_breaker::store::StoreError::unreachable("redis://cache:6379", "timeout");
    /// assert_eq!(err.store(), "redis://cache:6379");
    /// ```
    pub fn store(&self) -> &str {
        &self.store
    }

    /// Whether the store did not answer (rather than holding an unreadable
    /// payload).
    ///
    /// ```
    /// assert!(fuse_breaker::store::StoreError::unreachable("memory", "down").is_unreachable());
    /// ```
    pub fn is_unreachable(&self) -> bool {
        matches!(self.kind, Kind::Unreachable(_))
    }

    /// Whether the URL the store was opened with is not one of its kind
    /// (no round trip was tried: this is no outage).
    ///
    /// ```
    /// # #[cfg(feature = "redis")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let err = fuse_breaker::store::RedisStore::open("http://cache:6379").unwrap_err();
    /// assert!(err.is_invalid_url() && !err.is_unreachable());
    /// assert!(err.to_string().starts_with("store http://cache:6379 is not a Redis URL"));
    /// # }
    /// # #[cfg(not(feature = "redis"))]
    /// # fn main() {}
    /// ```
    pub fn is_invalid_url(&self) -> bool {
        matches!(self.kind, Kind::Url(_))
    }

    /// Whether the store cannot keep a circuit under the key: longer than
    /// the SQL table's `varchar(191)` and not held by the table (no
    /// circuit is created under it; a row the table already holds, which
    /// SQLite or a wider column let another program write, is read,
    /// changed and deleted like any other), or refused by the database as
    /// data rather than for want of a connection. The key is named; this
    /// is no outage, so the fallback does not decide: every call on the
    /// key is refused with this error.
    ///
    /// ```
    /// # #[cfg(feature = "sql")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{Refusal, SharedFuse, SqlStore};
    /// let store = SqlStore::open("sqlite::memory:")?;
    /// store.ensure_schema().await?;
    /// let fuse = fuse_breaker::Fuse::builder("x".repeat(200)).store(Arc::new(store)).build();
    /// let Err(Refusal::Store(err)) = fuse.try_acquire().await else { panic!() };
    /// assert!(err.is_invalid_key() && !err.is_unreachable());
    /// assert!(err.to_string().contains(fuse.key()));
    /// # Ok(()) }
    /// # #[cfg(not(feature = "sql"))]
    /// # fn main() {}
    /// ```
    pub fn is_invalid_key(&self) -> bool {
        matches!(self.kind, Kind::Key { .. })
    }

    /// The store `store` cannot do `what` (listing its keys, for a
    /// [`Store`](crate::store::Store) with no [`keys`](crate::store::Store::keys)): no
    /// outage, the store was not asked.
    ///
    /// ```
    /// let err = fuse_breaker::store::StoreError::unsupported("vault", "list its keys");
    /// assert!(err.is_unsupported() && !err.is_unreachable());
    /// assert_eq!(err.to_string(), "store vault cannot list its keys");
    /// ```
    pub fn unsupported(store: &str, what: &'static str) -> Self {
        StoreError {
            store: crate::redact::url(store).into(),
            kind: Kind::Unsupported(what),
        }
    }

    /// Whether the store cannot do what was asked (see
    /// [`unsupported`](Self::unsupported)).
    ///
    /// ```
    /// assert!(!fuse_breaker::store::StoreError::unreachable("memory", "down").is_unsupported());
    /// ```
    pub fn is_unsupported(&self) -> bool {
        matches!(self.kind, Kind::Unsupported(_))
    }

    /// The unreadable payload, if that is what this is.
    ///
    /// ```
    /// assert!(fuse_breaker::store::StoreError::unreachable("memory", "down").payload_error().is_none());
    /// ```
    pub fn payload_error(&self) -> Option<&PayloadError> {
        match &self.kind {
            Kind::Payload(err) => Some(err),
            _ => None,
        }
    }
}

// By hand: the store's name starts every text, and the source is the
// kind's own (a payload's error), not the kind.
impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "store {}{}", self.store, self.kind)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

/// Why a shared circuit refused a call: it is open, or its store could not
/// decide (unreachable with the `reject` fallback, or an unreadable
/// payload).
///
/// ```
/// use fuse_breaker::store::{Refusal, StoreError};
/// let refusal = Refusal::Store(StoreError::unreachable("memory", "down"));
/// assert!(refusal.open_error().is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The circuit is open (or its probes are all taken).
    #[error("{0}")]
    Open(#[source] OpenError),
    /// The store could not decide.
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl Refusal {
    /// The [`OpenError`], when the circuit was open.
    ///
    /// ```
    /// let refusal = fuse_breaker::store::Refusal::Store(
    ///     fuse_breaker::store::StoreError::unreachable("memory", "down"));
    /// assert!(refusal.open_error().is_none());
    /// ```
    pub fn open_error(&self) -> Option<&OpenError> {
        match self {
            Refusal::Open(err) => Some(err),
            Refusal::Store(_) => None,
        }
    }
}

/// The error of a call protected by a shared circuit: refused, or the call
/// itself failed.
///
/// ```
/// use fuse_breaker::store::{Error, MemoryStore, SharedFuse};
/// # futures::executor::block_on(async {
/// let fuse = fuse_breaker::Fuse::builder("billing").store(std::sync::Arc::new(MemoryStore::new())).build();
/// let out: Result<(), Error<std::io::Error>> =
///     fuse.run_async(async { Err(std::io::Error::other("declined")) }).await;
/// assert!(matches!(out, Err(Error::Inner(_))));
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error<E> {
    /// The circuit refused the call; it did not run.
    #[error("{0}")]
    Refused(#[source] Refusal),
    /// The call ran and returned this error.
    #[error("{0}")]
    Inner(#[source] E),
}

/// `url` as errors and events name a store: without its secrets.
pub(crate) fn public_name(url: &str) -> String {
    crate::redact::url(url).into_owned()
}

#[cfg(all(test, any(feature = "redis", feature = "sql")))]
mod tests;
