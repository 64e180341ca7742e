//! Admission to a shared circuit: from the quiet mirror inline, from the
//! mirror, from the store, or, while the store does not answer, from the
//! fallback.

use std::sync::Arc;

use crate::config::nanos;
use crate::error::OpenError;
use crate::fallback::Fallback;
use crate::grade;
use crate::permit::OwnedPermit;
use crate::random;
use crate::store::backend::error::{Refusal, StoreError};
use crate::store::circuit::future::Admission;
use crate::store::circuit::permit::{Grantor, SharedPermit};
use crate::store::circuit::shared::{Shared, SharedFuse};
use crate::store::model::stored::{At, Entry, Ticket};

impl SharedFuse {
    /// A permit for one call, or the reason there is none. One round trip
    /// to the store for a closed circuit; two when the admission changes
    /// the circuit (the move to half-open, a probe slot). While the store
    /// does not answer, the [`Fallback`] decides.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// let permit = fuse.try_acquire().await?;
    /// permit.success().await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Admission<'_> {
        match self.decide() {
            Decided::Granted(ticket) => Admission::granted(self, ticket),
            Decided::Ready(decided) => Admission::ready(decided),
            Decided::Ask => Admission::asking(self.acquire_asking()),
        }
    }

    /// Like [`try_acquire`](Self::try_acquire), for a permit that holds
    /// its circuit in an `Arc` ([`OwnedPermit<Shared>`](crate::OwnedPermit)):
    /// it can move to another task or live in a `'static` future.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::MemoryStore;
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// let permit = fuse.try_acquire_owned().await?;
    /// let verdict = std::thread::spawn(move || permit.success()).join().unwrap();
    /// verdict.await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedPermit<Shared>, Refusal> {
        let permit = self.acquire_in_place().await?;
        Ok(permit.owned(Arc::clone(self)))
    }

    /// [`try_acquire`](Self::try_acquire) awaited where the caller's
    /// future is: a round trip, when one is needed, is part of that future
    /// rather than a box of its own.
    pub(crate) async fn acquire_in_place(&self) -> Result<SharedPermit<'_>, Refusal> {
        match self.decide() {
            Decided::Granted(ticket) => Ok(SharedPermit::new(self, Grantor::Store(ticket))),
            Decided::Ready(decided) => decided,
            Decided::Ask => self.acquire_asking().await,
        }
    }

    /// What this process decides without a round trip, or that it asks.
    #[inline]
    fn decide(&self) -> Decided<'_> {
        // The common case inline: a quiet mirror's closed permit.
        if !self.backing.health.maybe_down()
            && let Some(ticket) = self.quiet_ticket()
        {
            return Decided::Granted(ticket);
        }
        self.decide_slow()
    }

    /// Admission when the quiet mirror does not decide it.
    #[inline(never)]
    fn decide_slow(&self) -> Decided<'_> {
        if let Some(error) = self.backing.health.still_down() {
            return Decided::Ready(self.fall_back(error));
        }
        if let Some(ticket) = self.quiet_ticket() {
            return Decided::Granted(ticket);
        }
        if let Some(entry) = self.by_mirror(|mirror, staleness| {
            mirror.admit(self.settings(), staleness, self.fleet_share())
        }) {
            return Decided::Ready(self.entry(entry));
        }
        Decided::Ask
    }

    /// Admission that asks the store. In cached mode, a mirror too old to
    /// decide is read again first, once for every call that finds it so
    /// (the calls that find a read under way wait for it), and decides if
    /// it can.
    async fn acquire_asking(&self) -> Result<SharedPermit<'_>, Refusal> {
        if let Some(cache) = &self.backing.cache
            && !cache.fresh()
        {
            let read = cache
                .refresh()
                .read_if_stale(|| cache.fresh(), || self.read_mirror())
                .await;
            match read {
                Ok(()) => {}
                Err(error) if error.is_unreachable() => return self.fall_back(error),
                Err(error) => return Err(Refusal::Store(error)),
            }
            if let Some(ticket) = self.quiet_ticket() {
                return self.entry(Entry::Granted(ticket));
            }
            if let Some(entry) = self.by_mirror(|mirror, staleness| {
                mirror.admit(self.settings(), staleness, self.fleet_share())
            }) {
                return self.entry(entry);
            }
        }
        match self.round_trip(self.acquire_from_store()).await {
            Ok(entry) => self.entry(entry),
            Err(error) if error.is_unreachable() => self.fall_back(error),
            Err(error) => Err(Refusal::Store(error)),
        }
    }

    /// Reads the key into the mirror: a step that decides nothing (under
    /// `rate` it sends the batched successes), unless the store is still
    /// thought down.
    async fn read_mirror(&self) -> Result<(), StoreError> {
        if let Some(error) = self.backing.health.still_down() {
            return Err(error);
        }
        self.round_trip(self.step(self.settings(), None, |_, _| false))
            .await?;
        Ok(())
    }

    async fn acquire_from_store(&self) -> Result<Entry, StoreError> {
        let config = self.settings();
        let lease = nanos(self.backing.live.lease(config));
        let mut entry = None;
        self.step(config, None, |stored, now| {
            let at = At {
                now,
                lease,
                lease_id: random::next(),
                generation: random::next(),
                draw: grade::draw(),
                throttle: self.fleet_share(),
            };
            let (granted, changed) = stored.acquire(config, at);
            entry = Some(granted);
            changed
        })
        .await?;
        // `step` runs the closure at least once before it returns `Ok`.
        Ok(entry.unwrap_or(Entry::Rejected { retry_after: 0 }))
    }

    /// The permit or the rejection the store's circuit (or its mirror)
    /// decided.
    fn entry(&self, entry: Entry) -> Result<SharedPermit<'_>, Refusal> {
        match entry {
            Entry::Granted(ticket) => Ok(SharedPermit::new(self, Grantor::Store(ticket))),
            Entry::Rejected { retry_after } => {
                #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
                self.local().sinks().refused(retry_after);
                if crate::error::shed_by(retry_after) == Some(grade::Grading::Throttle)
                    && let Some(throttle) = self.throttle()
                {
                    // A throttled call is a request (SPEC §11).
                    throttle.refused();
                }
                Err(Refusal::Open(self.rejection(retry_after)))
            }
        }
    }

    /// The share the fleet's throttle sheds as this process last read it,
    /// if it sheds anything.
    fn fleet_share(&self) -> Option<crate::store::model::asked::Share> {
        self.throttle()?.share()
    }

    /// The error of a call the store's circuit rejected, to be tried again
    /// after `retry_after` nanoseconds: the one place the store makes one.
    fn rejection(&self, retry_after: u64) -> OpenError {
        OpenError::new(self.backing.names.label(), retry_after)
    }

    /// Admission while the store does not answer.
    fn fall_back(&self, error: StoreError) -> Result<SharedPermit<'_>, Refusal> {
        match self.backing.fallback {
            Fallback::Local => match self.backing.local.try_acquire_owned() {
                Ok(permit) => Ok(SharedPermit::new(self, Grantor::Local(permit))),
                Err(open) => Err(Refusal::Open(open)),
            },
            Fallback::Allow => Ok(SharedPermit::new(self, Grantor::Allowed)),
            Fallback::Reject => Err(Refusal::Store(error)),
        }
    }
}

/// What [`SharedFuse::decide`] found.
enum Decided<'a> {
    /// A closed permit of the store's circuit, granted by the quiet mirror.
    Granted(Ticket),
    /// Decided here: by the mirror or, while the store is down, the
    /// fallback.
    Ready(Result<SharedPermit<'a>, Refusal>),
    /// The store is asked.
    Ask,
}
