//! Whether a shared circuit's store answers, and when to try it again
//! after it did not: a backoff that doubles with each failure in a row.
//! Bookkeeping only: the circuit tells its listeners of what changes.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::store::backend::error::StoreError;
use crate::sync::{Hint, Tally};

/// The first wait before a store that failed is tried again; it doubles
/// with each failure in a row, up to [`MAX_BACKOFF`]. A wait counts from
/// the start of the round trip that failed, not from its end (a store
/// that does not answer takes its timeouts to fail: waiting the backoff
/// after them made the tries of a store at the cap about 3 s apart), so
/// that tries begin at most a backoff apart and a store that answers
/// again is used within [`MAX_BACKOFF`] of its return, plus the round trip
/// that finds it.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// When a round trip began, as [`Health::begin`] tells it: the count of
/// failed round trips then, and the time.
#[derive(Clone, Copy, Debug)]
pub(in crate::store) struct Begun {
    seen: u64,
    at: Instant,
}

/// A store's health as one circuit sees it.
#[derive(Debug, Default)]
pub(in crate::store) struct Health {
    /// The outage under way, if any.
    down: Mutex<Option<Down>>,
    /// Set while the store is thought down (the details in `down`): what
    /// the common case reads.
    hint: Hint,
    /// How many failed round trips this circuit has seen: a round trip
    /// that began before the last of them cannot end the outage.
    outages: Tally,
    /// The store's failovers this circuit has told its listeners of.
    failovers: std::sync::atomic::AtomicU64,
}

#[derive(Debug)]
struct Down {
    error: StoreError,
    retry_at: Instant,
    backoff: Duration,
    /// The count of failed round trips with this one (see
    /// `Health::outages`).
    seen: u64,
}

impl Health {
    fn lock(&self) -> MutexGuard<'_, Option<Down>> {
        self.down.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the store may be down (one relaxed load; `false` is sure).
    #[inline]
    pub(in crate::store) fn maybe_down(&self) -> bool {
        self.hint.get()
    }

    /// Whether the store answered the last round trip.
    pub(in crate::store) fn reachable(&self) -> bool {
        self.lock().is_none()
    }

    /// The store's last error, while it is not yet time to try it again.
    #[inline]
    pub(in crate::store) fn still_down(&self) -> Option<StoreError> {
        if !self.hint.get() {
            return None;
        }
        self.still_down_slow()
    }

    #[inline(never)]
    fn still_down_slow(&self) -> Option<StoreError> {
        let down = self.lock();
        let down = down.as_ref()?;
        (Instant::now() < down.retry_at).then(|| down.error.clone())
    }

    /// What a round trip beginning now passes to
    /// [`answered`](Self::answered) or [`failed`](Self::failed).
    pub(in crate::store) fn begin(&self) -> Begun {
        Begun {
            seen: self.outages.get(),
            at: Instant::now(),
        }
    }

    /// The store reports `failovers` in all: whether that is more than
    /// this circuit has told of (once per count, whoever finds it).
    pub(in crate::store) fn failed_over(&self, failovers: u64) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        failovers > 0 && self.failovers.fetch_max(failovers, Relaxed) < failovers
    }

    /// The store answered a round trip begun at `begun`: back to it, unless
    /// the trip began before the last failure was seen (a reply already on
    /// its way when the store went down says nothing of the store now).
    /// Whether this ended an outage.
    pub(in crate::store) fn answered(&self, begun: Begun) -> bool {
        if !self.hint.get() {
            return false;
        }
        let mut down = self.lock();
        if down.as_ref().is_some_and(|down| down.seen > begun.seen) {
            return false;
        }
        self.hint.set(false);
        down.take().is_some()
    }

    /// The store did not answer a round trip begun at `begun`: the
    /// fallback decides until the next try, a backoff after the trip
    /// began, the backoff doubling with each try that failed in a row. A
    /// trip begun before the last failure was seen was in flight with it:
    /// the same try, which neither doubles the backoff nor puts the next
    /// try off. Whether this began an outage.
    pub(in crate::store) fn failed(&self, error: &StoreError, begun: Begun) -> bool {
        let mut down = self.lock();
        if down.as_ref().is_some_and(|down| down.seen > begun.seen) {
            return false;
        }
        let backoff = down
            .as_ref()
            .map_or(MIN_BACKOFF, |down| (down.backoff * 2).min(MAX_BACKOFF));
        let first = down.is_none();
        self.hint.set(true);
        // Counted under the lock `answered` reads it under; a round trip
        // that read an older count is only taken as older still.
        let seen = self.outages.add(1) + 1;
        *down = Some(Down {
            error: error.clone(),
            retry_at: begun.at + backoff,
            backoff,
            seen,
        });
        first
    }
}

#[cfg(test)]
mod tests;
