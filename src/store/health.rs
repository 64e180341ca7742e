//! Whether a shared circuit's store answers, and when to try it again
//! after it did not: a backoff that doubles with each failure in a row.
//! Bookkeeping only: the circuit tells its listeners of what changes.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::error::StoreError;
use crate::sync::{Hint, Tally};

/// The first wait before a store that failed is tried again; it doubles
/// with each failure in a row, up to [`MAX_BACKOFF`] (so a store that
/// answers again is used within about two of them: the first try may meet
/// a connection still being remade).
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// A store's health as one circuit sees it.
#[derive(Debug, Default)]
pub(super) struct Health {
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
    pub(super) fn maybe_down(&self) -> bool {
        self.hint.get()
    }

    /// Whether the store answered the last round trip.
    pub(super) fn reachable(&self) -> bool {
        self.lock().is_none()
    }

    /// The store's last error, while it is not yet time to try it again.
    #[inline]
    pub(super) fn still_down(&self) -> Option<StoreError> {
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
    /// [`answered`](Self::answered).
    pub(super) fn begin(&self) -> u64 {
        self.outages.get()
    }

    /// The store reports `failovers` in all: whether that is more than
    /// this circuit has told of (once per count, whoever finds it).
    pub(super) fn failed_over(&self, failovers: u64) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        failovers > 0 && self.failovers.fetch_max(failovers, Relaxed) < failovers
    }

    /// The store answered a round trip begun at `begun`: back to it, unless
    /// the trip began before the last failure was seen (a reply already on
    /// its way when the store went down says nothing of the store now).
    /// Whether this ended an outage.
    pub(super) fn answered(&self, begun: u64) -> bool {
        if !self.hint.get() {
            return false;
        }
        let mut down = self.lock();
        if down.as_ref().is_some_and(|down| down.seen > begun) {
            return false;
        }
        self.hint.set(false);
        down.take().is_some()
    }

    /// The store did not answer: the fallback decides until the next try,
    /// after a backoff that doubles with each failure in a row. Whether
    /// this began an outage.
    pub(super) fn failed(&self, error: &StoreError) -> bool {
        let mut down = self.lock();
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
            retry_at: Instant::now() + backoff,
            backoff,
            seen,
        });
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_begins_once_and_a_reply_sent_before_it_does_not_end_it() {
        let health = Health::default();
        let error = StoreError::unreachable("memory", "stopped");
        assert!(health.reachable() && !health.maybe_down());
        let before = health.begin();
        assert!(health.failed(&error));
        assert!(
            !health.failed(&error),
            "the second failure is the same outage"
        );
        assert_eq!(health.still_down(), Some(error));
        assert!(!health.answered(before), "a reply sent before the failure");
        assert!(!health.reachable());
        assert!(health.answered(health.begin()));
        assert!(health.reachable() && health.still_down().is_none());
        assert!(!health.answered(health.begin()), "already back");
    }
}
