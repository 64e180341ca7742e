//! The `count` rule (SPEC §3, milon/fuse's): counted failures inside the
//! window reach the threshold; a success clears them.

use crate::config::Config;

use super::{Outcome, Recorded, Rule, View};

/// Whether a failure recorded at `at` still counts at `now` (inclusive
/// edge; a clock that went backwards counts as no time passing).
#[inline]
pub(crate) fn in_window(config: &Config, at: u64, now: u64) -> bool {
    Limits::of(config).in_window(at, now)
}

/// Whether `recorded` failures since the last clear could open the circuit
/// (an engine skips counting them when they could not).
#[inline]
pub(crate) fn could_open(config: &Config, recorded: u32) -> bool {
    Limits::of(config).could_open(recorded)
}

/// The two numbers of the `count` rule, read off a configuration once: the
/// threshold and the window in nanoseconds. The engine keeps them beside
/// its ring, so that a failure reads neither through the configuration
/// nor converts the window's `Duration` again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    threshold: u32,
    window: u64,
}

impl Limits {
    /// The numbers of `config`.
    #[inline]
    pub(crate) fn of(config: &Config) -> Self {
        Limits {
            threshold: config.failure_threshold(),
            window: config.window_nanos(),
        }
    }

    /// The numbers of the configuration numbered `number`
    /// ([`count_limits`](crate::config::count_limits)).
    #[inline]
    pub(crate) fn numbered(number: u32) -> Self {
        let (threshold, window) = crate::config::count_limits(number);
        Limits { threshold, window }
    }

    /// The failure threshold.
    #[inline]
    pub(crate) fn threshold(self) -> u32 {
        self.threshold
    }

    /// See [`in_window`].
    #[inline]
    pub(crate) fn in_window(self, at: u64, now: u64) -> bool {
        now.saturating_sub(at) <= self.window
    }

    /// See [`could_open`].
    #[inline]
    pub(crate) fn could_open(self, recorded: u32) -> bool {
        recorded >= self.threshold
    }
}

/// The window of `count`: the times of the failures recorded since the
/// last clear, oldest first, no more than the threshold needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Failures(Vec<u64>);

impl Failures {
    /// A window holding these failure times (a payload's), oldest first
    /// once pruned.
    pub(crate) fn from_times(mut times: Vec<u64>) -> Self {
        times.sort_unstable();
        Failures(times)
    }

    /// The recorded times, oldest first.
    #[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
    pub(crate) fn times(&self) -> &[u64] {
        &self.0
    }
}

impl Rule for Failures {
    const COUNTS_CALLS: bool = false;

    fn empty(_: &Config) -> Self {
        Failures(Vec::new())
    }

    fn record(&mut self, config: &Config, outcome: Outcome, now: u64) -> Recorded {
        if !outcome.failed {
            let changed = !self.0.is_empty();
            self.0.clear();
            return Recorded {
                changed,
                opens: false,
            };
        }
        self.0.push(now);
        self.0.retain(|&at| in_window(config, at, now));
        self.prune(config, now);
        let counted = u32::try_from(self.0.len()).unwrap_or(u32::MAX);
        Recorded {
            changed: true,
            opens: could_open(config, counted),
        }
    }

    fn view(&self, config: &Config, now: u64) -> View {
        let mut failures: Vec<u64> = self
            .0
            .iter()
            .copied()
            .filter(|&at| in_window(config, at, now))
            .collect();
        failures.sort_unstable();
        View {
            failures,
            ..View::default()
        }
    }

    /// Keeps the newest `failure_threshold` failures: the rule asks only
    /// whether as many are in the window, and the newest stay in it
    /// longest.
    fn prune(&mut self, config: &Config, _now: u64) -> bool {
        let needed = usize::try_from(config.failure_threshold()).unwrap_or(usize::MAX);
        let extra = self.0.len().saturating_sub(needed);
        self.0.drain(..extra);
        extra > 0
    }

    /// Keeps the newest failures still in the old window (one that has
    /// left it is gone: a wider window does not bring it back), at most
    /// the new threshold less one (SPEC §12): the next failure then makes
    /// the threshold if they are in the new window.
    fn reconfigured(&mut self, old: &Config, new: &Config, now: u64) {
        self.0.retain(|&at| in_window(old, at, now));
        let keep = usize::try_from(new.failure_threshold() - 1).unwrap_or(usize::MAX);
        let extra = self.0.len().saturating_sub(keep);
        self.0.drain(..extra);
    }

    #[cfg(feature = "store")]
    fn covers(&self, config: &Config, at: u64, now: u64) -> bool {
        in_window(config, at, now)
    }

    /// Whether the threshold is reached by the failures in the window.
    #[cfg(feature = "store")]
    fn holds(&self, config: &Config, now: u64) -> bool {
        let counted = self
            .0
            .iter()
            .filter(|&&at| in_window(config, at, now))
            .count();
        could_open(config, u32::try_from(counted).unwrap_or(u32::MAX))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests;
