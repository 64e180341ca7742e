//! [`SharedPermit`]: the right to run one call of a shared circuit.

use std::fmt;
use std::time::{Duration, Instant};

use crate::config::nanos;
use crate::permit::OwnedPermit;
use crate::policy::is_slow;
use crate::store::backend::error::StoreError;
use crate::store::circuit::conclusion::Conclusion;
use crate::store::circuit::shared::SharedFuse;
use crate::store::model::stored::Ticket;
use crate::verdict::Verdict;

/// Who granted a permit, and what ends it.
pub(in crate::store) enum Grantor {
    /// The store.
    Store(Ticket),
    /// The local circuit, while the store did not answer.
    Local(OwnedPermit),
    /// Nobody: the store did not answer and the fallback lets calls run.
    Allowed,
}

/// The right to run one call of a [`SharedFuse`]. End it with
/// [`success`](Self::success), [`failure`](Self::failure),
/// [`ignore`](Self::ignore) or [`conclude`](Self::conclude) (each a round
/// trip when the store granted it). A permit dropped without a verdict
/// changes nothing; a probe's slot comes back when its lease ends.
///
/// Under the `rate` policy with a `slow_call_duration`, the call's time is
/// measured on this process's monotonic clock, from the store's grant of
/// the permit to its verdict (read only then): the store's clock orders
/// the fleet's events, but a call's duration is the process's own to
/// measure, and a round trip's time is not part of it.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
///
/// # futures::executor::block_on(async {
/// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
/// let permit = fuse.try_acquire().await?;
/// assert!(!permit.is_probe());
/// permit.failure().await?;
/// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[must_use = "a permit dropped without a verdict records nothing"]
pub struct SharedPermit<'a> {
    fuse: &'a SharedFuse,
    grantor: Grantor,
    /// When the store's permit was granted, on this process's monotonic
    /// clock: read only when the configuration times calls (`rate` with a
    /// `slow_call_duration`).
    started: Option<Instant>,
}

impl<'a> SharedPermit<'a> {
    #[inline]
    pub(in crate::store) fn new(fuse: &'a SharedFuse, grantor: Grantor) -> Self {
        let timed = fuse.config().times_calls() && matches!(grantor, Grantor::Store(_));
        SharedPermit {
            fuse,
            grantor,
            started: timed.then(Instant::now),
        }
    }

    /// Whether the call was slow: its time from admission to now on this
    /// process's monotonic clock, at least `slow_call_duration`.
    fn slow(&self) -> bool {
        self.started.is_some_and(|started| {
            let elapsed = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            is_slow(self.fuse.config(), elapsed)
        })
    }

    /// Whether this permit is a half-open probe (of the store's circuit,
    /// or the local one's).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert!(!fuse.try_acquire().await.unwrap().is_probe());
    /// # });
    /// ```
    pub fn is_probe(&self) -> bool {
        match &self.grantor {
            Grantor::Store(ticket) => ticket.is_probe(),
            Grantor::Local(permit) => permit.is_probe(),
            Grantor::Allowed => false,
        }
    }

    /// Whether the store granted this permit (rather than the fallback).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert!(fuse.try_acquire().await.unwrap().from_store());
    /// # });
    /// ```
    pub fn from_store(&self) -> bool {
        matches!(self.grantor, Grantor::Store(_))
    }

    /// Ends the permit with `verdict`. `Ok` when the verdict was recorded
    /// or was stale; the store's error when it could not be asked (the
    /// verdict is then lost, and the store is marked unreachable).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::Verdict;
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// fuse.try_acquire().await?.conclude(Verdict::Ignore).await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn conclude(self, verdict: Verdict) -> Conclusion<'a> {
        match self.grantor {
            Grantor::Store(ticket) => {
                let slow = self.slow();
                self.fuse.conclude_in_store(ticket, verdict, slow, None)
            }
            Grantor::Local(permit) => {
                permit.conclude(verdict);
                Conclusion::settled()
            }
            Grantor::Allowed => Conclusion::settled(),
        }
    }

    /// Ends the permit with `verdict` (a counted failure with the server's
    /// `hint`, as [`failure_retry_after`](Self::failure_retry_after)),
    /// awaited where the caller's future is: a round trip is part of that
    /// future rather than a box of its own.
    pub(in crate::store) async fn conclude_in_place(
        self,
        verdict: Verdict,
        hint: Option<Duration>,
    ) -> Result<(), StoreError> {
        let hint = hint.filter(|_| verdict == Verdict::Failure);
        match self.grantor {
            Grantor::Store(ticket) => {
                let slow = self.slow();
                let hint = hint.map(nanos);
                self.fuse
                    .conclude_in_place(ticket, verdict, slow, hint)
                    .await
            }
            Grantor::Local(permit) => {
                match hint {
                    Some(hint) => permit.failure_retry_after(hint),
                    None => permit.conclude(verdict),
                }
                Ok(())
            }
            Grantor::Allowed => Ok(()),
        }
    }

    /// The call succeeded.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// fuse.try_acquire().await?.success().await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn success(self) -> Conclusion<'a> {
        self.conclude(Verdict::Success)
    }

    /// The call failed with a counted failure.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// fuse.try_acquire().await?.failure().await?;
    /// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn failure(self) -> Conclusion<'a> {
        self.conclude(Verdict::Failure)
    }

    /// The call failed with a counted failure, and the server said when to
    /// come back: if this verdict opens the circuit, for the whole fleet,
    /// the opening lasts at least `hint`, capped at
    /// [`max_open_duration`](crate::Config::max_open_duration) (SPEC §10;
    /// see [`Permit::failure_retry_after`](crate::Permit::failure_retry_after)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::Config;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let config = Config::builder()
    ///     .failure_threshold(1)
    ///     .max_open_duration(Duration::from_secs(300))
    ///     .build()?;
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new()))
    ///     .config(config)
    ///     .build();
    /// fuse.try_acquire().await?.failure_retry_after(Duration::from_secs(120)).await?;
    /// assert_eq!(fuse.snapshot().await?.open_for, Some(Duration::from_secs(120)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn failure_retry_after(self, hint: Duration) -> Conclusion<'a> {
        match self.grantor {
            Grantor::Store(ticket) => {
                let slow = self.slow();
                let hint = Some(nanos(hint));
                self.fuse
                    .conclude_in_store(ticket, Verdict::Failure, slow, hint)
            }
            Grantor::Local(permit) => {
                permit.failure_retry_after(hint);
                Conclusion::settled()
            }
            Grantor::Allowed => Conclusion::settled(),
        }
    }

    /// The call ended with an ignored error.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// fuse.try_acquire().await?.ignore().await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn ignore(self) -> Conclusion<'a> {
        self.conclude(Verdict::Ignore)
    }
}

/// What the tower layer and the reqwest middleware end a permit with.
#[cfg(any(feature = "tower", feature = "reqwest"))]
impl SharedPermit<'_> {
    /// Ends the permit with `verdict` and the call's `hint`: a counted
    /// failure with a hint goes to [`failure_retry_after`](Self::failure_retry_after);
    /// a malformed hint is reported against the circuit and otherwise
    /// ignored.
    pub(crate) async fn conclude_hinted(
        self,
        verdict: Verdict,
        hint: crate::hint::Hint,
    ) -> Result<(), StoreError> {
        use crate::hint::Hint;
        match (verdict, hint) {
            (Verdict::Failure, Hint::After(after)) => {
                self.conclude_in_place(verdict, Some(after)).await
            }
            (_, Hint::Malformed(header)) => {
                crate::hint::malformed(self.fuse.key(), header);
                self.conclude_in_place(verdict, None).await
            }
            _ => self.conclude_in_place(verdict, None).await,
        }
    }
}

impl fmt::Debug for SharedPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = match &self.grantor {
            Grantor::Store(_) => "store",
            Grantor::Local(_) => "local",
            Grantor::Allowed => "allowed",
        };
        f.debug_struct("SharedPermit")
            .field("key", &self.fuse.key())
            .field("from", &from)
            .field("probe", &self.is_probe())
            .finish()
    }
}
