//! [`Permit`]: the right to run one call, ended by exactly one verdict.

use std::fmt;

use crate::error::OpenError;
use crate::fuse::Fuse;
use crate::model::{Admission, Grant, PermitKind, Verdict};

impl Fuse {
    /// Asks to run one call: a [`Permit`] to end with a verdict, or the
    /// rejection of an open circuit. For callers that run the call
    /// themselves; [`run`](Fuse::run) does all of it.
    ///
    /// ```
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let fuse = Fuse::new("billing", Config::default());
    /// match fuse.try_acquire() {
    ///     Ok(permit) => {
    ///         // ... call the dependency ...
    ///         permit.success();
    ///     }
    ///     Err(open) => println!("skipped: {open}"),
    /// }
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit<'_>, OpenError> {
        match self.engine().acquire() {
            Admission::Granted(grant) => {
                #[cfg(feature = "metrics")]
                self.engine().events().telemetry.admitted();
                Ok(Permit {
                    fuse: self,
                    grant,
                    done: false,
                })
            }
            Admission::Rejected { retry_after } => {
                #[cfg(feature = "metrics")]
                self.engine().events().telemetry.rejected();
                let (name, key) = self.static_names();
                Err(OpenError::new(name, key, retry_after))
            }
        }
    }
}

/// The right to run one call. End it with [`success`](Self::success),
/// [`failure`](Self::failure) or [`ignore`](Self::ignore); dropping it
/// without a verdict (a panic, a cancelled future) is an ignore verdict, so
/// a probe slot is never leaked. A verdict from a past epoch changes nothing.
///
/// ```
/// use fuse_breaker::{Config, Fuse, State};
///
/// let fuse = Fuse::new("billing", Config::builder().failure_threshold(1).build()?);
/// let permit = fuse.try_acquire()?;
/// permit.failure();
/// assert_eq!(fuse.state(), State::Open);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a permit dropped without a verdict is an ignore verdict"]
pub struct Permit<'a> {
    fuse: &'a Fuse,
    grant: Grant,
    done: bool,
}

impl Permit<'_> {
    /// The call succeeded: clears the failures of a closed circuit, counts
    /// towards closing a half-open one.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.try_acquire()?.failure();
    /// fuse.try_acquire()?.success();
    /// assert!(fuse.snapshot().failures.is_empty());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn success(self) {
        self.finish(Verdict::Success);
    }

    /// The call failed with a counted failure: recorded while closed,
    /// reopens a half-open circuit.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.try_acquire()?.failure();
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn failure(self) {
        self.finish(Verdict::Failure);
    }

    /// The call ended with an ignored error: nothing moves, but a probe
    /// slot is released.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.try_acquire()?.ignore();
    /// assert!(fuse.snapshot().failures.is_empty());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn ignore(self) {
        self.finish(Verdict::Ignore);
    }

    /// Whether this permit is a half-open probe rather than a closed permit.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// let permit = fuse.try_acquire()?;
    /// assert!(!permit.is_probe());
    /// permit.success();
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn is_probe(&self) -> bool {
        self.grant.kind == PermitKind::Probe
    }

    #[inline]
    fn finish(mut self, verdict: Verdict) {
        self.end(verdict);
    }

    #[inline]
    fn end(&mut self, verdict: Verdict) {
        self.done = true;
        #[cfg(feature = "metrics")]
        match verdict {
            Verdict::Failure => self.fuse.engine().events().telemetry.failure(),
            Verdict::Ignore => self.fuse.engine().events().telemetry.ignored(),
            Verdict::Success => {}
        }
        self.fuse.engine().verdict(self.grant, verdict);
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.done {
            self.end(Verdict::Ignore);
        }
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("key", &self.fuse.key())
            .field("probe", &self.is_probe())
            .field("epoch", &self.grant.epoch)
            .finish()
    }
}
