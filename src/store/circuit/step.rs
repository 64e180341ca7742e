//! One step on a circuit in a [`Store`]: read the key with the store's
//! time, decide, and compare-and-set the result against what was read,
//! again on every lost race. It knows the store, the key and this
//! process's write turn on it, nothing of the circuit around them (the
//! caller keeps the mirror and tells the listeners).

use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard};

use crate::random;
use crate::store::backend::error::StoreError;
use crate::store::model::payload::{self, Fresh, PayloadError};
use crate::store::model::stored::Stored;
use crate::store::{Loaded, Store, Swap};

/// How many compare-and-sets one step may lose to other writers before it
/// gives up (each loss returns the key's new payload, so a retry costs one
/// round trip). The writers of one process take turns (see [`Turns`]), so
/// only other processes make a step lose.
const MAX_CONFLICTS: u32 = 256;

/// The circuit under `key` in `loaded` (a fresh closed one when absent);
/// `lease`: the probes' lease in nanoseconds, for a payload milon/fuse
/// wrote; `width`: the reader's `rate` bucket width (see
/// [`payload::width`]; 0: as written).
pub(in crate::store) fn read(
    store: &dyn Store,
    key: &str,
    loaded: &Loaded,
    lease: u64,
    width: u64,
    open: u64,
) -> Result<Stored, StoreError> {
    let Some(bytes) = &loaded.payload else {
        return Ok(Stored::absent());
    };
    let fresh = Fresh {
        width,
        open,
        ..Fresh::at(payload::store_time(loaded.now), lease)
    };
    payload::read(key, bytes, store.codec(), fresh)
        .map_err(|err| StoreError::payload(store.name(), err))
}

/// Whether `after` is another circuit than `before`: a transition (a new
/// epoch) or a reset (a new generation).
pub(in crate::store) fn moved(before: &Stored, after: &Stored) -> bool {
    before.epoch != after.epoch || before.generation != after.generation
}

/// This process's writes of one key. A step that writes first takes the
/// turn, so that the writers of one process never race each other (64
/// tasks failing at once lost 27 round trips per call to each other
/// without it); a read and a decision need no turn, and nothing is held
/// across a call.
#[derive(Debug)]
pub(in crate::store) struct Turns {
    /// Held by the step that is writing: the payload the last of them
    /// wrote, and the store's time it was decided at.
    last: Mutex<Option<Loaded>>,
    /// How many writes this process's steps made (a hint, read before a
    /// step reads the key; the compare-and-set decides).
    writes: crate::sync::Tally,
}

impl Turns {
    pub(in crate::store) fn new() -> Self {
        Turns {
            last: Mutex::new(None),
            writes: crate::sync::Tally::new(),
        }
    }

    /// Deletes `key` in its turn (a reset): a writer that waited decides
    /// on the key as the store has it then, not on what was written
    /// before.
    pub(in crate::store) async fn delete(
        &self,
        store: &dyn Store,
        key: &str,
    ) -> Result<(), StoreError> {
        let mut last = self.last.lock().await;
        store.delete(key, true).await?;
        *last = None;
        self.writes.add(1);
        Ok(())
    }
}

/// A circuit's key in its store, as its steps read and write it.
#[derive(Clone, Copy, Debug)]
pub(in crate::store) struct InStore<'a> {
    pub(in crate::store) store: &'a dyn Store,
    pub(in crate::store) key: &'a str,
    /// The probes' lease, in nanoseconds.
    pub(in crate::store) lease: u64,
    /// How long a written payload lives.
    pub(in crate::store) ttl: Duration,
    /// The width of a `rate` bucket, in nanoseconds ([`payload::width`]).
    pub(in crate::store) width: u64,
    /// The open duration, in nanoseconds: how long an opening that a
    /// payload does not give the end of lasts.
    pub(in crate::store) open: u64,
    pub(in crate::store) turns: &'a Turns,
}

/// What a step did.
#[derive(Debug)]
pub(in crate::store) struct Stepped<'a> {
    /// The circuit as the step left it.
    pub(in crate::store) stored: Stored,
    /// The store's time it was read at, in nanoseconds since the epoch.
    pub(in crate::store) now: u64,
    /// When the step wrote: the circuit it replaced and the store's time
    /// its decision was made at.
    pub(in crate::store) replaced: Option<(Stored, Duration)>,
    /// A manual step's: what was wrong with a payload it overwrote.
    pub(in crate::store) overwritten: Option<PayloadError>,
    /// The write turn, while the caller tells what the step did (so this
    /// process's writes are told in the order they were made).
    _turn: Option<MutexGuard<'a, Option<Loaded>>>,
}

impl<'a> InStore<'a> {
    /// The circuit in `loaded`, read from this key.
    pub(in crate::store) fn read(&self, loaded: &Loaded) -> Result<Stored, StoreError> {
        read(
            self.store, self.key, loaded, self.lease, self.width, self.open,
        )
    }

    /// One step: read the circuit with the store's time, apply `step`
    /// (which says whether it changed anything), and write the result
    /// against what was read, again on every lost race.
    ///
    /// A step that writes takes the key's turn ([`Turns`]); one that finds
    /// a write of this process made since it began reading decides again
    /// on the payload that write left, with no round trip (a write of
    /// another process since is what the compare-and-set finds).
    ///
    /// A `manual` step (an operator's change) overwrites a payload that is
    /// not a circuit (as a fresh circuit in a new generation) and returns
    /// what was wrong with it; any other step fails on one.
    pub(in crate::store) async fn step(
        &self,
        manual: bool,
        mut step: impl FnMut(&mut Stored, u64) -> bool,
    ) -> Result<Stepped<'a>, StoreError> {
        let (store, key, turns) = (self.store, self.key, self.turns);
        let writes = turns.writes.get();
        let (mut loaded, deleted) = match store.load(key).await {
            Ok(loaded) => (loaded, None),
            // What the store cannot even hand over (a value of another
            // type, a row that is not text) is deleted first by a manual
            // change, which then writes on the absent key.
            Err(err) => match err.payload_error() {
                Some(unreadable) if manual => {
                    let unreadable = unreadable.clone();
                    store.delete(key, false).await?;
                    (store.load(key).await?, Some(unreadable))
                }
                _ => return Err(err),
            },
        };
        let mut turn: Option<MutexGuard<'a, Option<Loaded>>> = None;
        for _ in 0..MAX_CONFLICTS {
            let mut overwritten = deleted.clone();
            let mut stored = match self.read(&loaded) {
                Ok(stored) => stored,
                Err(err) => match err.payload_error() {
                    Some(unreadable) if manual => {
                        overwritten = Some(unreadable.clone());
                        Stored::reset(random::next())
                    }
                    _ => return Err(err),
                },
            };
            let before = stored.clone();
            let now = payload::store_time(loaded.now);
            if !step(&mut stored, now) {
                return Ok(Stepped {
                    stored,
                    now,
                    replaced: None,
                    overwritten,
                    _turn: turn,
                });
            }
            if stored.generation == 0 {
                // The key's first write names its generation.
                stored.generation = random::next();
            }
            if turn.is_none() {
                let last = turns.last.lock().await;
                let newer = last
                    .as_ref()
                    .filter(|last| turns.writes.get() != writes && last.payload != loaded.payload)
                    .map(|last| Loaded {
                        payload: last.payload.clone(),
                        now: last.now.max(loaded.now),
                    });
                turn = Some(last);
                if let Some(newer) = newer {
                    loaded = newer;
                    continue;
                }
            }
            let written = payload::write(&stored, self.width, store.codec().writes());
            // A transition is announced to every process's mirrors (no
            // process knows whether others cache).
            let announce = moved(&before, &stored);
            match store
                .swap(key, loaded.payload.as_deref(), &written, self.ttl, announce)
                .await?
            {
                Swap::Written => {
                    if let Some(last) = turn.as_mut() {
                        turns.writes.add(1);
                        **last = Some(Loaded {
                            payload: Some(written),
                            now: loaded.now,
                        });
                    }
                    return Ok(Stepped {
                        stored,
                        now,
                        replaced: Some((before, loaded.now)),
                        overwritten,
                        _turn: turn,
                    });
                }
                Swap::Changed(now) => loaded = now,
            }
        }
        Err(StoreError::contended(store.name(), key, MAX_CONFLICTS))
    }
}
