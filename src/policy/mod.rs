//! The closed-state rules (SPEC §9): what a closed verdict adds to a
//! circuit's window, and when the window opens the circuit.
//!
//! A rule is a type: its window (the state it keeps between verdicts), its
//! pure step ([`Rule::record`]) and what a snapshot shows of it
//! ([`Rule::view`]). The reference model and the stored model hold a
//! [`Window`] and never look inside it; the engine keeps each rule's state
//! in atomics of its own (the ring for `count`, per-thread lanes for
//! `rate`) and asks the rule's pure functions what they mean. A new rule is
//! a new file here, a variant of [`Policy`] and of [`Window`], and its
//! settings.

mod count;
pub(crate) mod kind;
pub(crate) mod rate;

use std::fmt;

pub use kind::{Policy, UnknownPolicy};

use crate::config::Config;

pub(crate) use count::{Failures, Limits};
#[cfg(feature = "store")]
use count::{could_open, in_window};
#[cfg(feature = "store")]
pub(crate) use rate::bucket;
pub(crate) use rate::{Buckets, Counts, is_slow, live, trips};

/// A closed verdict as a window sees it: whether it is a counted failure,
/// and whether it was slow (only a rule that times calls says so).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) failed: bool,
    pub(crate) slow: bool,
}

impl Outcome {
    /// A closed success that was not slow.
    pub(crate) const SUCCESS: Outcome = Outcome {
        failed: false,
        slow: false,
    };
    /// A counted failure that was not slow.
    #[cfg(test)]
    pub(crate) const FAILURE: Outcome = Outcome {
        failed: true,
        slow: false,
    };
}

/// What a snapshot shows of a window: the counted failures (under
/// `count`), or the calls, failed calls and slow calls (under `rate`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct View {
    /// Times of the counted failures inside the window, oldest first.
    pub(crate) failures: Vec<u64>,
    pub(crate) counts: Counts,
}

/// What a recorded verdict did to a window.
#[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The window changed (a store has something to write).
    pub(crate) changed: bool,
    /// The rule holds: the circuit opens.
    pub(crate) opens: bool,
}

/// A closed-state rule: its window and its pure step.
#[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
pub(crate) trait Rule: Clone + fmt::Debug + PartialEq {
    /// The window of a closed epoch that has recorded nothing.
    fn empty(config: &Config) -> Self;

    /// Records a closed verdict of the window's epoch at `now`.
    fn record(&mut self, config: &Config, outcome: Outcome, now: u64) -> Recorded;

    /// What a snapshot shows of the window at `now`.
    fn view(&self, config: &Config, now: u64) -> View;

    /// Drops what the rule can no longer need at `now` (nothing a decision
    /// reads), so that a window never grows past its bound; whether
    /// anything was dropped. Not a change to write by itself.
    fn prune(&mut self, config: &Config, now: u64) -> bool;
}

/// The window of a closed circuit under its configuration's policy.
#[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Window {
    Count(Failures),
    Rate(Buckets),
}

#[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
impl Window {
    /// The empty window of `config`'s policy.
    pub(crate) fn empty(config: &Config) -> Self {
        match config.policy() {
            Policy::Count => Window::Count(Failures::empty(config)),
            Policy::Rate => Window::Rate(Buckets::empty(config)),
        }
    }

    /// Records a closed verdict at `now` (see [`Rule::record`]). A window of
    /// another policy than `config`'s (a payload written under another
    /// configuration) starts over empty first.
    pub(crate) fn record(&mut self, config: &Config, outcome: Outcome, now: u64) -> Recorded {
        self.fit(config);
        match self {
            Window::Count(failures) => failures.record(config, outcome, now),
            Window::Rate(buckets) => buckets.record(config, outcome, now),
        }
    }

    /// What a snapshot shows at `now` (nothing of a window of another
    /// policy than `config`'s).
    pub(crate) fn view(&self, config: &Config, now: u64) -> View {
        match (self, config.policy()) {
            (Window::Count(failures), Policy::Count) => failures.view(config, now),
            (Window::Rate(buckets), Policy::Rate) => buckets.view(config, now),
            _ => View::default(),
        }
    }

    /// See [`Rule::prune`].
    #[cfg_attr(not(feature = "store"), allow(dead_code))] // the stored model's
    pub(crate) fn prune(&mut self, config: &Config, now: u64) -> bool {
        match self {
            Window::Count(failures) => failures.prune(config, now),
            Window::Rate(buckets) => buckets.prune(config, now),
        }
    }

    /// Whether a verdict recorded at `at` still counts at `now`: a failure
    /// in the window (`count`), a call in a live bucket (`rate`).
    #[cfg(feature = "store")]
    pub(crate) fn covers(&self, config: &Config, at: u64, now: u64) -> bool {
        match self {
            Window::Count(_) => in_window(config, at, now),
            Window::Rate(buckets) => buckets.covers(config, at, now),
        }
    }

    /// Whether the window as it is at `now` opens the circuit: `rate`'s
    /// rule over its live buckets, or `count`'s threshold reached by the
    /// failures in the window (what a failure recorded last found, for a
    /// store that recorded it in its own atomic step).
    #[cfg(feature = "store")]
    pub(crate) fn holds(&self, config: &Config, now: u64) -> bool {
        match self {
            Window::Count(failures) => {
                let view = failures.view(config, now);
                could_open(
                    config,
                    u32::try_from(view.failures.len()).unwrap_or(u32::MAX),
                )
            }
            Window::Rate(buckets) => trips(config, buckets.sum(config, now)),
        }
    }

    /// Empties the window (a new epoch), keeping its policy.
    pub(crate) fn clear(&mut self) {
        match self {
            Window::Count(failures) => *failures = Failures::default(),
            Window::Rate(buckets) => *buckets = Buckets::default(),
        }
    }

    /// Whether the window has recorded nothing.
    #[cfg_attr(not(feature = "store"), allow(dead_code))] // the stored model's
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Window::Count(failures) => failures.times().is_empty(),
            Window::Rate(buckets) => buckets.entries().is_empty(),
        }
    }

    /// Whether the window is of `config`'s policy.
    pub(crate) fn fits(&self, config: &Config) -> bool {
        matches!(
            (self, config.policy()),
            (Window::Count(_), Policy::Count) | (Window::Rate(_), Policy::Rate)
        )
    }

    /// Replaces a window of another policy than `config`'s by an empty one.
    fn fit(&mut self, config: &Config) {
        if !self.fits(config) {
            *self = Window::empty(config);
        }
    }
}

#[cfg(test)]
mod tests;
