//! Cached mode under `rate` (SPEC §9): a process's batched successes are
//! sent at least once per `staleness`, calls or none. While calls come, the
//! first admission after `staleness` sends them with its step; this task
//! sends what waits once per `staleness` besides, so that a process that
//! stops calling does not keep its counts. It runs on the tokio runtime
//! the circuit was built in (with the `redis` or `sql` feature; built
//! outside a runtime, a circuit sends its batches with its steps only), and
//! ends once the circuit is dropped.
//!
//! Its step is the model's (`record_batch`), a compare-and-set like any
//! other, in write turns of its own: a race with the circuit's own steps
//! costs a retry, never a count. A batch the store does not take (an
//! outage) is dropped, as a step's is.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::store::Store;
use crate::store::cache::Cache;
use crate::store::circuit::live::{Live, Reading};
use crate::store::circuit::step::{InStore, Turns};

/// What the task needs of its circuit: its store, its key, and its
/// settings, read at each sending (SPEC §12).
pub(in crate::store) struct Flush {
    pub(in crate::store) store: Arc<dyn Store>,
    pub(in crate::store) key: String,
    pub(in crate::store) live: Arc<Live>,
}

impl Flush {
    /// Starts sending `cache`'s batches once per its staleness, under
    /// `rate` and inside a tokio runtime (otherwise nothing to start).
    pub(in crate::store) fn start(self, cache: &Arc<Cache>) {
        if !self.live.get().policy().counts_calls() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (cache, staleness) = (Arc::downgrade(cache), cache.staleness());
        runtime.spawn(self.run(cache, staleness));
    }

    async fn run(self, cache: Weak<Cache>, staleness: Duration) {
        let turns = Turns::new();
        loop {
            tokio::time::sleep(staleness.max(Duration::from_millis(1))).await;
            let Some(live) = cache.upgrade() else {
                return;
            };
            let batches = live.take_batches();
            if batches.is_empty() {
                continue;
            }
            let config = self.live.get();
            let reading = Reading::of(&self.live, config);
            let key = InStore {
                store: &*self.store,
                key: &self.key,
                lease: reading.lease,
                ttl: reading.ttl,
                width: reading.width,
                open: reading.open,
                turns: &turns,
            };
            let step = key.step(false, |stored, now| {
                batches.iter().fold(false, |sent, batch| {
                    stored.record_batch(config, batch, now) | sent
                })
            });
            let stepped = step.await;
            // Sent, or lost with the step: no longer waiting.
            if let Ok(stepped) = stepped {
                batches.sent();
                live.remember(&stepped.stored, stepped.now);
            }
        }
    }
}
