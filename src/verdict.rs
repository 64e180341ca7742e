//! [`Verdict`]: how the integrations end a permit, and the rules they share
//! for HTTP statuses and errors.

use std::error::Error as StdError;

use crate::classify::{FailureKind, classify_error};
use crate::config::Config;
use crate::permit::OwnedPermit;

/// How one call ended, as far as its circuit is concerned: what the
/// integrations (features `tower` and `reqwest`) give a permit, and what a
/// response classifier of the tower layer decides.
///
/// ```
/// use fuse_breaker::{Config, Verdict};
///
/// let config = Config::default();
/// assert_eq!(Verdict::for_status(200, &config), Verdict::Success);
/// assert_eq!(Verdict::for_status(503, &config), Verdict::Failure);
/// assert_eq!(Verdict::for_status(404, &config), Verdict::Ignore);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The dependency did its job: clears the failures of a closed
    /// circuit, counts towards closing a half-open one.
    Success,
    /// A counted failure: recorded while closed, reopens a half-open circuit.
    Failure,
    /// Says nothing about the dependency (a business error, a client
    /// error): nothing moves, but a probe slot is released.
    Ignore,
}

impl Verdict {
    /// The verdict on an HTTP response with this status: a status the
    /// configuration counts ([`Config::counts_http_status`]: 502, 503 and
    /// 504 by default, 500 when `count_http_500` is set) is a
    /// [`Failure`](Verdict::Failure); any other status of 400 and above is
    /// an error that does not count, so [`Ignore`](Verdict::Ignore), as
    /// SPEC §4 treats every uncounted error; anything below 400 is a
    /// [`Success`](Verdict::Success).
    ///
    /// ```
    /// use fuse_breaker::{Config, Verdict};
    ///
    /// let config = Config::builder().count_http_500(true).build()?;
    /// assert_eq!(Verdict::for_status(500, &config), Verdict::Failure);
    /// assert_eq!(Verdict::for_status(429, &config), Verdict::Ignore);
    /// assert_eq!(Verdict::for_status(304, &config), Verdict::Success);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn for_status(status: u16, config: &Config) -> Verdict {
        if config.counts_http_status(status) {
            Verdict::Failure
        } else if status >= 400 {
            Verdict::Ignore
        } else {
            Verdict::Success
        }
    }

    /// The verdict on an error of this kind: a [`Failure`](Verdict::Failure)
    /// when the configuration counts the kind ([`Config::counts`]), an
    /// [`Ignore`](Verdict::Ignore) otherwise.
    ///
    /// ```
    /// use fuse_breaker::{Config, FailureKind, Verdict};
    ///
    /// let config = Config::default();
    /// assert_eq!(Verdict::for_kind(FailureKind::Timeout, &config), Verdict::Failure);
    /// assert_eq!(Verdict::for_kind(FailureKind::Other, &config), Verdict::Ignore);
    /// ```
    pub fn for_kind(kind: FailureKind, config: &Config) -> Verdict {
        if config.counts(kind) {
            Verdict::Failure
        } else {
            Verdict::Ignore
        }
    }

    /// The verdict on an error, classified by [`classify_error`] (its
    /// source chain, then its messages) and judged by
    /// [`for_kind`](Self::for_kind).
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use fuse_breaker::{Config, Verdict};
    ///
    /// let config = Config::default();
    /// let refused = Error::from(ErrorKind::ConnectionRefused);
    /// assert_eq!(Verdict::for_error(&refused, &config), Verdict::Failure);
    /// let declined = Error::other("card declined");
    /// assert_eq!(Verdict::for_error(&declined, &config), Verdict::Ignore);
    /// ```
    pub fn for_error(error: &(dyn StdError + 'static), config: &Config) -> Verdict {
        Verdict::for_kind(classify_error(error), config)
    }

    /// Ends `permit` with this verdict.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::{Config, Fuse, State, Verdict};
    ///
    /// let fuse = Arc::new(Fuse::new("billing", Config::builder().failure_threshold(1).build()?));
    /// Verdict::Failure.settle(fuse.try_acquire_owned()?);
    /// assert_eq!(fuse.state(), State::Open);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn settle(self, permit: OwnedPermit) {
        match self {
            Verdict::Success => permit.success(),
            Verdict::Failure => permit.failure(),
            Verdict::Ignore => permit.ignore(),
        }
    }
}
