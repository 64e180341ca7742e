//! The quorum of a shared circuit (SPEC §8, `min_reporters`): who reported
//! the failures in a closed window, so that the circuit opens only once
//! its rule holds and at least `min_reporters` distinct store handles
//! reported them.
//!
//! A reporter is a [`SharedFuse`](super::SharedFuse)'s random id; a
//! window's failures whose reporter a payload does not give (milon/fuse's,
//! or an older version's) are one [`ANONYMOUS`] reporter's. Under `count`
//! the failures are the counted failures; under `rate`, the calls that
//! evaluate the rule (failed or slow).
//!
//! The rule asks only whether `min_reporters` of them are still in the
//! window. Each reporter's newest failure stays in it longest, so
//! [`Reporters`] keeps, per reporter, the time of its newest failure, and
//! only the `min_reporters` newest of those: the older ones leave the
//! window first and never decide. With the policy's own window (at most
//! `failure_threshold` failures under `count`), a stored window keeps
//! fewer than threshold x min_reporters entries.

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
        let place = self.0.partition_point(|report| report.at <= at);
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
mod tests {
    use super::*;
    use crate::Policy;
    use crate::policy::{Buckets, Failures};
    use std::time::Duration;

    const SEC: u64 = 1_000_000_000;

    fn config(policy: Policy, quorum: u32) -> Config {
        Config::builder()
            .policy(policy)
            .min_reporters(quorum)
            .failure_window(Duration::from_secs(10))
            .window_buckets(10)
            .build()
            .unwrap()
    }

    #[test]
    fn distinct_reporters_in_the_window_make_the_quorum() {
        let config = config(Policy::Count, 2);
        let window = Window::Count(Failures::default());
        let mut reporters = Reporters::default();
        reporters.record(&config, &window, 7, SEC);
        reporters.record(&config, &window, 7, 2 * SEC);
        assert_eq!(
            reporters.count(&config, &window, 2 * SEC),
            1,
            "one reporter"
        );
        assert!(!reporters.holds(&config, &window, 2 * SEC));
        reporters.record(&config, &window, 9, 3 * SEC);
        assert!(reporters.holds(&config, &window, 3 * SEC));
        // Reporter 7's newest failure (2 s) leaves the window after 12 s.
        assert!(reporters.holds(&config, &window, 12 * SEC));
        assert!(!reporters.holds(&config, &window, 12 * SEC + 1));
    }

    #[test]
    fn only_the_newest_reporters_are_kept() {
        let config = config(Policy::Count, 2);
        let window = Window::Count(Failures::default());
        let mut reporters = Reporters::default();
        for (id, at) in [(1, 1), (2, 2), (3, 3), (1, 4)] {
            reporters.record(&config, &window, id, at * SEC);
        }
        let ids: Vec<u64> = reporters.reports().iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![3, 1]);
        // One out of the window (10 s, inclusive) is dropped when the next
        // is recorded.
        reporters.record(&config, &window, 2, 14 * SEC + 1);
        let ids: Vec<u64> = reporters.reports().iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![2]);
        assert!(reporters.clear());
        assert!(!reporters.clear());
    }

    #[test]
    fn under_rate_a_reporter_counts_while_its_bucket_is_live() {
        let config = config(Policy::Rate, 2);
        let window = Window::Rate(Buckets::default());
        let mut reporters = Reporters::default();
        reporters.record(&config, &window, 1, SEC + 1);
        reporters.record(&config, &window, 2, 5 * SEC);
        // 1 s buckets, 10 of them: bucket 1 is live up to bucket 10.
        assert!(reporters.holds(&config, &window, 11 * SEC - 1));
        assert!(!reporters.holds(&config, &window, 11 * SEC));
    }
}
