//! A shared circuit's adaptive throttle (SPEC §11): this process's
//! requests and accepts, sent to the fleet's window (see
//! [`asked`](crate::store::model::asked)), and the share the fleet's window
//! sheds, read back, so that every process sheds the same share.
//!
//! Calls count here with no round trip. A task sends what they counted
//! and reads the fleet's window back once per [`interval`] (half a
//! bucket of the policy window, at most a second), so the share in use
//! lags the fleet's window by at most a bucket: it is the task's only
//! work, two round trips (an increment and a read) per interval while
//! calls come. It runs on the tokio runtime the circuit was built in and
//! ends once the circuit is dropped; a circuit built outside a runtime
//! has no task, and its throttle sheds nothing. A store that does not
//! answer sheds nothing either: what this process counted meanwhile is
//! dropped, and the share it used is forgotten.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use crate::config::Config;
use crate::grade::Shed;
use crate::grade::throttle::Asked;
use crate::store::backend::error::StoreError;
use crate::store::circuit::live::Live;
use crate::store::model::asked::{self, Held, Share, Tag};
use crate::store::{Incremented, Store, Swap};

/// How often the task sends and reads under `config`: half a bucket of
/// the policy window, from 5 ms to one second.
pub(in crate::store) fn interval(config: &Config) -> Duration {
    let width = crate::store::model::payload::width(config);
    Duration::from_nanos(width / 2).clamp(Duration::from_millis(5), Duration::from_secs(1))
}

/// How long a record written under `config` lives: the circuit's
/// payload's (milon/fuse's TTL).
fn ttl(config: &Config) -> Duration {
    Duration::from_nanos(config.ttl_nanos())
}

/// How many compare-and-sets a sending tries while the record changes
/// under it, before it gives up on the interval's counts.
const MAX_CONFLICTS: u32 = 16;

/// A shared circuit's throttle in this process (see the module's
/// documentation).
#[derive(Debug, Default)]
pub(in crate::store) struct FleetThrottle {
    /// Whether the share in use sheds anything: what a quiet admission
    /// reads.
    shedding: AtomicBool,
    local: Mutex<Local>,
}

#[derive(Debug, Default)]
struct Local {
    /// The counts not sent yet, of one closed epoch.
    unsent: Option<(Tag, Asked)>,
    /// The share in use and the fleet's window it was computed from.
    in_use: Option<(Share, Asked)>,
}

impl FleetThrottle {
    fn lock(&self) -> MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the fleet's throttle sheds calls now (a closed admission
    /// then draws).
    #[inline]
    pub(in crate::store) fn shedding(&self) -> bool {
        self.shedding.load(Ordering::Relaxed)
    }

    /// The share in use, if it sheds anything.
    pub(in crate::store) fn share(&self) -> Option<Share> {
        if !self.shedding() {
            return None;
        }
        self.lock()
            .in_use
            .map(|(share, _)| share)
            .filter(|share| share.shed > Shed::NONE)
    }

    /// Counts a request of `tag`'s closed epoch, `accepted` (an admitted
    /// call's success) or not (a failure, or a call the throttle shed).
    /// Counts of an epoch before the one counting are dropped. A permit
    /// granted while the key was absent (of no generation yet) belongs to
    /// the key's first epoch, whatever generation names it.
    pub(in crate::store) fn ask(&self, tag: Tag, accepted: bool) {
        let mut local = self.lock();
        let counts = match &mut local.unsent {
            Some((held, counts)) if *held == tag => counts,
            Some((held, counts)) if held.epoch == tag.epoch && tag.generation == 0 => counts,
            Some((held, counts)) if held.epoch == tag.epoch && held.generation == 0 => {
                *held = tag;
                counts
            }
            Some((held, _)) if held.generation == tag.generation && held.epoch > tag.epoch => {
                return;
            }
            unsent => &mut unsent.insert((tag, Asked::default())).1,
        };
        counts.requests += 1;
        counts.accepts += u64::from(accepted);
    }

    /// Counts a request the throttle shed, of the epoch of the share in
    /// use.
    pub(in crate::store) fn refused(&self) {
        let tag = self.lock().in_use.map(|(share, _)| share.tag);
        if let Some(tag) = tag {
            self.ask(tag, false);
        }
    }

    /// What to send: the counts not sent yet, or none for the epoch of
    /// the share in use (to read its window as it moves on).
    fn take(&self) -> Option<(Tag, Asked)> {
        let mut local = self.lock();
        local
            .unsent
            .take()
            .or_else(|| local.in_use.map(|(share, _)| (share.tag, Asked::default())))
    }

    /// Keeps the fleet's window of `tag` as read (`None`: none to use).
    fn keep(&self, config: &Config, tag: Tag, asked: Option<Asked>) {
        let mut local = self.lock();
        local.in_use = asked.map(|asked| (asked::share(config, tag, asked), asked));
        let shedding = local
            .in_use
            .is_some_and(|(share, _)| share.shed > Shed::NONE);
        self.shedding.store(shedding, Ordering::Relaxed);
    }

    /// Starts the task that sends and reads (see the module's
    /// documentation), inside a tokio runtime (otherwise nothing to
    /// start), under the circuit's settings in force at each interval.
    pub(in crate::store) fn start(
        self: &Arc<Self>,
        store: Arc<dyn Store>,
        key: &str,
        live: Arc<Live>,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let sender = Sender {
            store,
            key: asked::key(key),
            live,
        };
        runtime.spawn(sender.run(Arc::downgrade(self)));
    }
}

/// What the task needs: the store, the record's key and the circuit's
/// settings (which say how long a record lives), read at each interval
/// (SPEC §12).
struct Sender {
    store: Arc<dyn Store>,
    key: String,
    live: Arc<Live>,
}

impl Sender {
    async fn run(self, throttle: Weak<FleetThrottle>) {
        loop {
            tokio::time::sleep(interval(self.live.get())).await;
            let Some(live) = throttle.upgrade() else {
                return;
            };
            let Some((tag, counts)) = live.take() else {
                continue;
            };
            let config = self.live.get();
            let read = self.send(config, tag, counts).await;
            live.keep(config, tag, read.ok().flatten());
        }
    }

    /// Adds `counts` to the fleet's window of `tag` and reads it back,
    /// under `config`: `None` if that window is over (a later epoch's
    /// record is there).
    async fn send(
        &self,
        config: &Config,
        tag: Tag,
        counts: Asked,
    ) -> Result<Option<Asked>, StoreError> {
        let ttl = ttl(config);
        let increment = asked::increment(config, tag, counts, ttl);
        if counts.requests > 0
            && self.store.increment(&self.key, &increment).await? == Incremented::Skipped
        {
            return self.replace(config, tag, counts).await;
        }
        let loaded = self.store.load(&self.key).await?;
        Ok(
            match asked::held(config, loaded.payload.as_deref(), tag, loaded.now) {
                Held::Ours(asked) => Some(asked),
                Held::Later => None,
                // Expired since, or replaced by another generation's.
                Held::Replaceable => Some(Asked::default()),
            },
        )
    }

    /// Writes `counts` into the record by compare-and-set where the
    /// store's increment did not apply: the record of another epoch
    /// replaced, or (from a store that applies no increment) ours added to.
    async fn replace(
        &self,
        config: &Config,
        tag: Tag,
        counts: Asked,
    ) -> Result<Option<Asked>, StoreError> {
        let ttl = ttl(config);
        let increment = asked::increment(config, tag, counts, ttl);
        for _ in 0..MAX_CONFLICTS {
            let loaded = self.store.load(&self.key).await?;
            let held = loaded.payload.as_deref();
            let written = match asked::held(config, held, tag, loaded.now) {
                Held::Later => return Ok(None),
                Held::Ours(_) => held.and_then(|held| increment.apply(held, loaded.now)),
                Held::Replaceable => None,
            };
            let Some(written) = written.or_else(|| asked::fresh(&increment, loaded.now)) else {
                return Ok(None);
            };
            let swap = self
                .store
                .swap(&self.key, held, &written, ttl, false)
                .await?;
            if swap == Swap::Written {
                return Ok(match asked::held(config, Some(&written), tag, loaded.now) {
                    Held::Ours(asked) => Some(asked),
                    _ => None,
                });
            }
        }
        Err(StoreError::contended(
            self.store.name(),
            &self.key,
            MAX_CONFLICTS,
        ))
    }
}

#[cfg(test)]
mod tests;
