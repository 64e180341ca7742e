//! What a shared circuit's round trips leave in this process: the mirror
//! kept, the store's health, and what its listeners are told (the
//! transitions this process wrote, the store's outages and returns, and
//! the payloads an operator's change overwrote).

use std::future::Future;
use std::time::Duration;

use crate::config::Config;
use crate::events::StoreEvent;
use crate::model;
use crate::store::backend::changes::Changes;
use crate::store::backend::error::StoreError;
use crate::store::circuit::shared::SharedFuse;
use crate::store::circuit::step::moved;
use crate::store::model::payload::PayloadError;
use crate::store::model::stored::Stored;
use crate::transition::{Reason, Transition};

impl SharedFuse {
    /// One step on the circuit in the store (see `step`) under `config`
    /// (the settings in force when the decision arrived), then its effects
    /// here: the mirror keeps what the step left, and the listeners hear of
    /// a transition it wrote. `manual`: the reason of a manual change (a
    /// rule's transition has its own), which overwrites a payload that is
    /// not a circuit and returns what was wrong with it.
    pub(in crate::store) async fn step(
        &self,
        config: &Config,
        manual: Option<Reason>,
        mut step: impl FnMut(&mut Stored, u64) -> bool,
    ) -> Result<Option<PayloadError>, StoreError> {
        // Cached mode under `rate`: the successes batched so far go with
        // this step, recorded before its own decision (they happened
        // before it). A step the store does not answer loses them (it may
        // have written them: sending them again could count them twice).
        let sending = self
            .backing
            .cache
            .as_ref()
            .map(|cache| cache.take_batches());
        let batches = sending.as_deref().unwrap_or_default();
        let with_batch = |stored: &mut Stored, now: u64| {
            let sent = batches.iter().fold(false, |any, batch| {
                stored.record_batch(config, batch, now) | any
            });
            let changed = step(stored, now) | sent;
            stored.fit(config);
            changed
        };
        let stepped = self
            .in_store(config)
            .step(manual.is_some(), with_batch)
            .await?;
        if let Some(sending) = sending {
            sending.sent();
        }
        self.remember(&stepped.stored, stepped.now);
        if let Some((before, at)) = &stepped.replaced {
            self.report(config, before, &stepped.stored, *at, manual);
        }
        Ok(stepped.overwritten)
    }

    /// A manual change under the settings in force: always written, and
    /// always a new epoch; a payload that is not a circuit is overwritten
    /// (and returned).
    pub(in crate::store) async fn manual(
        &self,
        reason: Reason,
        change: impl Fn(&mut Stored, &Config, u64),
    ) -> Result<Option<PayloadError>, StoreError> {
        let config = self.settings();
        self.step(config, Some(reason), |stored, now| {
            change(stored, config, now);
            true
        })
        .await
    }

    /// `trip`, a round trip to the store, and what its outcome says of the
    /// store's health: an answer ends an outage (unless it was sent before
    /// the outage was seen), an unreachable store begins one.
    pub(in crate::store) async fn round_trip<T>(
        &self,
        trip: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let begun = self.backing.health.begin();
        let result = trip.await;
        match &result {
            Ok(_) => {
                if self.backing.health.answered(begun) {
                    self.tell(true, None);
                }
                let changes = self.backing.store.changes();
                let failovers = changes.map_or(0, Changes::failovers);
                if self.backing.health.failed_over(failovers) {
                    let primary = changes.and_then(Changes::primary);
                    self.backing.listeners.emit_store(&StoreEvent {
                        failover: Some(primary.as_deref().unwrap_or("an address it did not say")),
                        ..self.event(true, None)
                    });
                }
            }
            Err(error) if error.is_unreachable() => {
                let first = self.backing.health.failed(error, begun);
                // A mirror is only as good as the connection it came over.
                if let Some(cache) = &self.backing.cache {
                    cache.forget();
                }
                if first {
                    self.tell(false, Some(error));
                }
            }
            Err(_) => {}
        }
        result
    }

    /// Tells the listeners of a transition this process wrote (under
    /// `config`).
    pub(in crate::store) fn report(
        &self,
        config: &Config,
        before: &Stored,
        after: &Stored,
        at: Duration,
        manual: Option<Reason>,
    ) {
        let (from, to) = (before.state(), after.state());
        let Some(reason) = manual
            .or_else(|| model::reason(from, to))
            .filter(|_| moved(before, after))
        else {
            return;
        };
        let shown = after.snapshot(config, crate::config::nanos(at));
        self.backing.listeners.emit(&Transition {
            key: self.key(),
            from,
            to,
            reason,
            at,
            openings: shown.openings,
            open_for: shown.open_for,
        });
    }

    /// Tells the listeners the store stopped answering, or answers again.
    fn tell(&self, reachable: bool, error: Option<&StoreError>) {
        self.backing
            .listeners
            .emit_store(&self.event(reachable, error));
    }

    /// An event of this circuit's store.
    fn event<'a>(&'a self, reachable: bool, error: Option<&'a StoreError>) -> StoreEvent<'a> {
        StoreEvent {
            key: self.key(),
            store: self.backing.store.name(),
            reachable,
            fallback: self.backing.fallback,
            error: error.map(|error| error as _),
            overwritten: None,
            failover: None,
        }
    }

    /// Tells the listeners an operator's change overwrote a payload that
    /// was not a circuit.
    pub(in crate::store) fn tell_overwritten(&self, unreadable: &PayloadError) {
        self.backing.listeners.emit_store(&StoreEvent {
            overwritten: Some(unreadable),
            ..self.event(true, None)
        });
    }
}

impl<'a> StoreEvent<'a> {
    /// The error that began the outage, as the store's own type.
    ///
    /// ```
    /// use fuse_breaker::events::StoreEvent;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::{events::Listener, events::Transition};
    /// use std::sync::{Arc, Mutex};
    ///
    /// #[derive(Default)]
    /// struct Outages(Mutex<Vec<bool>>);
    /// impl Listener for Outages {
    ///     fn on_transition(&self, _: &Transition) {}
    ///     fn on_store(&self, event: &StoreEvent) {
    ///         let unreachable = event.store_error().is_some_and(|err| err.is_unreachable());
    ///         self.0.lock().unwrap().push(unreachable);
    ///     }
    /// }
    /// # futures::executor::block_on(async {
    /// let store = Arc::new(MemoryStore::new());
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(store.clone()).build();
    /// let outages = Arc::new(Outages::default());
    /// fuse.on_transition(outages.clone());
    /// store.set_unreachable(true);
    /// let _ = fuse.try_acquire().await;
    /// assert_eq!(*outages.0.lock().unwrap(), [true]);
    /// # });
    /// ```
    pub fn store_error(&self) -> Option<&'a StoreError> {
        self.error?.downcast_ref()
    }

    /// What was wrong with the payload an operator's change overwrote, as
    /// the store's own type.
    ///
    /// ```
    /// use fuse_breaker::events::StoreEvent;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::{events::Listener, events::Transition};
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    ///
    /// #[derive(Default)]
    /// struct Overwritten(Mutex<Vec<String>>);
    /// impl Listener for Overwritten {
    ///     fn on_transition(&self, _: &Transition) {}
    ///     fn on_store(&self, event: &StoreEvent) {
    ///         if let Some(unreadable) = event.unreadable() {
    ///             self.0.lock().unwrap().push(unreadable.key().to_owned());
    ///         }
    ///     }
    /// }
    /// # futures::executor::block_on(async {
    /// let store = Arc::new(MemoryStore::new());
    /// store.put("fuse:billing", b"[]", Duration::from_secs(60));
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(store).build();
    /// let heard = Arc::new(Overwritten::default());
    /// fuse.on_transition(heard.clone());
    /// fuse.force_open().await?;
    /// assert_eq!(*heard.0.lock().unwrap(), ["fuse:billing"]);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn unreadable(&self) -> Option<&'a PayloadError> {
        self.overwritten?.downcast_ref()
    }
}
