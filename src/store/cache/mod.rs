//! The cache of a circuit in cached mode (SPEC §8): its [`Mirror`], the
//! quiet closed permit read without a lock, and the reads of the key that
//! replace the mirror (see [`Refresh`]).

pub(crate) mod batch;
#[cfg(any(feature = "redis", feature = "sql"))]
pub(crate) mod flush;
pub(crate) mod mirror;
pub(crate) mod refresh;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::nanos;
use crate::model::Grant;
use crate::store::cache::batch::{Pending, Sending};
use crate::store::cache::mirror::Mirror;
use crate::store::cache::refresh::{Asked, Reader, Refresh};
use crate::store::circuit::live::Live;
use crate::store::model::payload;
use crate::store::model::stored::{Stored, Ticket};
use crate::sync::Words4;

/// One cached circuit's view of its key.
pub(crate) struct Cache {
    key: String,
    /// The circuit's settings in force (SPEC §12).
    live: Arc<Live>,
    staleness: Duration,
    /// The newest reading of the key (see `mirror`).
    mirror: Mutex<Option<Mirror>>,
    /// The common case read without a lock: while the mirror is a closed
    /// circuit with no failures, until when (on `clock`; 0: not quiet) its
    /// closed permit may be granted, and the permit (generation, epoch,
    /// grant). Written under the mirror's lock.
    quiet: Words4,
    /// The coarse clock the quiet deadline is kept on (one load).
    clock: crate::clock::Time,
    /// Under `rate`: the closed successes not sent yet.
    pending: Pending,
    /// The one read of the key in flight.
    refresh: Refresh,
}

impl Cache {
    /// The cache of `key`; `reader`: where the reads that announcements
    /// ask for are made (`None`: an announcement makes the mirror
    /// forgotten).
    pub(crate) fn new(
        key: &str,
        live: Arc<Live>,
        staleness: Duration,
        reader: Option<Reader>,
    ) -> Self {
        Cache {
            key: key.to_owned(),
            live,
            staleness,
            mirror: Mutex::default(),
            quiet: Words4::default(),
            clock: crate::clock::Time::new(None, true),
            pending: Pending::default(),
            refresh: Refresh::new(reader),
        }
    }

    /// The reads of the key.
    pub(crate) fn refresh(&self) -> &Refresh {
        &self.refresh
    }

    /// Whether the mirror is there and younger than the staleness bound.
    pub(crate) fn fresh(&self) -> bool {
        self.decide(|mirror, staleness| mirror.fresh(staleness).then_some(()))
            .is_some()
    }

    /// Counts a closed success of `ticket` in the batch (under `rate`).
    pub(crate) fn batch(&self, ticket: Ticket) {
        let width = payload::width(self.live.get());
        self.pending.add(ticket, self.clock.now(), width);
    }

    /// The batches to send with a step.
    pub(crate) fn take_batches(&self) -> Sending<'_> {
        self.pending.take(self.clock.now())
    }

    /// How many batched successes were lost with a step the store did
    /// not answer.
    pub(crate) fn lost(&self) -> u64 {
        self.pending.lost()
    }

    /// How many closed successes wait in the batch.
    pub(crate) fn batched(&self) -> u64 {
        self.pending.calls()
    }

    pub(crate) fn staleness(&self) -> Duration {
        self.staleness
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Mirror>> {
        self.mirror
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the mirror decides by itself (`None`: ask the store).
    pub(crate) fn decide<T>(
        &self,
        decide: impl FnOnce(&Mirror, Duration) -> Option<T>,
    ) -> Option<T> {
        decide(self.lock().as_ref()?, self.staleness)
    }

    /// Keeps `stored` (read or written at the store's `now`, in
    /// nanoseconds) as the mirror, unless a newer reading is there already.
    pub(crate) fn remember(&self, stored: &Stored, now: u64) {
        let reading = Mirror::new(stored.clone(), now);
        let mut mirror = self.lock();
        if mirror.as_ref().is_none_or(|old| old.older_than(&reading)) {
            // Under the mirror's lock: one writer at a time.
            let quiet = reading
                .quiet_ticket(self.live.get())
                .map_or([0; 4], |ticket| {
                    let until = self
                        .clock
                        .now()
                        .saturating_add(nanos(self.staleness))
                        .max(1);
                    [
                        until,
                        ticket.generation,
                        ticket.epoch,
                        ticket.grant.with_tag(0),
                    ]
                });
            self.quiet.write(quiet);
            *mirror = Some(reading);
        }
    }

    /// The closed permit of a quiet mirror still fresh: a reading of the
    /// quiet view and one of the coarse clock.
    #[inline]
    pub(crate) fn quiet_ticket(&self) -> Option<Ticket> {
        let [until, generation, epoch, grant] = self.quiet.read()?;
        (self.clock.now() < until).then(|| Ticket {
            generation,
            epoch,
            grant: Grant::and_tag(grant).0,
            lease: None,
            opened_s: 0,
        })
    }

    /// The circuit's settings were replaced (SPEC §12): the quiet permit
    /// is kept only while the mirror still grants it under them. (Under
    /// the mirror's lock, after the new settings are in force: a reading
    /// kept from now on is judged by them.)
    pub(crate) fn reconfigured(&self) {
        let mirror = self.lock();
        let quiet = mirror
            .as_ref()
            .is_some_and(|reading| reading.quiet_ticket(self.live.get()).is_some());
        if !quiet {
            self.quiet.write([0; 4]);
        }
    }

    /// Forgets the mirror (the store did not answer, or its channel of
    /// announcements dropped).
    pub(crate) fn forget(&self) {
        let mut mirror = self.lock();
        self.quiet.write([0; 4]);
        *mirror = None;
    }

    /// Another process (or this one) announced a change of the key: it is
    /// read again by a task of its own, unless a read not begun yet is
    /// asked for already (it covers this one). What the store holds then
    /// becomes the mirror; what it cannot read, or an unreachable store,
    /// makes the mirror forgotten (the next call reads the key and meets
    /// the error). Without a runtime to read in, the mirror is forgotten.
    pub(crate) fn announced(self: &Arc<Self>) {
        match self.refresh.ask() {
            Asked::Forget => self.forget(),
            Asked::Covered => {}
            Asked::Start(runtime) => {
                let cache = Arc::downgrade(self);
                runtime.spawn(async move {
                    let Some(live) = cache.upgrade() else {
                        return;
                    };
                    match live.refresh.read_announced(&live.key).await {
                        Some(Ok((stored, now))) => live.remember(&stored, now),
                        Some(Err(_)) => live.forget(),
                        None => {}
                    }
                });
            }
        }
    }
}

impl crate::store::backend::changes::Watcher for Cache {
    fn announced(self: Arc<Self>) {
        Cache::announced(&self);
    }

    fn forget(&self) {
        Cache::forget(self);
    }
}
