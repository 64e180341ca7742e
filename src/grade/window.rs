//! The engine's memory of the throttle (SPEC §11): its window of requests
//! and accepts, kept as a `rate` window is (per-thread lanes of bucket
//! cells: a request is a call, a request that was not an accept a failed
//! one), and the share to shed in use, which every thread's first request
//! in a new bucket recomputes from the window (so it lags the window by at
//! most a bucket). A closed admission reads the share alone: one load.

use super::Shed;
use super::throttle::{self, Asked};
use crate::config::Config;
use crate::epoch::Epoch;
use crate::policy::{Outcome, Tallies};
use crate::sync::{AtomicU64, SHARE_LOAD, SHARE_STORE};

/// A circuit's throttle: in its slot (never freed), for a configuration
/// with `throttle_k`.
#[derive(Debug)]
pub(crate) struct Throttle {
    asked: Tallies,
    /// The share in use: the epoch whose window it was computed from in
    /// the high half, the share's parts in the low half.
    shed: AtomicU64,
}

impl Throttle {
    /// The empty throttle of `config`.
    pub(crate) fn new(config: &Config) -> Self {
        Throttle {
            asked: Tallies::new(config),
            shed: AtomicU64::new(0),
        }
    }

    /// The share to shed in closed epoch `epoch` (nothing until a request
    /// of that epoch has recomputed it: a new epoch's window is empty).
    #[inline]
    pub(crate) fn shed(&self, epoch: Epoch) -> Shed {
        let held = self.shed.load(SHARE_LOAD);
        #[allow(clippy::cast_possible_truncation)] // the two halves
        if (held >> 32) as u32 == epoch.get() {
            Shed(held as u32)
        } else {
            Shed::NONE
        }
    }

    /// Records a request of closed epoch `epoch` at window time `now`,
    /// `accepted` or not; the first of its thread in a bucket recomputes
    /// the share.
    pub(crate) fn ask(&'static self, config: &Config, epoch: Epoch, accepted: bool, now: u64) {
        let outcome = if accepted {
            Outcome::SUCCESS
        } else {
            Outcome::FAILURE
        };
        if self.asked.add(epoch, outcome, now) {
            self.refresh(config, epoch, now);
        }
    }

    /// Recomputes the share of `epoch` from its window at `now`.
    #[cold]
    fn refresh(&self, config: &Config, epoch: Epoch, now: u64) {
        let shed = throttle::shed(config, self.asked(config, epoch, now));
        self.shed
            .store(u64::from(epoch.get()) << 32 | u64::from(shed.0), SHARE_STORE);
    }

    /// The requests and accepts of `epoch`'s window at `now`.
    pub(crate) fn asked(&self, config: &Config, epoch: Epoch, now: u64) -> Asked {
        let counts = self.asked.sum(config, epoch, now);
        Asked {
            requests: counts.calls,
            accepts: counts.calls.saturating_sub(counts.failed),
        }
    }
}
