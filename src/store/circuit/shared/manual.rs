//! An operator's changes of a shared circuit (SPEC §3): `force_open`,
//! `force_closed` and `reset`, which work whatever the key holds.

use crate::snapshot::State;
use crate::store::backend::error::StoreError;
use crate::store::circuit::shared::SharedFuse;
use crate::store::model::payload::PayloadError;
use crate::transition::{Reason, Transition};

/// What an operator's change of a shared circuit found under its key: a
/// change always takes effect, and one that replaced (or, for a reset,
/// deleted) a payload that was not a circuit says what was wrong with it,
/// so that the operator learns the key was broken.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
/// use fuse_breaker::State;
///
/// # futures::executor::block_on(async {
/// let store = Arc::new(MemoryStore::new());
/// store.put("fuse:billing", b"[]", Duration::from_secs(60));
/// let fuse = fuse_breaker::Fuse::builder("billing").store(store).build();
/// assert!(fuse.state().await.is_err(), "not a circuit");
/// let change = fuse.force_open().await?;
/// assert_eq!(change.overwritten().unwrap().key(), "fuse:billing");
/// assert_eq!(fuse.state().await?, State::Open);
/// assert!(fuse.force_closed().await?.overwritten().is_none());
/// # Ok::<(), fuse_breaker::store::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManualChange {
    overwritten: Option<PayloadError>,
}

impl ManualChange {
    /// What was wrong with the payload the change replaced or deleted
    /// (`None`: the key held a circuit, or nothing).
    ///
    /// ```
    /// let change = fuse_breaker::store::ManualChange::default();
    /// assert!(change.overwritten().is_none());
    /// ```
    pub fn overwritten(&self) -> Option<&PayloadError> {
        self.overwritten.as_ref()
    }
}

impl SharedFuse {
    /// Opens the circuit now, for every process (a new epoch: permits
    /// granted before are stale). A payload under the key that is not a
    /// circuit is overwritten by an open one in a new generation, and the
    /// listeners hear of it ([`StoreEvent::unreadable`](crate::events::StoreEvent::unreadable)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// let change = fuse.force_open().await?;
    /// assert!(change.overwritten().is_none());
    /// assert!(fuse.try_acquire().await.is_err());
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn force_open(&self) -> Result<ManualChange, StoreError> {
        let overwritten = self
            .manual(Reason::Forced, |stored, config, now| {
                stored.force_open(config, now, crate::random::next());
            })
            .await?;
        Ok(self.changed(overwritten))
    }

    /// Closes the circuit with no failures, for every process; a payload
    /// that is not a circuit is overwritten, as by
    /// [`force_open`](Self::force_open).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// fuse.force_open().await?;
    /// fuse.force_closed().await?;
    /// assert_eq!(fuse.state().await?, fuse_breaker::State::Closed);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn force_closed(&self) -> Result<ManualChange, StoreError> {
        let overwritten = self
            .manual(Reason::Forced, |stored, config, _| {
                stored.force_closed(config);
            })
            .await?;
        Ok(self.changed(overwritten))
    }

    /// Forgets the circuit: the key is deleted whatever it holds (a value
    /// that is not a circuit, of any type, included), so the next read
    /// finds a fresh closed circuit, which its first write gives a new
    /// generation: every permit granted while the key held a circuit is
    /// stale. (A closed permit granted while the key was absent names no
    /// generation, and still counts after a reset of that absent key.)
    /// Two round trips: the key is read first, to report the transition
    /// (and what was wrong with a payload that was not a circuit).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// fuse.force_open().await?;
    /// let permit = fuse.try_acquire().await;
    /// assert!(permit.is_err());
    /// fuse.force_closed().await?;
    /// let permit = fuse.try_acquire().await.unwrap();
    /// fuse.reset().await?;
    /// permit.failure().await?;
    /// assert!(fuse.snapshot().await?.failures.is_empty(), "stale");
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn reset(&self) -> Result<ManualChange, StoreError> {
        let read = match self.store().load(self.key()).await {
            Ok(loaded) => self
                .read(&loaded)
                .map(|stored| (stored.state(), loaded.now)),
            Err(err) => Err(err),
        };
        let (from, at, overwritten) = match read {
            Ok((state, at)) => (state, Some(at), None),
            Err(err) => match err.payload_error() {
                Some(unreadable) => (State::Closed, None, Some(unreadable.clone())),
                None => return Err(err),
            },
        };
        // The process's writers take turns: one that waited decides on the
        // key as the store has it now, not on what was written before the
        // reset.
        self.backing
            .turns
            .delete(&**self.store(), self.key())
            .await?;
        if let Some(cache) = &self.backing.cache {
            cache.forget();
        }
        self.backing.listeners.emit(&Transition {
            key: self.key(),
            from,
            to: State::Closed,
            reason: Reason::Reset,
            // The store's time when it was read; this machine's when the
            // key could not even be read.
            at: at.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
            }),
            openings: 0,
            open_for: None,
        });
        Ok(self.changed(overwritten))
    }

    /// The result of a change that may have overwritten `overwritten`,
    /// which the listeners hear of.
    fn changed(&self, overwritten: Option<PayloadError>) -> ManualChange {
        if let Some(unreadable) = &overwritten {
            self.tell_overwritten(unreadable);
        }
        ManualChange { overwritten }
    }
}
