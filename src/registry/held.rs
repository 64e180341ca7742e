//! The creation side of a registry: every circuit by key, the order in
//! which idle circuits are looked for, the capacity, and retirement.
//!
//! Taken under one mutex, by creations only (a lookup of an existing
//! circuit never takes it). Each creation first looks at a few circuits
//! (round robin, oldest first) and retires those that are idle: closed,
//! with an empty window (no failure in it, and under the `rate` policy no
//! call either), held by no one but the registry, and
//! not looked up since a sweep saw them at least their idle time ago
//! (looking a circuit up sets a mark at most once between two sweeps; a
//! sweep that finds it set clears it and restarts the idle time). When the
//! registry is full and none of the circuits looked at is idle, the new
//! name gets the registry's overflow circuit instead of one of its own.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use foldhash::fast::RandomState;

use super::map::{Lookup, Pair};
use crate::backing::Backing;
use crate::config::{Config, nanos};
use crate::fuse::Fuse;

/// Circuits a creation looks at for idleness when there is room.
const SWEEP: usize = 4;
/// Circuits a creation looks at when the registry is full.
const SWEEP_WHEN_FULL: usize = 32;

/// One circuit the registry holds.
struct Entry<B: Backing> {
    fuse: Arc<Fuse<B>>,
    /// Every (name, operation) that reaches it in the map.
    pairs: Vec<Pair>,
    /// When a sweep last found it in use (or it was made), on its clock.
    seen_at: u64,
}

/// Every circuit by key, and the sweep order.
pub(super) struct Held<B: Backing> {
    /// In key order, so that a page of circuits by key is a range (the
    /// admin API's list) and not a sort of them all.
    by_key: BTreeMap<Box<str>, Entry<B>>,
    /// Keys, in the order the sweep looks at them.
    order: VecDeque<Box<str>>,
}

/// What a creation came to.
pub(super) enum Created<B: Backing> {
    /// The circuit of the name and operation (new, or one with its key).
    Circuit(Arc<Fuse<B>>),
    /// The registry is full and every circuit looked at is busy.
    Full,
}

impl<B: Backing> Default for Held<B> {
    fn default() -> Self {
        Held {
            by_key: BTreeMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<B: Backing> Held<B> {
    /// How many circuits the registry holds.
    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// The circuit whose key is `key`.
    #[cfg(feature = "admin")]
    pub(super) fn get(&self, key: &str) -> Option<Arc<Fuse<B>>> {
        self.by_key.get(key).map(|entry| entry.fuse.clone())
    }

    /// Calls `visit` with the circuits whose keys come after `after`, in
    /// key order, until it returns `false`.
    #[cfg(feature = "admin")]
    pub(super) fn visit_after(
        &self,
        after: Option<&str>,
        mut visit: impl FnMut(&Arc<Fuse<B>>) -> bool,
    ) {
        use std::ops::Bound;
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        for entry in self
            .by_key
            .range::<str, _>((from, Bound::Unbounded))
            .map(|(_, entry)| entry)
        {
            if !visit(&entry.fuse) {
                return;
            }
        }
    }

    /// The circuit for `pair`, made by `build` unless one with its key
    /// exists; inserted into `circuits` under `pair`. `capacity` bounds the
    /// circuits held; idle ones are retired to make room.
    pub(super) fn create<G: papaya::Guard>(
        &mut self,
        circuits: &papaya::HashMapRef<'_, Pair, Arc<Fuse<B>>, RandomState, G>,
        pair: Pair,
        key: &str,
        capacity: usize,
        idle_after: Option<Duration>,
        build: impl FnOnce() -> Fuse<B>,
    ) -> (Created<B>, usize) {
        let full = self.len() >= capacity;
        let retired = self.sweep(
            circuits,
            if full { SWEEP_WHEN_FULL } else { SWEEP },
            idle_after,
        );
        let fuse = if let Some(entry) = self.by_key.get_mut(key) {
            entry.pairs.push(pair.clone());
            entry.fuse.clone()
        } else {
            if self.len() >= capacity {
                return (Created::Full, retired);
            }
            let fuse = Arc::new(build());
            let seen_at = fuse.now();
            self.order.push_back(key.into());
            self.by_key.insert(
                key.into(),
                Entry {
                    fuse: fuse.clone(),
                    pairs: vec![pair.clone()],
                    seen_at,
                },
            );
            fuse
        };
        circuits.insert(pair, fuse.clone());
        (Created::Circuit(fuse), retired)
    }

    /// Looks at up to `budget` circuits, oldest first, and retires the
    /// idle ones; how many it retired.
    fn sweep<G: papaya::Guard>(
        &mut self,
        circuits: &papaya::HashMapRef<'_, Pair, Arc<Fuse<B>>, RandomState, G>,
        budget: usize,
        idle_after: Option<Duration>,
    ) -> usize {
        let mut retired = 0;
        for _ in 0..budget.min(self.order.len()) {
            let Some(key) = self.order.pop_front() else {
                break;
            };
            let Some(entry) = self.by_key.get_mut(&key) else {
                continue;
            };
            let now = entry.fuse.now();
            if entry.fuse.take_mark() {
                entry.seen_at = now;
                self.order.push_back(key);
                continue;
            }
            let idle_for = now.saturating_sub(entry.seen_at);
            // The registry's own references: its key map and one per pair.
            let held_elsewhere = Arc::strong_count(&entry.fuse) > 1 + entry.pairs.len();
            if idle_for < idle_time(entry.fuse.config(), idle_after)
                || held_elsewhere
                || !entry.fuse.quiet()
            {
                self.order.push_back(key);
                continue;
            }
            for pair in &entry.pairs {
                circuits.remove(&Lookup {
                    name: &pair.name,
                    operation: &pair.operation,
                });
            }
            self.by_key.remove(&key);
            retired += 1;
        }
        retired
    }
}

/// How long a circuit must go unused to be retired: `idle_after`, or by
/// default milon/fuse's store TTL, twice the longer of its window and its
/// open duration.
pub(super) fn idle_time(config: &Config, idle_after: Option<Duration>) -> u64 {
    idle_after.map_or_else(|| config.ttl_nanos(), nanos)
}
