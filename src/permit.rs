//! [`Permit`] and [`OwnedPermit`]: the right to run one call, ended by
//! exactly one verdict, for a circuit of any backing; what a circuit of
//! this process's permits hold and do.

use std::fmt;
use std::mem::ManuallyDrop;
use std::time::Duration;

use crate::backing::{Backing, Local};
use crate::conclude::Circuit;
use crate::config::{Config, nanos};
use crate::error::OpenError;
use crate::fuse::Fuse;
use crate::model::{Decision, Grant, PermitKind};
use crate::slot::Slot;
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
    #[allow(clippy::inline_always)] // measured: the closed path of `run` inlines whole
    #[inline(always)]
    pub fn try_acquire(&self) -> Result<Permit<'_>, OpenError> {
        let (grant, started) = self.admit()?;
        Ok(Permit(Borrowed {
            fuse: self,
            grant,
            started,
        }))
    }

    /// Like [`try_acquire`](Self::try_acquire), for a permit that does not
    /// borrow the circuit: it can live in a `'static` future or move to
    /// another task, and taking it writes no shared memory (no reference
    /// count: the permit holds the circuit's atomics, which are never
    /// freed). A permit that outlives its circuit concludes without effect.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// let permit = fuse.try_acquire_owned()?;
    /// std::thread::spawn(move || permit.success()).join().unwrap();
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn try_acquire_owned(&self) -> Result<OwnedPermit, OpenError> {
        let (grant, started) = self.admit()?;
        Ok(OwnedPermit(Owned {
            slot: self.slot(),
            grant: grant.with_tag(self.tag()),
            started,
        }))
    }

    #[allow(clippy::inline_always)] // measured: without it the closed path is not inlined (1.2 -> 2.2 ns)
    #[inline(always)]
    fn admit(&self) -> Result<(Grant, u64), OpenError> {
        // The closed admission, first: one load and one mask (a circuit
        // that times its calls is admitted out of line, with a clock read).
        if let Some(grant) = self.slot().load().untimed_closed_grant() {
            #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
            return Ok((grant, self.sinks().start(self.time())));
            #[cfg(not(any(feature = "metrics", feature = "opentelemetry")))]
            return Ok((grant, crate::clock::UNTIMED));
        }
        self.admit_otherwise()
    }

    /// A probe, a closed permit of a circuit that times its calls (then
    /// with the time it starts) or of a word that changed under the first
    /// load, out of line: the rejection stays the inline path.
    #[inline(never)]
    fn probe_granted(&self, grant: Grant) -> (Grant, u64) {
        let started = if self.config().times_calls() {
            self.now()
        } else {
            #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
            let started = self.sinks().start(self.time());
            #[cfg(not(any(feature = "metrics", feature = "opentelemetry")))]
            let started = crate::clock::UNTIMED;
            started
        };
        (grant, started)
    }

    /// Admission of a circuit that is not closed (or was not at the first
    /// load).
    #[allow(clippy::inline_always)] // measured: the open rejection inlines whole (+35 instructions without)
    #[inline(always)]
    fn admit_otherwise(&self) -> Result<(Grant, u64), OpenError> {
        match self.engine().acquire() {
            Decision::Granted(grant) => Ok(self.probe_granted(grant)),
            Decision::Rejected { retry_after } => Err(self.rejected(retry_after)),
        }
    }

    /// The rejection: a copy of the circuit's names and the time left
    /// (or the wait of a call graded admission shed, SPEC §11, which the
    /// metrics count apart).
    #[inline]
    fn rejected(&self, retry_after: u64) -> OpenError {
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        self.sinks().refused(retry_after);
        OpenError::new(self.label(), retry_after)
    }
}

/// Gives the verdict of `grant`: what every permit does exactly once.
#[inline]
fn conclude(fuse: &Fuse, grant: Grant, verdict: Verdict, started: u64) {
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
    fuse.sinks().ended(verdict, started, fuse.time());
    fuse.engine().verdict(grant, verdict, started);
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
///
/// A shared circuit's permit (`Permit<'_, store::Shared>`, feature
/// `store`) ends with the same verdicts, each a future: a round trip when
/// the store granted it.
#[must_use = "a permit dropped without a verdict is an ignore verdict"]
pub struct Permit<'a, B: Permits = Local>(pub(crate) B::Borrowed<'a>);

/// What the permits of a backing hold: a borrowing permit's, and an owned
/// one's. Sealed with the backings (nothing outside the crate names it).
pub trait Permits: Backing {
    /// What a permit that borrows its circuit holds.
    type Borrowed<'a>: fmt::Debug + Send;
    /// What a permit that owns (or needs no hold on) its circuit holds.
    type Owned: fmt::Debug + Send + 'static;
}

impl Permits for Local {
    type Borrowed<'a> = Borrowed<'a>;
    type Owned = Owned;
}

/// What a local circuit's [`Permit`] holds.
pub struct Borrowed<'a> {
    fuse: &'a Fuse,
    grant: Grant,
    /// When the call was admitted, on the circuit's clock (read only by a
    /// circuit that times its calls; zero otherwise).
    started: u64,
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
        let this = ManuallyDrop::new(self.0);
        conclude(this.fuse, this.grant, verdict, this.started);
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

    /// The call failed with a counted failure, and the server said when to
    /// come back (an HTTP `Retry-After`, a gRPC retry pushback): if this
    /// verdict opens the circuit, the opening lasts at least `hint`, capped
    /// at [`max_open_duration`](Config::max_open_duration) (SPEC §10). A
    /// hint on a failure that does not open the circuit changes nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let config = Config::builder()
    ///     .failure_threshold(1)
    ///     .max_open_duration(Duration::from_secs(300))
    ///     .build()?;
    /// let fuse = Fuse::new("billing", config);
    /// fuse.try_acquire()?.failure_retry_after(Duration::from_secs(120));
    /// assert_eq!(fuse.snapshot().open_for, Some(Duration::from_secs(120)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure_retry_after(self, hint: Duration) {
        let this = ManuallyDrop::new(self.0);
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        this.fuse
            .sinks()
            .ended(Verdict::Failure, this.started, this.fuse.time());
        let circuit = Circuit {
            borrowed: Some(this.fuse.engine().occupant),
            tag: 0,
        };
        this.fuse
            .slot()
            .conclude_with_hint(this.grant, this.started, circuit, nanos(hint));
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
        self.0.grant.kind() == PermitKind::Probe
    }
}

impl Drop for Borrowed<'_> {
    #[inline]
    fn drop(&mut self) {
        conclude(self.fuse, self.grant, Verdict::Ignore, self.started);
    }
}

/// A [`Permit`] that does not borrow its circuit (see
/// [`Fuse::try_acquire_owned`]): the same verdicts, the same rules, and
/// dropping it without a verdict is an ignore verdict. It holds the
/// circuit's atomics, in memory that is never freed, and no reference
/// count; if the circuit is dropped first, the permit is stale and its
/// verdict changes nothing.
///
/// ```
/// use fuse_breaker::{Config, Fuse, State};
///
/// let fuse = Fuse::new("billing", Config::builder().failure_threshold(1).build()?);
/// let permit = fuse.try_acquire_owned()?;
/// permit.failure();
/// assert_eq!(fuse.state(), State::Open);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A shared circuit's owned permit (`OwnedPermit<store::Shared>`, feature
/// `store`) holds its circuit in an `Arc` and ends with the same verdicts,
/// each a future that owns what it needs.
#[must_use = "a permit dropped without a verdict is an ignore verdict"]
pub struct OwnedPermit<B: Permits = Local>(pub(crate) B::Owned);

/// What a local circuit's [`OwnedPermit`] holds.
pub struct Owned {
    slot: &'static Slot,
    /// The grant, and which circuit of the slot this permit belongs to
    /// (`Grant::with_tag`).
    grant: u64,
    /// As [`Permit`]'s.
    started: u64,
}

// Three words: it is moved with every future that holds one.
const _: () = assert!(std::mem::size_of::<OwnedPermit>() <= 3 * std::mem::size_of::<usize>());

impl Owned {
    /// Gives the verdict (once: `conclude` forgets the permit after it, and
    /// only `drop` calls it otherwise).
    #[inline]
    fn end(&self, verdict: Verdict) {
        let (grant, tag) = Grant::and_tag(self.grant);
        let circuit = Circuit {
            borrowed: None,
            tag,
        };
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        self.ended(tag, verdict);
        self.slot.conclude(grant, verdict, self.started, circuit);
    }

    /// Counts the call of the circuit `tag` ended with `verdict`, if the
    /// circuit is still in the slot (out of line: the occupant is looked
    /// up).
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
    #[inline(never)]
    fn ended(&self, tag: u32, verdict: Verdict) {
        if let Some(occupant) = self.slot.occupant().as_deref()
            && occupant.tag() == tag
        {
            occupant
                .sinks()
                .ended(verdict, self.started, occupant.time());
        }
    }

    fn grant(&self) -> Grant {
        Grant::and_tag(self.grant).0
    }
}

impl OwnedPermit {
    /// Ends the permit with `verdict` (see [`Permit::conclude`]).
    ///
    /// ```
    /// use fuse_breaker::{Fuse, Verdict};
    /// let fuse = Fuse::new("billing", Default::default());
    /// fuse.try_acquire_owned()?.conclude(Verdict::Failure);
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn conclude(self, verdict: Verdict) {
        self.0.end(verdict);
        // Concluded: no ignore verdict on drop (the permit owns nothing to
        // free).
        std::mem::forget(self);
    }

    /// The call succeeded (see [`Permit::success`]).
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
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
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.try_acquire_owned()?.failure();
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn failure(self) {
        self.conclude(Verdict::Failure);
    }

    /// A counted failure with the server's hint of when to come back (see
    /// [`Permit::failure_retry_after`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let config = Config::builder().failure_threshold(1).max_open_duration(Duration::from_secs(90)).build()?;
    /// let fuse = Fuse::new("billing", config);
    /// fuse.try_acquire_owned()?.failure_retry_after(Duration::from_secs(600));
    /// assert_eq!(fuse.snapshot().open_for, Some(Duration::from_secs(90)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure_retry_after(self, hint: Duration) {
        let this = &self.0;
        let (grant, tag) = Grant::and_tag(this.grant);
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        this.ended(tag, Verdict::Failure);
        let circuit = Circuit {
            borrowed: None,
            tag,
        };
        this.slot
            .conclude_with_hint(grant, this.started, circuit, nanos(hint));
        std::mem::forget(self);
    }

    /// The call ended with an ignored error (see [`Permit::ignore`]).
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
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
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// assert!(!fuse.try_acquire_owned()?.is_probe());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn is_probe(&self) -> bool {
        self.0.grant().kind() == PermitKind::Probe
    }

    /// The configuration of the circuit this permit belongs to (to
    /// classify the call's outcome).
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// let permit = fuse.try_acquire_owned()?;
    /// assert_eq!(permit.config().failure_threshold(), 8);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    #[inline]
    pub fn config(&self) -> &'static Config {
        self.0.slot.config()
    }

    /// Calls `f` with the key of the permit's circuit, if the circuit is
    /// still in its slot (to report what the call's answer held).
    #[cfg(any(feature = "tower", feature = "reqwest"))]
    pub(crate) fn with_key(&self, f: impl FnOnce(&str)) {
        let tag = Grant::and_tag(self.0.grant).1;
        let guard = self.0.slot.occupant();
        if let Some(occupant) = guard.as_deref()
            && occupant.tag() == tag
        {
            f(occupant.names().key());
        }
    }
}

impl Drop for Owned {
    #[inline]
    fn drop(&mut self) {
        self.end(Verdict::Ignore);
    }
}

impl<B: Permits> fmt::Debug for OwnedPermit<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<B: Permits> fmt::Debug for Permit<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Owned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("probe", &(self.grant().kind() == PermitKind::Probe))
            .field("epoch", &self.grant().epoch())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Borrowed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("key", &self.fuse.key())
            .field("probe", &(self.grant.kind() == PermitKind::Probe))
            .field("epoch", &self.grant.epoch())
            .finish()
    }
}
