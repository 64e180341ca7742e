//! The mirror of cached mode (SPEC §8): the newest snapshot this process
//! read or wrote under a key, and what may be decided from it without a
//! round trip while it is no older than the staleness bound.
//!
//! A decision is taken from the mirror only when the crate's rules, run on
//! a copy of it at the store time the mirror implies, change nothing: a
//! closed admission (the mirror closed with no failures), a rejection while
//! the mirror is open and cooling down, and a closed verdict with nothing
//! to record or clear. Everything else goes to the store: half-open
//! admissions, every probe verdict, every failure.
//!
//! Under `rate` an admission of a closed circuit changes nothing whatever
//! its window holds (a success never clears it), so a closed mirror is
//! quiet; a closed success is counted in the process's batch (see
//! `batch`) rather than sent, and a slow call goes to the store as a
//! failure does.

use std::time::{Duration, Instant};

use crate::config::Config;
use crate::snapshot::State;
use crate::store::model::asked::Share;
use crate::store::model::stored::{At, Entry, Opens, Stored, Ticket};
use crate::verdict::Verdict;

/// The newest snapshot of a key this process saw, with the store's time of
/// that reading and when, on this process's clock, it was made.
#[derive(Clone, Debug)]
pub(crate) struct Mirror {
    stored: Stored,
    store_now: u64,
    seen: Instant,
}

impl Mirror {
    pub(crate) fn new(stored: Stored, store_now: u64) -> Self {
        Mirror {
            stored,
            store_now,
            seen: Instant::now(),
        }
    }

    /// The closed permit this reading grants with nothing to ask, if it is
    /// a closed circuit with no failures (the common case of cached mode,
    /// kept where admission reads it without a lock).
    pub(crate) fn quiet_ticket(&self, config: &Config) -> Option<Ticket> {
        if !self.quiet(config) {
            return None;
        }
        let at = At {
            now: self.store_now,
            lease: 0,
            lease_id: 0,
            generation: 0,
            // A quiet mirror does not ramp up: nothing is drawn.
            draw: 0,
            throttle: None,
        };
        match self.stored.clone().acquire(config, at) {
            (Entry::Granted(ticket), false) => Some(ticket),
            _ => None,
        }
    }

    /// Whether a closed admission changes nothing here and needs no draw:
    /// a closed circuit that admits every call (no ramp, SPEC §11) and
    /// decides locally ([`decides_locally`](Self::decides_locally)).
    fn quiet(&self, config: &Config) -> bool {
        self.decides_locally(config) && self.stored.ramp.is_none()
    }

    /// Whether a closed admission is decided here without a write: a
    /// closed circuit with an empty window, or any closed one under
    /// `rate` (a ramp, SPEC §11, is decided here too, with a draw; the
    /// admission that finds it over writes, and asks the store).
    fn decides_locally(&self, config: &Config) -> bool {
        self.stored.state() == State::Closed
            && (config.policy().counts_calls() || self.stored.window.is_empty())
    }

    /// Whether the success of the closed `ticket` is one for the batch
    /// (under `rate`, a fresh mirror that granted it), rather than a
    /// round trip.
    pub(crate) fn batches(&self, config: &Config, ticket: &Ticket, staleness: Duration) -> bool {
        config.policy().counts_calls()
            && self.now(staleness).is_some()
            && self.stored.owns_closed(ticket)
    }

    /// Whether `other` is a newer reading than this one.
    pub(crate) fn older_than(&self, other: &Mirror) -> bool {
        other.store_now >= self.store_now
    }

    /// Whether the reading is younger than `staleness`.
    pub(crate) fn fresh(&self, staleness: Duration) -> bool {
        self.now(staleness).is_some()
    }

    /// The store's time now, as this reading implies it, if the reading is
    /// no older than `staleness`.
    fn now(&self, staleness: Duration) -> Option<u64> {
        let age = self.seen.elapsed();
        (age < staleness).then(|| {
            let age = u64::try_from(age.as_nanos()).unwrap_or(u64::MAX);
            self.store_now.saturating_add(age)
        })
    }

    /// The admission the mirror decides by itself: a closed permit of a
    /// closed circuit with no failures, or the rejection of an open one
    /// still cooling down. `None`: ask the store.
    /// `throttle`: the share the fleet's throttle sheds (SPEC §11).
    pub(crate) fn admit(
        &self,
        config: &Config,
        staleness: Duration,
        throttle: Option<Share>,
    ) -> Option<Entry> {
        let now = self.now(staleness)?;
        if !self.decides_locally(config) && self.stored.state() != State::Open {
            return None;
        }
        let mut copy = self.stored.clone();
        let at = At {
            now,
            lease: 0,
            lease_id: 0,
            generation: 0,
            draw: crate::grade::draw(),
            throttle,
        };
        match copy.acquire(config, at) {
            (entry, false) => Some(entry),
            (_, true) => None,
        }
    }

    /// Whether the verdict of a closed `ticket` needs no round trip: not a
    /// failure, and nothing for it to clear in a fresh mirror (a stale
    /// ticket, an ignore, a success with no failures in the mirror).
    pub(crate) fn settles(
        &self,
        config: &Config,
        ticket: &Ticket,
        verdict: Verdict,
        slow: bool,
        staleness: Duration,
    ) -> bool {
        if ticket.is_probe() || verdict == Verdict::Failure || slow {
            return false;
        }
        let Some(now) = self.now(staleness) else {
            return false;
        };
        !self
            .stored
            .clone()
            .timed_verdict(config, ticket, verdict, slow, Opens::default(), now)
    }
}
