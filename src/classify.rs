//! Which errors are counted failures (SPEC §4): [`Classify`] and [`FailureKind`].

use std::error::Error as StdError;
use std::io;

/// What kind of failure an error is; the [`Config`](crate::Config) decides
/// which kinds count.
///
/// ```
/// use fuse_breaker::{Config, classify::FailureKind};
/// let config = Config::default();
/// assert!(config.counts(FailureKind::HttpStatus(503)));
/// assert!(!config.counts(FailureKind::HttpStatus(404)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The dependency did not answer in time.
    Timeout,
    /// The dependency could not be reached (refused, DNS, TLS), or broke
    /// the exchange: reset, closed before answering, answered what is not
    /// HTTP.
    Connection,
    /// The dependency answered with this HTTP status.
    HttpStatus(u16),
    /// Anything else: a business error, never counted.
    Other,
}

/// Tells [`Fuse::run`](crate::Fuse::run) what kind of failure an error is.
///
/// Implement it for your own error type, or use
/// [`Fuse::run_with`](crate::Fuse::run_with) to decide per call.
///
/// ```
/// use fuse_breaker::{classify::Classify, classify::FailureKind};
///
/// enum BillingError { Unavailable, CardDeclined }
///
/// impl Classify for BillingError {
///     fn failure_kind(&self) -> FailureKind {
///         match self {
///             BillingError::Unavailable => FailureKind::HttpStatus(503),
///             BillingError::CardDeclined => FailureKind::Other,
///         }
///     }
/// }
/// assert_eq!(BillingError::CardDeclined.failure_kind(), FailureKind::Other);
/// ```
pub trait Classify {
    /// The kind of failure this error is.
    fn failure_kind(&self) -> FailureKind;
}

impl Classify for FailureKind {
    /// A kind classifies as itself.
    ///
    /// ```
    /// use fuse_breaker::{classify::Classify, classify::FailureKind};
    /// assert_eq!(FailureKind::Timeout.failure_kind(), FailureKind::Timeout);
    /// ```
    fn failure_kind(&self) -> FailureKind {
        *self
    }
}

impl Classify for std::convert::Infallible {
    /// Never called: an `Infallible` error cannot exist.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("pure", fuse_breaker::Config::default());
    /// let out = fuse.run(|| Ok::<_, std::convert::Infallible>(1));
    /// assert_eq!(out.ok(), Some(1));
    /// ```
    fn failure_kind(&self) -> FailureKind {
        match *self {}
    }
}

impl Classify for io::Error {
    /// `TimedOut` is a timeout; refused, reset, aborted, not connected,
    /// broken pipe, unreachable host or network and unavailable address are
    /// connection errors; a wrapped error is classified by its own chain;
    /// anything else is `Other`.
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use fuse_breaker::{classify::Classify, classify::FailureKind};
    /// assert_eq!(Error::from(ErrorKind::TimedOut).failure_kind(), FailureKind::Timeout);
    /// assert_eq!(Error::from(ErrorKind::ConnectionRefused).failure_kind(), FailureKind::Connection);
    /// assert_eq!(Error::from(ErrorKind::NotFound).failure_kind(), FailureKind::Other);
    /// ```
    fn failure_kind(&self) -> FailureKind {
        match io_kind(self.kind()) {
            FailureKind::Other => self
                .get_ref()
                .map_or(FailureKind::Other, |inner| classify_chain(inner)),
            kind => kind,
        }
    }
}

macro_rules! classify_boxed {
    ($($ty:ty),*) => {$(
        impl Classify for $ty {
            /// Walks the source chain for an [`io::Error`]; failing that,
            /// reads the messages the way milon/fuse does ("timed out",
            /// "timeout"; "connection refused", "could not resolve host",
            /// "failed to connect", "network is unreachable", "ssl", "tls").
            ///
            /// ```
            /// use fuse_breaker::{classify::Classify, classify::FailureKind};
            /// let err: Box<dyn std::error::Error + Send + Sync> = "upstream timed out".into();
            /// assert_eq!(err.failure_kind(), FailureKind::Timeout);
            /// ```
            fn failure_kind(&self) -> FailureKind {
                classify_chain(&**self)
            }
        }
    )*};
}

classify_boxed!(
    Box<dyn StdError>,
    Box<dyn StdError + Send>,
    Box<dyn StdError + Send + Sync>
);

/// The counted kind of an [`io::ErrorKind`], or `Other`.
fn io_kind(kind: io::ErrorKind) -> FailureKind {
    use io::ErrorKind as K;
    match kind {
        K::TimedOut => FailureKind::Timeout,
        K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::BrokenPipe
        | K::HostUnreachable
        | K::NetworkUnreachable
        | K::AddrNotAvailable => FailureKind::Connection,
        _ => FailureKind::Other,
    }
}

/// Classifies any error: the first `io::Error` of its source chain with a
/// counted kind wins; otherwise (features `tower` and `reqwest`) the first
/// `hyper::Error` of the chain, by its kind (see below); otherwise the
/// first message of the chain that reads like a timeout or a connection
/// failure; otherwise `Other`.
///
/// A `hyper::Error` (what a hyper client, reqwest's included, fails with
/// when the exchange breaks) that `is_timeout()` is a timeout. One that
/// `is_user()` is the caller's own (its request body failed, say) and
/// decides nothing. Any other is the connection's: it closed before the
/// answer was complete (`is_incomplete_message()`), the answer is not
/// HTTP, has a status that is not three digits or a header byte HTTP
/// forbids (`is_parse()`), it closed while the request waited
/// (`is_closed()`, `is_canceled()`), its reads or writes failed. Its kind
/// is read, never its message.
///
/// ```
/// use fuse_breaker::{classify::classify_error, classify::FailureKind};
/// let err = std::io::Error::other("ssl handshake failed");
/// assert_eq!(classify_error(&err), FailureKind::Connection);
/// ```
pub fn classify_error(err: &(dyn StdError + 'static)) -> FailureKind {
    classify_chain(err)
}

fn classify_chain(err: &(dyn StdError + 'static)) -> FailureKind {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            let kind = io_kind(io.kind());
            if kind != FailureKind::Other {
                return kind;
            }
        }
        next = e.source();
    }
    #[cfg(any(feature = "tower", feature = "reqwest"))]
    {
        let mut next = Some(err);
        while let Some(e) = next {
            if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
                let kind = hyper_kind(hyper);
                if kind != FailureKind::Other {
                    return kind;
                }
                // The caller's own error: what it wraps is read as any
                // other error's chain, by its messages.
                break;
            }
            next = e.source();
        }
    }
    let mut next = Some(err);
    while let Some(e) = next {
        let kind = classify_message(&e.to_string());
        if kind != FailureKind::Other {
            return kind;
        }
        next = e.source();
    }
    FailureKind::Other
}

/// The kind of a hyper error: a timeout, the caller's own (`Other`), or
/// else the connection's (see [`classify_error`]).
#[cfg(any(feature = "tower", feature = "reqwest"))]
fn hyper_kind(err: &hyper::Error) -> FailureKind {
    if err.is_timeout() {
        FailureKind::Timeout
    } else if err.is_user() {
        FailureKind::Other
    } else {
        FailureKind::Connection
    }
}

/// The message rules of milon/fuse, case-insensitive.
fn classify_message(message: &str) -> FailureKind {
    const TIMEOUT: [&str; 2] = ["timed out", "timeout"];
    const CONNECTION: [&str; 6] = [
        "connection refused",
        "could not resolve host",
        "failed to connect",
        "network is unreachable",
        "ssl",
        "tls",
    ];
    let message = message.to_ascii_lowercase();
    if TIMEOUT.iter().any(|m| message.contains(m)) {
        FailureKind::Timeout
    } else if CONNECTION.iter().any(|m| message.contains(m)) {
        FailureKind::Connection
    } else {
        FailureKind::Other
    }
}

#[cfg(test)]
mod tests;
