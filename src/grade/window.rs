//! The engine's memory of the throttle (SPEC §11): its window of requests
//! and accepts, kept as a `rate` window is (per-thread lanes of bucket
//! cells: a request is a call, a request that was not an accept a failed
//! one; a `rate` circuit's verdicts are counted once, in its `rate`
//! window, and this one holds the calls shed), and the share to shed in use, which every thread's first request
//! in a new bucket recomputes from the window (so it lags the window by at
//! most a bucket). A closed admission reads the share alone: one load of
//! the slot's hot words ([`Share`]).

use super::Shed;
use super::throttle::{self, Asked};
use crate::config::Config;
use crate::epoch::Epoch;
use crate::policy::{Outcome, Tallies};
use crate::sync::{AtomicU64, SHARE_LOAD, SHARE_STORE};

/// The share the throttle sheds in use (SPEC §11): the epoch whose window
/// it was computed from in the high half, the share's parts in the low
/// half. In the slot's hot words, beside the state word: a closed
/// admission of a throttling circuit reads it and nothing else.
#[derive(Debug)]
pub(crate) struct Share(AtomicU64);

impl Share {
    /// Nothing shed, in no epoch yet.
    pub(crate) fn new() -> Self {
        Share(AtomicU64::new(0))
    }

    /// The share to shed in closed epoch `epoch` (nothing until a request
    /// of that epoch has recomputed it: a new epoch's window is empty).
    #[inline]
    pub(crate) fn get(&self, epoch: Epoch) -> Shed {
        let held = self.0.load(SHARE_LOAD);
        #[allow(clippy::cast_possible_truncation)] // the two halves
        if (held >> 32) as u32 == epoch.get() {
            Shed(held as u32)
        } else {
            Shed::NONE
        }
    }

    /// Nothing shed, in no epoch (tests that move a circuit back to an
    /// epoch its slot used).
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn clear(&self) {
        self.0.store(0, SHARE_STORE);
    }

    /// Nothing shed in `epoch` until a request recomputes the share: a
    /// new throttle's window is empty (SPEC §12).
    pub(crate) fn reset(&self, epoch: Epoch) {
        self.set(epoch, Shed::NONE);
    }

    fn set(&self, epoch: Epoch, shed: Shed) {
        self.0.store(
            u64::from(epoch.get()) << 32 | u64::from(shed.0),
            SHARE_STORE,
        );
    }
}

/// A circuit's throttle window: in its slot (never freed), for a
/// configuration with `throttle_k`.
#[derive(Debug)]
pub(crate) struct Throttle {
    asked: Tallies,
}

impl Throttle {
    /// The empty throttle of `config`.
    pub(crate) fn new(config: &Config) -> Self {
        Throttle {
            asked: Tallies::new(config),
        }
    }

    /// Records a request of closed epoch `epoch` at window time `now`,
    /// `accepted` or not; the first of its thread in a bucket recomputes
    /// the `share` in use. `rate`: the circuit's `rate` window, whose
    /// verdicts are this window's requests too (see [`asked`](Self::asked)).
    pub(crate) fn ask(
        &'static self,
        config: &Config,
        share: &Share,
        epoch: Epoch,
        accepted: bool,
        now: u64,
        rate: Option<&Tallies>,
    ) {
        let outcome = if accepted {
            Outcome::SUCCESS
        } else {
            Outcome::FAILURE
        };
        if self.asked.add(epoch, outcome, now) {
            self.refresh(config, share, epoch, now, rate);
        }
    }

    /// A throttling `rate` circuit's closed verdict of `epoch`, counted in
    /// its `rate` window at window time `now`, was its thread's first there
    /// in that bucket: unless the thread asked in that bucket already (a
    /// call shed), it recomputes the `share` in use.
    #[cold]
    pub(crate) fn entered(
        &'static self,
        config: &Config,
        share: &Share,
        epoch: Epoch,
        now: u64,
        rate: &Tallies,
    ) {
        if self.asked.enter(epoch, now) {
            self.refresh(config, share, epoch, now, Some(rate));
        }
    }

    /// Recomputes the `share` of `epoch` from its window at `now`.
    #[cold]
    fn refresh(
        &self,
        config: &Config,
        share: &Share,
        epoch: Epoch,
        now: u64,
        rate: Option<&Tallies>,
    ) {
        share.set(
            epoch,
            throttle::shed(config, self.asked(config, epoch, now, rate)),
        );
    }

    /// The requests and accepts of `epoch`'s window at `now`. Under
    /// `rate`, the circuit's `rate` window holds its closed verdicts (a
    /// call, an accept unless it failed), and this one only the calls the
    /// throttle shed: the two are summed.
    pub(crate) fn asked(
        &self,
        config: &Config,
        epoch: Epoch,
        now: u64,
        rate: Option<&Tallies>,
    ) -> Asked {
        let own = self.asked.sum(config, epoch, now);
        let verdicts = rate
            .map(|rate| rate.sum(config, epoch, now))
            .unwrap_or_default();
        let requests = own.calls.saturating_add(verdicts.calls);
        let refused = own.failed.saturating_add(verdicts.failed);
        Asked {
            requests,
            accepts: requests.saturating_sub(refused),
        }
    }

    /// Adds an accepted request of `epoch` at the coarse time `now` if
    /// this thread's last request was added to this window in that epoch
    /// and `now`'s bucket (see [`Tallies::add_success_quickly`]): a
    /// throttling circuit's healthy closed success. `false` if not
    /// (nothing was added).
    #[inline]
    pub(crate) fn accept_quickly(window: usize, epoch: Epoch, now: u64) -> bool {
        Tallies::add_success_quickly(window, epoch, now)
    }

    /// Empties the window and `share` (tests that move a circuit back to
    /// an epoch its slot used).
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn clear(&self, share: &Share) {
        self.asked.clear();
        share.clear();
    }

    /// The window's address (see [`Tallies::address`]).
    pub(crate) fn address(&'static self) -> usize {
        self.asked.address()
    }
}
