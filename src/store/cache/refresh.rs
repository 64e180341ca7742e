//! The reads of a cached circuit's key (SPEC §8): one at a time in this
//! process, however many announcements ask for one and however many calls
//! find the mirror old at once.
//!
//! An announcement is a hint: it asks for a read of the key, made by a task
//! of its own, and the mirror takes what the store holds then. Nothing in
//! the announcement's text is taken, so whoever can publish on the channel
//! can cost this process a read (one in flight and one waiting, per key,
//! whatever the rate of announcements), never a refused call. A call that
//! finds the mirror older than the staleness waits for the read under way,
//! or makes the one read the others wait for.

use std::future::Future;
use std::sync::Arc;

use crate::store::Store;
use crate::store::backend::error::StoreError;
use crate::store::circuit::live::{Live, Reading};
use crate::store::circuit::step;
use crate::store::model::payload;
use crate::store::model::stored::Stored;
use crate::sync::Request;

/// Where the reads that announcements ask for are made: the circuit's
/// store, and the tokio runtime it was built in.
pub(crate) struct Reader {
    store: Arc<dyn Store>,
    runtime: tokio::runtime::Handle,
    /// The circuit's settings in force, whose probes' lease, `rate` bucket
    /// width and open duration read a payload (see [`step::read`]).
    live: Arc<Live>,
}

impl Reader {
    /// A reader over `store` in the current tokio runtime (`None` outside
    /// one: an announcement then only makes the mirror forgotten, and the
    /// next call reads the key).
    pub(crate) fn here(store: Arc<dyn Store>, live: Arc<Live>) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(Reader {
            store,
            runtime,
            live,
        })
    }

    /// The circuit under `key` as the store holds it now, with the store's
    /// time of the reading in nanoseconds.
    async fn read(&self, key: &str) -> Result<(Stored, u64), StoreError> {
        let loaded = self.store.load(key).await?;
        let reading = Reading::of(&self.live, self.live.get());
        let stored = step::read(
            &*self.store,
            key,
            &loaded,
            reading.lease,
            reading.width,
            reading.open,
        )?;
        Ok((stored, payload::store_time(loaded.now)))
    }
}

/// The one read of a cached circuit's key in flight (see the module docs).
#[derive(Default)]
pub(crate) struct Refresh {
    /// Held by the read under way.
    gate: tokio::sync::Mutex<()>,
    /// An announcement asked for a read not begun yet.
    asked: Request,
    reader: Option<Reader>,
}

impl Refresh {
    pub(crate) fn new(reader: Option<Reader>) -> Self {
        Refresh {
            reader,
            ..Refresh::default()
        }
    }

    /// An announcement on the key asks for a read of it: what to do.
    pub(crate) fn ask(&self) -> Asked<'_> {
        let Some(reader) = &self.reader else {
            return Asked::Forget;
        };
        if self.asked.ask() {
            return Asked::Covered;
        }
        Asked::Start(&reader.runtime)
    }

    /// The read an announcement asked for, once the read under way (if
    /// any) is done: the circuit under `key` as the store holds it then.
    pub(crate) async fn read_announced(
        &self,
        key: &str,
    ) -> Option<Result<(Stored, u64), StoreError>> {
        let reader = self.reader.as_ref()?;
        let _gate = self.gate.lock().await;
        self.asked.take();
        Some(reader.read(key).await)
    }

    /// Runs `read` (which keeps what it read as the mirror) unless the
    /// read under way, waited for, leaves the mirror fresh (`fresh` says):
    /// one caller at a time.
    pub(crate) async fn read_if_stale<F>(
        &self,
        fresh: impl Fn() -> bool,
        read: impl FnOnce() -> F,
    ) -> Result<(), StoreError>
    where
        F: Future<Output = Result<(), StoreError>>,
    {
        let _gate = self.gate.lock().await;
        if fresh() {
            return Ok(());
        }
        read().await
    }
}

/// What an announcement asks of a cached circuit (see [`Refresh::ask`]).
pub(crate) enum Asked<'a> {
    /// No runtime to read in: forget the mirror (the next call reads).
    Forget,
    /// A read asked for and not begun yet covers this announcement.
    Covered,
    /// Start a task on this runtime that makes the read
    /// ([`Refresh::read_announced`]).
    Start(&'a tokio::runtime::Handle),
}
