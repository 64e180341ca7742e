//! [`Verdict`]: how a call ended, as its circuit sees it; the one function
//! that turns an outcome and a classification into one, and the rules for
//! HTTP statuses and errors.

use std::error::Error as StdError;

use crate::classify::{Classify, FailureKind, classify_error};
use crate::config::Config;

/// How one call ended, as far as its circuit is concerned: what a permit is
/// ended with ([`Permit::conclude`](crate::Permit::conclude)), what the
/// rules of the model act on, and what a response classifier of the tower
/// layer decides.
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
    /// The verdict on a call's outcome, given how to judge it: `ok` judges
    /// the value of a call that returned, `err` its error. Every way of
    /// running a call (`run`, `run_with`, the tower layer, the reqwest
    /// middleware) decides its verdict here.
    ///
    /// ```
    /// use fuse_breaker::Verdict;
    ///
    /// let judge = |outcome: &Result<u32, &str>| {
    ///     Verdict::for_outcome(
    ///         outcome,
    ///         |hits| if *hits > 0 { Verdict::Success } else { Verdict::Failure },
    ///         |err| if *err == "timeout" { Verdict::Failure } else { Verdict::Ignore },
    ///     )
    /// };
    /// assert_eq!(judge(&Ok(3)), Verdict::Success);
    /// assert_eq!(judge(&Ok(0)), Verdict::Failure);
    /// assert_eq!(judge(&Err("timeout")), Verdict::Failure);
    /// assert_eq!(judge(&Err("card declined")), Verdict::Ignore);
    /// ```
    #[inline]
    pub fn for_outcome<T, E>(
        outcome: &Result<T, E>,
        ok: impl FnOnce(&T) -> Verdict,
        err: impl FnOnce(&E) -> Verdict,
    ) -> Verdict {
        match outcome {
            Ok(value) => ok(value),
            Err(error) => err(error),
        }
    }

    /// [`Failure`](Verdict::Failure) if `counted`, else
    /// [`Ignore`](Verdict::Ignore): the verdict on an error.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Verdict::failure_if(false), fuse_breaker::Verdict::Ignore);
    /// ```
    #[inline]
    pub fn failure_if(counted: bool) -> Verdict {
        if counted {
            Verdict::Failure
        } else {
            Verdict::Ignore
        }
    }

    /// [`Success`](Verdict::Success) if `good`, else a counted
    /// [`Failure`](Verdict::Failure): the verdict on a returned value.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Verdict::success_if(false), fuse_breaker::Verdict::Failure);
    /// ```
    #[inline]
    pub fn success_if(good: bool) -> Verdict {
        if good {
            Verdict::Success
        } else {
            Verdict::Failure
        }
    }

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
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    #[inline]
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
    /// use fuse_breaker::{Config, classify::FailureKind, Verdict};
    ///
    /// let config = Config::default();
    /// assert_eq!(Verdict::for_kind(FailureKind::Timeout, &config), Verdict::Failure);
    /// assert_eq!(Verdict::for_kind(FailureKind::Other, &config), Verdict::Ignore);
    /// ```
    pub fn for_kind(kind: FailureKind, config: &Config) -> Verdict {
        Verdict::failure_if(config.counts(kind))
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
}

/// The verdict of a `run` (in-process or shared): `Ok` is a success, an
/// error is judged by its kind under the settings `config` gives (read for
/// an error only).
#[inline]
pub(crate) fn judge<'c, T, E: Classify>(
    outcome: &Result<T, E>,
    config: impl FnOnce() -> &'c Config,
) -> Verdict {
    Verdict::for_outcome(
        outcome,
        |_| Verdict::Success,
        |err| Verdict::for_kind(err.failure_kind(), config()),
    )
}

/// The verdict of a `run_with` (in-process or shared): `is_failure` says
/// whether an error counts, `is_success` whether a value is a success.
#[inline]
pub(crate) fn judge_with<T, E>(
    outcome: &Result<T, E>,
    is_failure: impl FnOnce(&E) -> bool,
    is_success: impl FnOnce(&T) -> bool,
) -> Verdict {
    Verdict::for_outcome(
        outcome,
        |value| Verdict::success_if(is_success(value)),
        |err| Verdict::failure_if(is_failure(err)),
    )
}
