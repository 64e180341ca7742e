//! The `rate` rule (SPEC §9): the share of failed or slow calls among the
//! calls of a bucketed window, once it holds `minimum_calls`.
//!
//! The window is `window_buckets` buckets of width `failure_window /
//! window_buckets`. A verdict at `t` falls in bucket `t / width`; at `now`
//! the window holds the current bucket and the ones before it, as many as
//! `window_buckets` in all.

use crate::config::Config;

use super::{Outcome, Recorded, Rule, View};

mod tallies;

pub(crate) use tallies::Tallies;

/// Calls, failed calls, slow calls and slow calls that failed: one
/// bucket's, or a window's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Counts {
    pub(crate) calls: u64,
    pub(crate) failed: u64,
    pub(crate) slow: u64,
    /// Of the slow calls, those that failed (resilience4j's slow calls by
    /// kind); the rule reads only `slow`.
    pub(crate) slow_failed: u64,
}

impl Counts {
    /// The counts of one closed verdict.
    pub(crate) fn of(outcome: Outcome) -> Self {
        Counts {
            calls: 1,
            failed: u64::from(outcome.failed),
            slow: u64::from(outcome.slow),
            slow_failed: u64::from(outcome.failed && outcome.slow),
        }
    }

    /// These counts and `other`'s (saturating: a sum never wraps).
    #[must_use]
    pub(crate) fn plus(self, other: Counts) -> Self {
        Counts {
            calls: self.calls.saturating_add(other.calls),
            failed: self.failed.saturating_add(other.failed),
            slow: self.slow.saturating_add(other.slow),
            slow_failed: self.slow_failed.saturating_add(other.slow_failed),
        }
    }
}

/// The width of a bucket in nanoseconds (at least one): what a payload's
/// `fuse.rate.width_ns` says.
#[inline]
pub(crate) fn width(config: &Config) -> u64 {
    (config.window_nanos() / u64::from(config.window_buckets())).max(1)
}

/// The bucket a verdict at `now` falls in.
#[inline]
pub(crate) fn bucket(config: &Config, now: u64) -> u64 {
    now / width(config)
}

/// Whether bucket `bucket` is in the window whose current bucket is
/// `current`: the current one and the `window_buckets - 1` before it.
#[inline]
pub(crate) fn live(config: &Config, bucket: u64, current: u64) -> bool {
    bucket <= current && current - bucket < u64::from(config.window_buckets())
}

/// Whether a window holding `counts` opens the circuit.
pub(crate) fn trips(config: &Config, counts: Counts) -> bool {
    if counts.calls < u64::from(config.minimum_calls()) {
        return false;
    }
    let share = |part: u64, percent: u32| {
        u128::from(part) * 100 >= u128::from(percent) * u128::from(counts.calls)
    };
    share(counts.failed, config.failure_rate())
        || (config.slow_call_duration().is_some() && share(counts.slow, config.slow_call_rate()))
}

/// Whether a call that took `elapsed` nanoseconds from admission to verdict
/// is slow: only under `rate` with a `slow_call_duration` set.
#[inline]
pub(crate) fn is_slow(config: &Config, elapsed: u64) -> bool {
    config.times_calls() && elapsed >= config.slow_nanos()
}

/// The window of `rate`: the counts of the buckets that have any, oldest
/// first, no more than `window_buckets` of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Buckets(Vec<(u64, Counts)>);

impl Buckets {
    /// A window of these buckets (a payload's): sorted, one entry per
    /// bucket (repeated buckets summed).
    #[cfg_attr(not(any(test, feature = "store")), allow(dead_code))] // a payload's window
    pub(crate) fn from_entries(entries: impl IntoIterator<Item = (u64, Counts)>) -> Self {
        let mut buckets = Buckets(Vec::new());
        for (bucket, counts) in entries {
            buckets.add(bucket, counts);
        }
        buckets
    }

    /// The buckets, oldest first.
    #[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
    pub(crate) fn entries(&self) -> &[(u64, Counts)] {
        &self.0
    }

    /// Adds `counts` to bucket `bucket`.
    pub(crate) fn add(&mut self, bucket: u64, counts: Counts) {
        match self.0.binary_search_by_key(&bucket, |&(b, _)| b) {
            Ok(at) => self.0[at].1 = self.0[at].1.plus(counts),
            Err(at) => self.0.insert(at, (bucket, counts)),
        }
    }

    /// The current bucket at `now`: `now`'s, or the newest recorded if a
    /// clock went backwards.
    fn current(&self, config: &Config, now: u64) -> u64 {
        let newest = self.0.last().map_or(0, |&(b, _)| b);
        bucket(config, now).max(newest)
    }

    /// The sum of the buckets in the window at `now`.
    pub(crate) fn sum(&self, config: &Config, now: u64) -> Counts {
        let current = self.current(config, now);
        self.0
            .iter()
            .filter(|&&(b, _)| live(config, b, current))
            .fold(Counts::default(), |sum, &(_, counts)| sum.plus(counts))
    }
}

impl Rule for Buckets {
    const COUNTS_CALLS: bool = true;

    fn empty(_: &Config) -> Self {
        Buckets(Vec::new())
    }

    /// Adds the call to its bucket; a failed or slow call then evaluates
    /// the rule. A success never opens the circuit. A call whose bucket is
    /// not in the window (a clock that went back by more than the window:
    /// the window is the newest bucket's) is left out, so that a window
    /// never holds more than `window_buckets` buckets.
    fn record(&mut self, config: &Config, outcome: Outcome, now: u64) -> Recorded {
        self.prune(config, now);
        let at = bucket(config, now);
        if live(config, at, self.current(config, now)) {
            self.add(at, Counts::of(outcome));
        }
        let evaluated = outcome.failed || outcome.slow;
        Recorded {
            changed: true,
            opens: evaluated && trips(config, self.sum(config, now)),
        }
    }

    fn view(&self, config: &Config, now: u64) -> View {
        View {
            counts: self.sum(config, now),
            ..View::default()
        }
    }

    /// Drops the buckets that have left the window.
    fn prune(&mut self, config: &Config, now: u64) -> bool {
        let current = self.current(config, now);
        let before = self.0.len();
        self.0.retain(|&(b, _)| live(config, b, current));
        self.0.len() != before
    }

    /// Whether the verdict's bucket is among the live ones.
    #[cfg(feature = "store")]
    fn covers(&self, config: &Config, at: u64, now: u64) -> bool {
        live(config, bucket(config, at), self.current(config, now))
    }

    /// The rule over the live buckets.
    #[cfg(feature = "store")]
    fn holds(&self, config: &Config, now: u64) -> bool {
        trips(config, self.sum(config, now))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests;
