//! What an operator's view reads of a shared circuit: its snapshot, and
//! what its payload holds besides (the failures that opened it, whether
//! the opening's end is known or assumed), for any key, without a
//! [`SharedFuse`](crate::store::SharedFuse).

use std::time::Duration;

use crate::snapshot::{Snapshot, State};
use crate::store::backend::error::StoreError;
use crate::store::model::asked::{self, Tag};
use crate::store::model::stored::Stored;
use crate::store::{Store, circuit::step, model::payload};

/// What a shared circuit's payload holds besides its [`Snapshot`], for an
/// operator's view (`fuse status`, the admin API, the dashboard).
///
/// ```
/// use fuse_breaker::store::{MemoryStore, SharedFuse, inspect};
/// use fuse_breaker::Config;
/// # futures::executor::block_on(async {
/// let store = std::sync::Arc::new(MemoryStore::new());
/// let config = Config::builder().failure_threshold(1).build()?;
/// let fuse = fuse_breaker::Fuse::builder("billing").store(store.clone()).config(config.clone()).build();
/// fuse.try_acquire().await?.failure().await?;
/// let (_, held) = inspect(&*store, "fuse:billing", &config).await?.unwrap();
/// assert_eq!(held.opening_failures.len(), 1);
/// assert!(!held.open_for_assumed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Held {
    /// While open: the failures that opened it, since the Unix epoch on
    /// the store's clock, as the payload holds them (milon/fuse keeps its
    /// opening's failures, and so does this crate: a `count` window's, a
    /// failed probe's; none for a manual opening); empty otherwise.
    pub opening_failures: Vec<Duration>,
    /// While open: whether the opening's end (the snapshot's `open_for`,
    /// so when the next call probes) is assumed from the reader's
    /// `open_duration` because the payload does not carry it (a circuit
    /// milon/fuse opened); `false` when the payload says when it ends.
    pub open_for_assumed: bool,
}

impl Held {
    /// What `stored` holds.
    pub(crate) fn of(stored: &Stored) -> Self {
        if stored.state() != State::Open {
            return Held::default();
        }
        Held {
            opening_failures: stored
                .opened_by
                .iter()
                .map(|&at| Duration::from_nanos(at))
                .collect(),
            open_for_assumed: stored.foreign,
        }
    }
}

/// The snapshot of the circuit under `key` in `store` under `config`
/// (times since the Unix epoch, on the store's clock), and what its
/// payload holds besides ([`Held`]); `None` when the key is absent or
/// expired.
///
/// ```
/// use fuse_breaker::store::{MemoryStore, inspect};
/// use fuse_breaker::{Config, State};
/// use std::time::Duration;
/// # futures::executor::block_on(async {
/// let store = MemoryStore::new();
/// // An opening milon/fuse wrote: its end is not in the payload.
/// let now = fuse_breaker::store::Store::load(&store, "fuse:clock").await?.now.as_secs();
/// let milon = format!(
///     r#"{{"state":"open","opened_at":{now},"failures":[{now},{now}],"half_open_successes":0,"half_open_inflight":0}}"#
/// );
/// store.put("fuse:billing", milon.as_bytes(), Duration::from_secs(60));
/// let (snapshot, held) = inspect(&store, "fuse:billing", &Config::default()).await?.unwrap();
/// assert_eq!(snapshot.state, State::Open);
/// assert_eq!(held.opening_failures.len(), 2);
/// assert!(held.open_for_assumed, "30 s, this reader's open_duration");
/// # Ok::<(), fuse_breaker::store::StoreError>(())
/// # }).unwrap();
/// ```
pub async fn inspect(
    store: &dyn Store,
    key: &str,
    config: &crate::Config,
) -> Result<Option<(Snapshot, Held)>, StoreError> {
    let loaded = store.load(key).await?;
    if loaded.payload.is_none() {
        return Ok(None);
    }
    let stored = step::read(
        store,
        key,
        &loaded,
        0,
        payload::width(config),
        config.open_nanos(),
    )?;
    let mut snapshot = stored.snapshot(config, payload::store_time(loaded.now));
    throttled(store, key, config, &stored, &mut snapshot).await?;
    Ok(Some((snapshot, Held::of(&stored))))
}

/// `snapshot` (of `stored`, the circuit under `key` in `store`) with the
/// fleet's throttle window of its closed epoch, read from the store,
/// where `config` throttles (SPEC §11).
pub(in crate::store) async fn throttled(
    store: &dyn Store,
    key: &str,
    config: &crate::Config,
    stored: &Stored,
    snapshot: &mut Snapshot,
) -> Result<(), StoreError> {
    if config.throttle_k().is_none() || snapshot.state != State::Closed {
        return Ok(());
    }
    let loaded = store.load(&asked::key(key)).await?;
    let tag = Tag {
        generation: stored.generation,
        epoch: stored.epoch,
    };
    if let asked::Held::Ours(counts) =
        asked::held(config, loaded.payload.as_deref(), tag, loaded.now)
    {
        let now = payload::store_time(loaded.now);
        stored.show_throttle(config, now, counts, snapshot);
    }
    Ok(())
}

/// The snapshot of the circuit under `key` in `store` under `config`
/// (times since the Unix epoch, on the store's clock), or `None` when the
/// key is absent or expired: what an operator's status reads, for any key,
/// without a [`SharedFuse`](crate::store::SharedFuse) ([`inspect`] adds what the
/// payload holds besides).
///
/// ```
/// use fuse_breaker::store::{MemoryStore, SharedFuse, snapshot_of};
/// use fuse_breaker::{Config, State};
/// # futures::executor::block_on(async {
/// let store = std::sync::Arc::new(MemoryStore::new());
/// assert_eq!(snapshot_of(&*store, "fuse:billing", &Config::default()).await?, None);
/// fuse_breaker::Fuse::builder("billing").store(store.clone()).build().force_open().await?;
/// let snapshot = snapshot_of(&*store, "fuse:billing", &Config::default()).await?.unwrap();
/// assert_eq!(snapshot.state, State::Open);
/// # Ok::<(), fuse_breaker::store::StoreError>(())
/// # }).unwrap();
/// ```
pub async fn snapshot_of(
    store: &dyn Store,
    key: &str,
    config: &crate::Config,
) -> Result<Option<Snapshot>, StoreError> {
    Ok(inspect(store, key, config)
        .await?
        .map(|(snapshot, _)| snapshot))
}
