//! The closed-state rules (SPEC §9): what a closed verdict adds to a
//! circuit's window, and when the window opens the circuit.
//!
//! A policy is a module here and a line of the registration below. The
//! module's window type is its [`Rule`]: the state it keeps between
//! verdicts, its pure step ([`Rule::record`]) and what a snapshot shows of
//! it ([`Rule::view`]). The registration writes [`Policy`] (the name
//! settings give) and [`Window`] (what the reference model and the stored
//! model hold, never looking inside). The engine keeps each policy's
//! window in atomics of its own (`count`'s failure claims in the state
//! word and the ring, `rate`'s [`Tallies`]) and asks the policy's pure
//! functions what they mean. docs/design.md, "Adding a policy", lists
//! every file a new one touches.

use std::fmt;

/// The policies, one line each: the [`Policy`] variant, its name in
/// settings, and its window type (its [`Rule`]); the first is the default.
/// Hands the list to `$write`, which writes [`Policy`] (in `kind`) or
/// [`Window`] (in `window`) from it.
macro_rules! registered {
    ($write:ident) => {
        $write! {
            /// Counted failures inside `failure_window` reach
            /// `failure_threshold`; a success clears them (milon/fuse's
            /// rule, the default).
            Count = "count" => Failures,
            /// Once the window holds `minimum_calls` calls, the share of
            /// failed calls reaches `failure_rate` percent, or the share of
            /// slow calls reaches `slow_call_rate` percent. The window is
            /// `window_buckets` buckets covering `failure_window`.
            Rate = "rate" => Buckets,
        }
    };
}
use registered;

mod count;
pub(crate) mod kind;
mod rate;
mod window;

pub use kind::{Policy, UnknownPolicy};
#[cfg(any(test, fuzzing, feature = "store"))]
pub(crate) use window::Window;

use crate::config::Config;

pub(crate) use count::{Failures, Limits};
#[cfg(any(feature = "store", test, fuzzing))]
pub(crate) use rate::bucket;
#[cfg(feature = "store")]
pub(crate) use rate::width;
pub(crate) use rate::{Buckets, Counts, Tallies, is_slow, live, trips};

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
pub(crate) trait Rule: Clone + fmt::Debug + Default + PartialEq {
    /// Whether the window counts every closed call, so that a closed
    /// success adds to it and successes commute: a store takes them as
    /// increments, a cached circuit batches them and sends them later, and
    /// a closed admission never changes the key (`rate`). Otherwise a
    /// success only clears what the window holds (`count`).
    const COUNTS_CALLS: bool;

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

    /// Keeps what a closed circuit keeps when `new` replaces its settings
    /// `old` at `now` while it runs (SPEC §12). The default keeps
    /// everything.
    #[cfg_attr(not(any(test, fuzzing)), allow(dead_code))] // the reference model's
    fn reconfigured(&mut self, old: &Config, new: &Config, now: u64) {
        let _ = (old, new, now);
    }

    /// Whether a verdict recorded at `at` still counts at `now` (a
    /// reporter of SPEC §8's quorum still counts while it does).
    #[cfg(feature = "store")]
    fn covers(&self, config: &Config, at: u64, now: u64) -> bool;

    /// Whether the window as it is at `now` opens the circuit (what a
    /// verdict recorded last found, for a store that recorded it in its
    /// own atomic step).
    #[cfg(feature = "store")]
    fn holds(&self, config: &Config, now: u64) -> bool;

    /// Whether the window has recorded nothing.
    fn is_empty(&self) -> bool;
}

#[cfg(test)]
mod tests;
