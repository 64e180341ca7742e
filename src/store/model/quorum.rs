//! The quorum of a shared circuit (SPEC §8, `min_reporters`): who reported
//! the failures in a closed window, so that the circuit opens only once
//! its rule holds and at least `min_reporters` distinct store handles
//! reported them.
//!
//! A reporter is a [`SharedFuse`](crate::store::SharedFuse)'s random id; a
//! window's failures whose reporter a payload does not give (milon/fuse's,
//! or an older version's) are one [`ANONYMOUS`] reporter's. Under `count`
//! the failures are the counted failures; under `rate`, the calls that
//! evaluate the rule (failed or slow).
//!
//! The rule asks only whether `min_reporters` of them are still in the
//! window. Each reporter's newest failure stays in it longest, so
//! [`Reporters`] keeps, per reporter, the time of its newest failure, and
//! only the `min_reporters` newest of those: the older ones leave the
//! window first and never decide. With the policy's own window (the newest
//! `failure_threshold` failures under `count`, the newest of which is also
//! its reporter's), a stored window keeps at most `failure_threshold +
//! min_reporters - 1` failures, within SPEC §8's bound of `failure_threshold
//! x min_reporters`.

use crate::config::Config;
use crate::policy::Window;

/// The reporter of failures a payload names no reporter for.
pub(crate) const ANONYMOUS: u64 = 0;

/// A reporter's newest failure in the window: its id and the store's time
/// of the failure (nanoseconds since the Unix epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) id: u64,
    pub(crate) at: u64,
}

/// The reporters of a closed window, one [`Report`] each, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reporters(Vec<Report>);

impl Reporters {
    /// These reports (a payload's, each reporter once), oldest first.
    pub(crate) fn from_reports(mut reports: Vec<Report>) -> Self {
        reports.sort_by_key(|report| (report.at, report.id));
        Reporters(reports)
    }

    /// The reports, oldest first.
    pub(crate) fn reports(&self) -> &[Report] {
        &self.0
    }

    /// Whether no reporter is known.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forgets every reporter (a success under `count`, a new epoch);
    /// whether there was one.
    pub(crate) fn clear(&mut self) -> bool {
        let had = !self.0.is_empty();
        self.0.clear();
        had
    }

    /// Records a failure of reporter `id` at `now` in `window`, and drops
    /// what the rule can no longer need: reporters whose newest failure
    /// left the window, and all but the `min_reporters` newest.
    pub(crate) fn record(&mut self, config: &Config, window: &Window, id: u64, now: u64) {
        let at = match self.0.iter().position(|report| report.id == id) {
            Some(at) => self.0.remove(at).at.max(now),
            None => now,
        };
        // Kept in the order a payload's reporters are read in (by time,
        // then id), so that a store's increment writes them as the model
        // does.
        let place = self
            .0
            .partition_point(|report| (report.at, report.id) <= (at, id));
        self.0.insert(place, Report { id, at });
        self.0
            .retain(|report| window.covers(config, report.at, now));
        let keep = usize::try_from(config.min_reporters()).unwrap_or(usize::MAX);
        let extra = self.0.len().saturating_sub(keep);
        self.0.drain(..extra);
    }

    /// How many distinct reporters have a failure in `window` at `now`.
    pub(crate) fn count(&self, config: &Config, window: &Window, now: u64) -> u32 {
        let live = self
            .0
            .iter()
            .filter(|report| window.covers(config, report.at, now))
            .count();
        u32::try_from(live).unwrap_or(u32::MAX)
    }

    /// Whether the quorum holds at `now`: at least `min_reporters`
    /// distinct reporters have a failure in `window`.
    pub(crate) fn holds(&self, config: &Config, window: &Window, now: u64) -> bool {
        self.count(config, window, now) >= config.min_reporters()
    }
}

#[cfg(test)]
mod tests;
