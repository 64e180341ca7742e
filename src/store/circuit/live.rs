//! A shared circuit's settings in force (SPEC §12): this process's own,
//! read by every decision with one load, replaced whole by a
//! reconfiguration, and what they give a round trip (the probes' lease,
//! the payload's life, a `rate` bucket's width, the open duration).

use std::sync::atomic::AtomicU32;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::config::{Config, intern_numbered, nanos, numbered};
use crate::store::model::payload;
use crate::sync::{CONFIG_LOAD, CONFIG_STORE};

/// The settings a shared circuit and its parts (its mirror, its batches'
/// task, its throttle's task) decide by: the number of an interned
/// configuration ([`numbered`]), shared by them all.
#[derive(Debug)]
pub(in crate::store) struct Live {
    /// The configuration's number.
    number: AtomicU32,
    /// The probes' lease the builder was given (`None`: each
    /// configuration's `probe_timeout`).
    lease: Option<Duration>,
    /// Taken by a reconfiguration (never by a call), so that two of one
    /// circuit take turns.
    reconfiguring: Mutex<()>,
}

impl Live {
    /// The settings `config`, with the probes' lease `lease` if the
    /// builder was given one.
    pub(in crate::store) fn new(config: Config, lease: Option<Duration>) -> Self {
        let (_, number) = intern_numbered(config);
        Live {
            number: AtomicU32::new(number),
            lease,
            reconfiguring: Mutex::new(()),
        }
    }

    /// The settings in force now.
    #[inline]
    pub(in crate::store) fn get(&self) -> &'static Config {
        // CONFIG_LOAD: a decision that reads the old number decides as the
        // old settings would, before the change; the configuration itself
        // is published by its table.
        numbered(self.number.load(CONFIG_LOAD))
    }

    /// Puts the configuration numbered `number` in force (under
    /// [`lock`](Self::lock)).
    pub(in crate::store) fn set(&self, number: u32) {
        // CONFIG_STORE: pairs with the load of `get`.
        self.number.store(number, CONFIG_STORE);
    }

    /// One reconfiguration at a time.
    pub(in crate::store) fn lock(&self) -> MutexGuard<'_, ()> {
        self.reconfiguring
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How long a probe holds its slot without a verdict under `config`:
    /// the builder's lease, or the configuration's `probe_timeout`.
    #[inline]
    pub(in crate::store) fn lease(&self, config: &Config) -> Duration {
        self.lease.unwrap_or_else(|| config.probe_timeout())
    }
}

/// What a round trip on the key needs of `config`, in nanoseconds but the
/// payload's life: the probes' lease, a `rate` bucket's width and the open
/// duration (see [`step::read`](super::step::read)), and how long a written
/// payload lives (milon/fuse's TTL).
#[derive(Clone, Copy, Debug)]
pub(in crate::store) struct Reading {
    pub(in crate::store) lease: u64,
    pub(in crate::store) width: u64,
    pub(in crate::store) open: u64,
    pub(in crate::store) ttl: Duration,
}

impl Reading {
    /// What `config` gives, with the probes' lease of `live`.
    #[inline]
    pub(in crate::store) fn of(live: &Live, config: &Config) -> Self {
        Reading {
            lease: nanos(live.lease(config)),
            width: payload::width(config),
            open: config.open_nanos(),
            ttl: Duration::from_nanos(config.ttl_nanos()),
        }
    }
}
