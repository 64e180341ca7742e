//! The errors of a protected call: [`Error`] and [`OpenError`].

use std::fmt;
use std::time::Duration;

use crate::names::Label;
use crate::snapshot::Grading;

/// What a throttled rejection (SPEC §11) holds in place of a time to wait:
/// values no open rejection holds ([`LONGEST_WAIT`] caps those), so that a
/// shed call is a rejection like any other on the way out (one path, the
/// open rejection's), and tells itself apart by its wait.
const THROTTLED: u64 = u64::MAX;
const RAMPING_UP: u64 = u64::MAX - 1;

/// The wait a rejection of a call shed by `why` holds (see above).
pub(crate) const fn shed_wait(why: Grading) -> u64 {
    match why {
        Grading::Throttle => THROTTLED,
        Grading::RampUp => RAMPING_UP,
    }
}

/// Which rule shed a call whose rejection holds `wait`, if one did.
pub(crate) const fn shed_by(wait: u64) -> Option<Grading> {
    match wait {
        THROTTLED => Some(Grading::Throttle),
        RAMPING_UP => Some(Grading::RampUp),
        _ => None,
    }
}
/// The longest wait a rejection names, in nanoseconds: 584 years, so that
/// the two values above name no wait.
pub(crate) const LONGEST_WAIT: u64 = u64::MAX - 2;

/// The circuit rejected the call without running it: it is open (or
/// half-open with every probe out), or closed and grading its admission
/// (SPEC §11: [`throttled`](Self::throttled) says why; such a call may be
/// retried at once).
///
/// Small and cheap: three words. The circuit's key and name are interned
/// the first time it rejects a call (once per key, within a bounded budget
/// of memory; see the guide's design notes), so building one copies a
/// pointer, allocates nothing and touches no shared counter, and the error
/// names its circuit after the circuit is gone too.
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::{Config, Fuse};
///
/// let fuse = Fuse::builder("billing").app("shop").operation("charge").build();
/// fuse.force_open();
/// let err = fuse.try_acquire().unwrap_err();
/// assert_eq!(err.name(), "billing");
/// assert_eq!(err.key(), "fuse:shop:billing:charge");
/// assert!(err.retry_after() <= Duration::from_secs(30));
/// assert!(err.to_string().starts_with("circuit fuse:shop:billing:charge is open"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct OpenError {
    label: Label,
    /// Nanoseconds (at most [`LONGEST_WAIT`]); turned into a `Duration`
    /// only when asked, which keeps a division off the rejection path. A
    /// throttled rejection holds one of the values above it instead.
    retry_after: u64,
}

impl OpenError {
    /// The rejection of the circuit `label` names, after which it admits
    /// again in `retry_after_nanos` (or a shed call's wait, [`shed_wait`]).
    #[inline]
    pub(crate) fn new(label: &Label, retry_after_nanos: u64) -> Self {
        OpenError {
            label: label.clone(),
            retry_after: retry_after_nanos,
        }
    }

    /// Why a closed circuit shed this call (SPEC §11), or `None` for the
    /// rejection of an open (or busy half-open) circuit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let fuse = Fuse::new("billing", Config::default());
    /// fuse.force_open();
    /// assert_eq!(fuse.try_acquire().unwrap_err().throttled(), None);
    /// ```
    pub fn throttled(&self) -> Option<Grading> {
        shed_by(self.retry_after)
    }

    /// The name of the circuit.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.force_open();
    /// assert_eq!(fuse.try_acquire().unwrap_err().name(), "billing");
    /// ```
    pub fn name(&self) -> &str {
        self.label.name()
    }

    /// The key of the circuit (`prefix:app:name:operation`).
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.force_open();
    /// assert_eq!(fuse.try_acquire().unwrap_err().key(), "fuse:billing");
    /// ```
    pub fn key(&self) -> &str {
        self.label.key()
    }

    /// How long until the circuit admits a call again: the rest of the
    /// cooldown while open, zero while half-open with every probe slot
    /// taken, and zero for a call a closed circuit shed (SPEC §11).
    ///
    /// ```
    /// use std::time::Duration;
    /// let (clock, mock) = quanta::Clock::mock();
    /// let fuse = fuse_breaker::Fuse::builder("billing").clock(clock).build();
    /// fuse.force_open();
    /// mock.increment(Duration::from_secs(10));
    /// let err = fuse.try_acquire().unwrap_err();
    /// assert_eq!(err.retry_after(), Duration::from_secs(20));
    /// ```
    pub fn retry_after(&self) -> Duration {
        if self.retry_after > LONGEST_WAIT {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.retry_after)
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(why) = self.throttled() {
            return write!(
                f,
                "circuit {} is closed and shed this call ({why}); it may be retried at once",
                self.key()
            );
        }
        write!(
            f,
            "circuit {} is open; retry after {:?}",
            self.key(),
            self.retry_after()
        )
    }
}

impl fmt::Debug for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenError")
            .field("name", &self.name())
            .field("key", &self.key())
            .field("retry_after", &self.retry_after())
            .finish()
    }
}

impl std::error::Error for OpenError {}

#[cfg(test)]
mod tests;

/// The error of a protected call: the circuit was open, or the call itself
/// failed.
///
/// ```
/// use fuse_breaker::{Config, Error, Fuse};
///
/// let fuse = Fuse::new("billing", Config::default());
/// let out: Result<(), Error<std::io::Error>> =
///     fuse.run(|| Err(std::io::Error::other("card declined")));
/// match out {
///     Err(Error::Inner(err)) => assert_eq!(err.to_string(), "card declined"),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error<E> {
    /// The circuit rejected the call; it did not run.
    Open(OpenError),
    /// The call ran and returned this error.
    Inner(E),
}

impl<E> Error<E> {
    /// Whether the circuit rejected the call.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.force_open();
    /// assert!(fuse.run(|| Ok::<_, std::io::Error>(())).unwrap_err().is_open());
    /// ```
    pub fn is_open(&self) -> bool {
        matches!(self, Error::Open(_))
    }

    /// The call's own error, if it ran.
    ///
    /// ```
    /// use fuse_breaker::{Error, OpenError};
    /// let err: Error<&str> = Error::Inner("declined");
    /// assert_eq!(err.into_inner(), Some("declined"));
    /// ```
    pub fn into_inner(self) -> Option<E> {
        match self {
            Error::Inner(err) => Some(err),
            Error::Open(_) => None,
        }
    }

    /// The rejection, if the circuit was open.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.force_open();
    /// let err = fuse.run(|| Ok::<_, std::io::Error>(())).unwrap_err();
    /// assert_eq!(err.open_error().map(|e| e.key()), Some("fuse:billing"));
    /// ```
    pub fn open_error(&self) -> Option<&OpenError> {
        match self {
            Error::Open(err) => Some(err),
            Error::Inner(_) => None,
        }
    }
}

impl<E> From<OpenError> for Error<E> {
    fn from(err: OpenError) -> Self {
        Error::Open(err)
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    /// The rejection, or the call's own error unchanged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Open(err) => err.fmt(f),
            Error::Inner(err) => err.fmt(f),
        }
    }
}

impl<E: std::error::Error> std::error::Error for Error<E> {
    /// Transparent: the call's own error displays as itself, so its source
    /// is its own source.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Open(_) => None,
            Error::Inner(err) => err.source(),
        }
    }
}
