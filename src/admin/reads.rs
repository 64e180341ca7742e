//! Shared circuits read from their store, within bounds: one reading
//! serves every answer for [`FRESH`], and the lists of one admin API read
//! from a budget of `per_second` reads that refills at `per_second` a
//! second (so one list reads at most that many, and all lists together
//! at most that many a second past the first). A list's circuits past the
//! budget are [`UNREAD`], never shown as closed; those read longest ago
//! go first, so that each gets its turn. One circuit on its own
//! (`GET /circuits/{key}`, the answer to a write) is at most one read per
//! request, outside the budget.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt as _;

use super::view::{CircuitView, Found, Reading, UNREAD, UNREADABLE};
use crate::snapshot::Snapshot;
use crate::store::{Held, SharedFuse};

/// How long a reading serves.
pub(super) const FRESH: Duration = Duration::from_secs(1);
/// How long a reading is remembered, to read first those read longest
/// ago (one forgotten counts as never read).
const REMEMBER: Duration = Duration::from_mins(1);
/// Store reads in flight at once for a list.
const AT_ONCE: usize = 16;
/// Store reads a second for the lists, unless the application says.
pub(super) const DEFAULT_PER_SECOND: u32 = 1000;
/// One read in the budget's units (the budget gains `per_second` units a
/// nanosecond: integers, exact).
const READ: u128 = 1_000_000_000;

/// The shared circuits' readings and the lists' budget of store reads.
#[derive(Debug)]
pub(super) struct Reads {
    per_second: u32,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    budget: Budget,
    kept: HashMap<String, Kept>,
}

/// What one store read of a circuit gave, and when.
#[derive(Clone, Debug)]
struct Kept {
    outcome: Outcome,
    at: Instant,
}

#[derive(Clone, Debug)]
enum Outcome {
    /// The snapshot, the store's time it was read at (since the Unix
    /// epoch) and the same instant on the wall clock.
    Read {
        snapshot: Snapshot,
        held: Held,
        now: Duration,
        wall: SystemTime,
    },
    /// The store holds what is not a circuit (the error says what).
    Unreadable(String),
    /// The store did not answer (the fallback circuit is shown).
    Unreachable(String),
}

/// What a list does for one of its shared circuits.
#[derive(Clone, Debug)]
enum Plan {
    /// Shows this reading, fresh enough (boxed: a snapshot is large).
    Kept(Box<Kept>),
    /// Reads the store.
    Read,
    /// Shows it unread: the budget ran out.
    Unread,
}

/// Store reads to spend: `per_second` at most, `per_second` more a second.
#[derive(Debug)]
struct Budget {
    per_second: u32,
    units: u128,
    at: Instant,
}

impl Default for Reads {
    fn default() -> Self {
        Reads::new(DEFAULT_PER_SECOND)
    }
}

impl Reads {
    /// Lists that read at most `per_second` circuits a second (at least
    /// one).
    pub(super) fn new(per_second: u32) -> Self {
        let per_second = per_second.max(1);
        Reads {
            per_second,
            inner: Mutex::new(Inner {
                budget: Budget::new(per_second, Instant::now()),
                kept: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The views of a list's shared circuits, in order: from a fresh
    /// reading, from the store within the budget, or unread.
    pub(super) async fn views(&self, shared: &[&SharedFuse]) -> Vec<CircuitView> {
        let keys: Vec<&str> = shared.iter().map(|fuse| fuse.key()).collect();
        let plans = self.lock().plan(&keys, Instant::now());
        let wanted: Vec<usize> = (0..plans.len())
            .filter(|&i| matches!(plans[i], Plan::Read))
            .collect();
        let read: Vec<(usize, Kept)> = futures_util::stream::iter(wanted)
            .map(|i| {
                let fuse = shared[i];
                async move { (i, read(fuse).await) }
            })
            .buffered(AT_ONCE)
            .collect()
            .await;
        let mut got: Vec<Option<Kept>> = plans
            .into_iter()
            .map(|plan| match plan {
                Plan::Kept(kept) => Some(*kept),
                Plan::Read | Plan::Unread => None,
            })
            .collect();
        {
            let mut inner = self.lock();
            for (i, kept) in &read {
                inner.kept.insert(keys[*i].to_owned(), kept.clone());
            }
        }
        for (i, kept) in read {
            got[i] = Some(kept);
        }
        shared
            .iter()
            .zip(got)
            .map(|(fuse, kept)| match kept {
                Some(kept) => view(fuse, &kept),
                None => self.unread(fuse),
            })
            .collect()
    }

    /// One shared circuit: its fresh reading, or a new one.
    pub(super) async fn one(&self, fuse: &SharedFuse) -> CircuitView {
        let kept = self
            .lock()
            .kept
            .get(fuse.key())
            .filter(|kept| kept.at.elapsed() < FRESH)
            .cloned();
        match kept {
            Some(kept) => view(fuse, &kept),
            None => self.again(fuse).await,
        }
    }

    /// One shared circuit read now (after a write, whatever was kept).
    pub(super) async fn again(&self, fuse: &SharedFuse) -> CircuitView {
        let kept = read(fuse).await;
        self.lock().kept.insert(fuse.key().to_owned(), kept.clone());
        view(fuse, &kept)
    }

    fn unread(&self, fuse: &SharedFuse) -> CircuitView {
        let error = format!(
            "not read from the store {}: the admin API's lists read at most {} shared \
             circuits a second, those read longest ago first; list again, or ask for this \
             circuit alone",
            fuse.store().name(),
            self.per_second
        );
        CircuitView::read(&reading(fuse, Found::Nothing(UNREAD), Some(error)))
    }
}

impl Inner {
    /// What a list does for the shared circuits of `keys` at `now`: fresh
    /// readings shown; the others read, those read longest ago (or never)
    /// first, as far as the budget goes; the rest unread.
    fn plan(&mut self, keys: &[&str], now: Instant) -> Vec<Plan> {
        self.kept
            .retain(|_, kept| now.saturating_duration_since(kept.at) < REMEMBER);
        let mut plans = Vec::with_capacity(keys.len());
        let mut stale = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match self.kept.get(*key) {
                Some(kept) if now.saturating_duration_since(kept.at) < FRESH => {
                    plans.push(Plan::Kept(Box::new(kept.clone())));
                }
                kept => {
                    plans.push(Plan::Unread);
                    stale.push((kept.map(|kept| kept.at), i));
                }
            }
        }
        // `None` (never read) sorts first; then the oldest; then by key.
        stale.sort_unstable();
        let granted = self.budget.take(stale.len(), now);
        for &(_, i) in &stale[..granted] {
            plans[i] = Plan::Read;
        }
        plans
    }
}

impl Budget {
    /// Full at `now`.
    fn new(per_second: u32, now: Instant) -> Self {
        Budget {
            per_second,
            units: u128::from(per_second) * READ,
            at: now,
        }
    }

    /// As many of `wanted` reads as the budget holds at `now`, spent.
    fn take(&mut self, wanted: usize, now: Instant) -> usize {
        let gained =
            now.saturating_duration_since(self.at).as_nanos() * u128::from(self.per_second);
        self.at = self.at.max(now);
        self.units = self
            .units
            .saturating_add(gained)
            .min(u128::from(self.per_second) * READ);
        let granted = usize::try_from(self.units / READ)
            .unwrap_or(usize::MAX)
            .min(wanted);
        self.units -= u128::try_from(granted).unwrap_or(u128::MAX) * READ;
        granted
    }
}

/// `fuse` read from its store now.
async fn read(fuse: &SharedFuse) -> Kept {
    let outcome = match fuse.snapshot_now().await {
        Ok((snapshot, held, now)) => Outcome::Read {
            snapshot,
            held,
            now,
            wall: UNIX_EPOCH + now,
        },
        Err(err) if err.payload_error().is_some() => Outcome::Unreadable(err.to_string()),
        Err(err) => Outcome::Unreachable(err.to_string()),
    };
    Kept {
        outcome,
        at: Instant::now(),
    }
}

/// The view of `fuse` from `kept`, its times moved on by the reading's
/// age; when the store did not answer, this process's fallback circuit.
fn view(fuse: &SharedFuse, kept: &Kept) -> CircuitView {
    let age = kept.at.elapsed();
    match &kept.outcome {
        Outcome::Read {
            snapshot,
            held,
            now,
            wall,
        } => {
            let found = Found::Snapshot {
                snapshot,
                opening_failures: &held.opening_failures,
                open_for_assumed: held.open_for_assumed,
                now: *now + age,
                wall: *wall + age,
            };
            CircuitView::read(&reading(fuse, found, None))
        }
        Outcome::Unreadable(error) => CircuitView::read(&reading(
            fuse,
            Found::Nothing(UNREADABLE),
            Some(error.clone()),
        )),
        Outcome::Unreachable(error) => {
            let local = fuse.local();
            let snapshot = local.snapshot();
            let found = Found::Snapshot {
                snapshot: &snapshot,
                opening_failures: &[],
                open_for_assumed: false,
                now: Duration::from_nanos(local.now()),
                wall: SystemTime::now(),
            };
            CircuitView::read(&reading(fuse, found, Some(error.clone())))
        }
    }
}

fn reading<'a>(fuse: &'a SharedFuse, found: Found<'a>, store_error: Option<String>) -> Reading<'a> {
    Reading {
        key: fuse.key(),
        name: fuse.name(),
        operation: fuse.operation(),
        shared: true,
        found,
        config: fuse.config(),
        store_error,
    }
}

#[cfg(test)]
mod tests;
