//! [`Permit`]: the right to run one call, ended by exactly one verdict.

use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use crate::error::OpenError;
use crate::fuse::Fuse;
use crate::model::{Admission, Grant, PermitKind};
use crate::verdict::Verdict;

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
        let grant = self.admit()?;
        Ok(Permit { fuse: self, grant })
    }

    /// Like [`try_acquire`](Self::try_acquire), for a circuit in an `Arc`:
    /// the permit owns a reference to the circuit, so it can live in a
    /// `'static` future or move to another task.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let permit = fuse.try_acquire_owned()?;
    /// std::thread::spawn(move || permit.success()).join().unwrap();
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedPermit, OpenError> {
        let grant = self.admit()?;
        Ok(OwnedPermit {
            fuse: Arc::clone(self),
            ticket: Ticket::new(grant),
        })
    }

    #[inline]
    fn admit(&self) -> Result<Grant, OpenError> {
        match self.engine().acquire() {
            Admission::Granted(grant) => {
                #[cfg(feature = "metrics")]
                self.telemetry().admitted();
                Ok(grant)
            }
            Admission::Rejected { retry_after } => {
                #[cfg(feature = "metrics")]
                self.telemetry().rejected();
                let (name, key) = self.static_names();
                Err(OpenError::new(name, key, retry_after))
            }
        }
    }
}

/// Gives the verdict of `grant`: what every permit does exactly once.
#[inline]
fn conclude(fuse: &Fuse, grant: Grant, verdict: Verdict) {
    #[cfg(feature = "metrics")]
    match verdict {
        Verdict::Failure => fuse.telemetry().failure(),
        Verdict::Ignore => fuse.telemetry().ignored(),
        Verdict::Success => {}
    }
    fuse.engine().verdict(grant, verdict);
}

/// A grant and whether its verdict was given, for the owned permit (which
/// cannot skip its `Drop` without leaking its `Arc`).
#[derive(Debug)]
struct Ticket {
    grant: Grant,
    done: bool,
}

impl Ticket {
    fn new(grant: Grant) -> Self {
        Ticket { grant, done: false }
    }

    /// Gives the verdict, once.
    #[inline]
    fn end(&mut self, fuse: &Fuse, verdict: Verdict) {
        if !self.done {
            self.done = true;
            conclude(fuse, self.grant, verdict);
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
}

impl Permit<'_> {
    /// Ends the permit with `verdict`; [`success`](Self::success),
    /// [`failure`](Self::failure) and [`ignore`](Self::ignore) are
    /// shorthands.
    ///
    /// ```
    /// use fuse_breaker::{Config, Fuse, State, Verdict};
    ///
    /// let fuse = Fuse::new("billing", Config::builder().failure_threshold(1).build()?);
    /// let outcome: Result<(), &str> = Err("timeout");
    /// let verdict = Verdict::for_outcome(&outcome, |_| Verdict::Success, |_| Verdict::Failure);
    /// fuse.try_acquire()?.conclude(verdict);
    /// assert_eq!(fuse.state(), State::Open);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn conclude(self, verdict: Verdict) {
        let this = ManuallyDrop::new(self);
        conclude(this.fuse, this.grant, verdict);
    }

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
        self.conclude(Verdict::Success);
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
        self.conclude(Verdict::Failure);
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
        self.conclude(Verdict::Ignore);
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
        self.grant.kind() == PermitKind::Probe
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        conclude(self.fuse, self.grant, Verdict::Ignore);
    }
}

/// A [`Permit`] that owns a reference to its circuit (see
/// [`Fuse::try_acquire_owned`]): the same verdicts, the same rules, and
/// dropping it without a verdict is an ignore verdict.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::{Config, Fuse, State};
///
/// let fuse = Arc::new(Fuse::new("billing", Config::builder().failure_threshold(1).build()?));
/// let permit = fuse.try_acquire_owned()?;
/// assert_eq!(permit.fuse().key(), "fuse:billing");
/// permit.failure();
/// assert_eq!(fuse.state(), State::Open);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a permit dropped without a verdict is an ignore verdict"]
pub struct OwnedPermit {
    fuse: Arc<Fuse>,
    ticket: Ticket,
}

impl OwnedPermit {
    /// Ends the permit with `verdict` (see [`Permit::conclude`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::{Fuse, Verdict};
    /// let fuse = Arc::new(Fuse::new("billing", Default::default()));
    /// fuse.try_acquire_owned()?.conclude(Verdict::Failure);
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn conclude(mut self, verdict: Verdict) {
        self.ticket.end(&self.fuse, verdict);
    }

    /// The call succeeded (see [`Permit::success`]).
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// fuse.try_acquire_owned()?.success();
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn success(self) {
        self.conclude(Verdict::Success);
    }

    /// The call failed with a counted failure (see [`Permit::failure`]).
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// fuse.try_acquire_owned()?.failure();
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn failure(self) {
        self.conclude(Verdict::Failure);
    }

    /// The call ended with an ignored error (see [`Permit::ignore`]).
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// fuse.try_acquire_owned()?.ignore();
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn ignore(self) {
        self.conclude(Verdict::Ignore);
    }

    /// Whether this permit is a half-open probe.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert!(!fuse.try_acquire_owned()?.is_probe());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn is_probe(&self) -> bool {
        self.ticket.grant.kind() == PermitKind::Probe
    }

    /// The circuit this permit belongs to.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let permit = fuse.try_acquire_owned()?;
    /// assert_eq!(permit.fuse().config().failure_threshold(), 8);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn fuse(&self) -> &Arc<Fuse> {
        &self.fuse
    }
}

impl Drop for OwnedPermit {
    #[inline]
    fn drop(&mut self) {
        self.ticket.end(&self.fuse, Verdict::Ignore);
    }
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("key", &self.fuse.key())
            .field("probe", &self.is_probe())
            .field("epoch", &self.ticket.grant.epoch())
            .finish()
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("key", &self.fuse.key())
            .field("probe", &self.is_probe())
            .field("epoch", &self.grant.epoch())
            .finish()
    }
}
