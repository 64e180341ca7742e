//! A shared circuit's permits: [`Permit<'_, Shared>`](crate::Permit)
//! ([`SharedPermit`]), which borrows its circuit, and
//! [`OwnedPermit<Shared>`](crate::OwnedPermit), which holds it in an `Arc`.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::nanos;
use crate::permit::{OwnedPermit, Permit, Permits};
use crate::policy::is_slow;
use crate::store::backend::error::StoreError;
use crate::store::circuit::conclusion::Conclusion;
use crate::store::circuit::shared::{Shared, SharedFuse};
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

/// The right to run one call of a [`SharedFuse`]: `Permit<'_, Shared>`.
/// End it with [`success`](Permit::success), [`failure`](Permit::failure),
/// [`ignore`](Permit::ignore) or [`conclude`](Permit::conclude) (each a
/// round trip when the store granted it). A permit dropped without a
/// verdict changes nothing; a probe's slot comes back when its lease ends.
/// [`SharedFuse::try_acquire_owned`] gives one that holds its circuit in an
/// `Arc` ([`OwnedPermit<Shared>`](crate::OwnedPermit)), with the same
/// verdicts.
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
pub type SharedPermit<'a> = Permit<'a, Shared>;

impl Permits for Shared {
    type Borrowed<'a> = Held<&'a SharedFuse>;
    type Owned = Held<Arc<SharedFuse>>;
}

/// What a shared circuit's permit holds: its circuit (borrowed, or in an
/// `Arc`), who granted it, and when.
pub struct Held<F> {
    fuse: F,
    grantor: Grantor,
    /// When the store's permit was granted, on this process's monotonic
    /// clock: read only when the configuration times calls (`rate` with a
    /// `slow_call_duration`).
    started: Option<Instant>,
    /// The `metrics` feature's start of the call (see
    /// [`Telemetry::start`](crate::telemetry::Telemetry::start)), unless
    /// the local circuit granted it (its own permit counts it).
    #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
    begun: u64,
}

impl<F: Deref<Target = SharedFuse>> Held<F> {
    /// Whether the call was slow: its time from admission to now on this
    /// process's monotonic clock, at least `slow_call_duration`.
    fn slow(&self) -> bool {
        self.started.is_some_and(|started| {
            let elapsed = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            is_slow(self.fuse.config(), elapsed)
        })
    }

    fn is_probe(&self) -> bool {
        match &self.grantor {
            Grantor::Store(ticket) => ticket.is_probe(),
            Grantor::Local(permit) => permit.is_probe(),
            Grantor::Allowed => false,
        }
    }

    fn granted_by_store(&self) -> bool {
        matches!(self.grantor, Grantor::Store(_))
    }

    /// Ends the permit at once with `verdict` (a counted failure with the
    /// server's `hint`) unless the store granted it; then what the store
    /// must be told: the circuit, the ticket and whether the call was
    /// slow.
    fn settle(self, verdict: Verdict, hint: Option<Duration>) -> Option<(F, Ticket, bool)> {
        let slow = self.slow();
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        if !matches!(self.grantor, Grantor::Local(_)) {
            let local = self.fuse.local();
            local.sinks().ended(verdict, self.begun, local.time());
        }
        match self.grantor {
            Grantor::Store(ticket) => Some((self.fuse, ticket, slow)),
            Grantor::Local(permit) => {
                match hint {
                    Some(hint) => permit.failure_retry_after(hint),
                    None => permit.conclude(verdict),
                }
                None
            }
            Grantor::Allowed => None,
        }
    }
}

/// A hint counts only with a counted failure.
fn hint_of(verdict: Verdict, hint: Option<Duration>) -> Option<Duration> {
    hint.filter(|_| verdict == Verdict::Failure)
}

impl<'a> Permit<'a, Shared> {
    #[inline]
    pub(in crate::store) fn new(fuse: &'a SharedFuse, grantor: Grantor) -> Self {
        let timed = fuse.config().times_calls() && matches!(grantor, Grantor::Store(_));
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        let begun = if matches!(grantor, Grantor::Local(_)) {
            crate::clock::UNTIMED
        } else {
            let local = fuse.local();
            local.sinks().start(local.time())
        };
        Permit(Held {
            fuse,
            grantor,
            started: timed.then(Instant::now),
            #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
            begun,
        })
    }

    /// This permit, holding its circuit in `fuse` (the same circuit).
    pub(in crate::store) fn owned(self, fuse: Arc<SharedFuse>) -> OwnedPermit<Shared> {
        let Held {
            grantor,
            started,
            #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
            begun,
            ..
        } = self.0;
        OwnedPermit(Held {
            fuse,
            grantor,
            started,
            #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
            begun,
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
        self.0.is_probe()
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
        self.0.granted_by_store()
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
        self.end(verdict, None)
    }

    fn end(self, verdict: Verdict, hint: Option<Duration>) -> Conclusion<'a> {
        let hint = hint_of(verdict, hint);
        match self.0.settle(verdict, hint) {
            Some((fuse, ticket, slow)) => {
                fuse.conclude_in_store(ticket, verdict, slow, hint.map(nanos))
            }
            None => Conclusion::settled(),
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
        let hint = hint_of(verdict, hint);
        match self.0.settle(verdict, hint) {
            Some((fuse, ticket, slow)) => {
                fuse.conclude_in_place(ticket, verdict, slow, hint.map(nanos))
                    .await
            }
            None => Ok(()),
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
    /// as a local circuit's [`failure_retry_after`](crate::Permit::failure_retry_after)).
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
        self.end(Verdict::Failure, Some(hint))
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
                crate::hint::malformed(self.0.fuse.key(), header);
                self.conclude_in_place(verdict, None).await
            }
            _ => self.conclude_in_place(verdict, None).await,
        }
    }
}

/// A shared circuit's permit that holds its circuit in an `Arc`
/// ([`SharedFuse::try_acquire_owned`]): it can move to another task or live
/// in a `'static` future. Its verdicts are a shared [`Permit`]'s, each a
/// future that owns what it needs.
impl OwnedPermit<Shared> {
    /// Whether this permit is a half-open probe.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::MemoryStore;
    /// # futures::executor::block_on(async {
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// assert!(!fuse.try_acquire_owned().await.unwrap().is_probe());
    /// # });
    /// ```
    pub fn is_probe(&self) -> bool {
        self.0.is_probe()
    }

    /// Whether the store granted this permit (rather than the fallback).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::MemoryStore;
    /// # futures::executor::block_on(async {
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// assert!(fuse.try_acquire_owned().await.unwrap().from_store());
    /// # });
    /// ```
    pub fn from_store(&self) -> bool {
        self.0.granted_by_store()
    }

    /// Ends the permit with `verdict` (see [`Permit::conclude`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::Verdict;
    /// use fuse_breaker::store::MemoryStore;
    /// # futures::executor::block_on(async {
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// let permit = fuse.try_acquire_owned().await?;
    /// let verdict = std::thread::spawn(move || permit.conclude(Verdict::Failure)).join().unwrap();
    /// verdict.await?;
    /// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn conclude(self, verdict: Verdict) -> Conclusion<'static> {
        self.end(verdict, None)
    }

    fn end(self, verdict: Verdict, hint: Option<Duration>) -> Conclusion<'static> {
        let hint = hint_of(verdict, hint);
        match self.0.settle(verdict, hint) {
            Some((fuse, ticket, slow)) => Conclusion::asking(async move {
                fuse.conclude_in_place(ticket, verdict, slow, hint.map(nanos))
                    .await
            }),
            None => Conclusion::settled(),
        }
    }

    /// The call succeeded (see [`Permit::success`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::MemoryStore;
    /// # futures::executor::block_on(async {
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// fuse.try_acquire_owned().await?.success().await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn success(self) -> Conclusion<'static> {
        self.conclude(Verdict::Success)
    }

    /// The call failed with a counted failure (see [`Permit::failure`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::MemoryStore;
    /// # futures::executor::block_on(async {
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// fuse.try_acquire_owned().await?.failure().await?;
    /// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn failure(self) -> Conclusion<'static> {
        self.conclude(Verdict::Failure)
    }

    /// A counted failure with the server's hint of when to come back (see
    /// [`Permit::failure_retry_after`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::Config;
    /// use fuse_breaker::store::MemoryStore;
    /// # futures::executor::block_on(async {
    /// let config = Config::builder()
    ///     .failure_threshold(1)
    ///     .max_open_duration(Duration::from_secs(300))
    ///     .build()?;
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).config(config).build());
    /// fuse.try_acquire_owned().await?.failure_retry_after(Duration::from_secs(120)).await?;
    /// assert_eq!(fuse.snapshot().await?.open_for, Some(Duration::from_secs(120)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn failure_retry_after(self, hint: Duration) -> Conclusion<'static> {
        self.end(Verdict::Failure, Some(hint))
    }

    /// The call ended with an ignored error (see [`Permit::ignore`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::MemoryStore;
    /// # futures::executor::block_on(async {
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// fuse.try_acquire_owned().await?.ignore().await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn ignore(self) -> Conclusion<'static> {
        self.conclude(Verdict::Ignore)
    }
}

impl<F: Deref<Target = SharedFuse>> fmt::Debug for Held<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = match &self.grantor {
            Grantor::Store(_) => "store",
            Grantor::Local(_) => "local",
            Grantor::Allowed => "allowed",
        };
        f.debug_struct("Permit")
            .field("key", &self.fuse.key())
            .field("from", &from)
            .field("probe", &self.is_probe())
            .finish_non_exhaustive()
    }
}
