//! How `fuse status` describes a circuit under the `rate` policy: its
//! window's calls, failed and slow calls, and when the rule opens it
//! (`rate 12/40 failed (30 %, opens at 50 % of >= 20)`).

use std::fmt;
use std::time::Duration;

use fuse_breaker::admin::CircuitView;
use fuse_breaker::{Config, Snapshot, config::Policy};

/// A rate circuit's window and its rule's thresholds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) calls: u64,
    pub(crate) failed: u64,
    pub(crate) slow: u64,
    /// Percent.
    failure_rate: u32,
    minimum_calls: u32,
    /// Percent.
    slow_call_rate: u32,
    /// `None`: no call is slow.
    slow_call: Option<Duration>,
}

impl Window {
    /// The window of a circuit an admin API showed, if it is a rate one.
    pub(crate) fn of_view(view: &CircuitView) -> Option<Window> {
        let config = &view.config;
        config.is_rate().then(|| Window {
            calls: view.calls,
            failed: view.failed,
            slow: view.slow,
            failure_rate: config.failure_rate,
            minimum_calls: config.minimum_calls,
            slow_call_rate: config.slow_call_rate,
            slow_call: config.slow_call_duration_ms.map(Duration::from_millis),
        })
    }

    /// The window of a circuit read from a store under `config`, if it is
    /// a rate one.
    pub(crate) fn of_snapshot(snapshot: &Snapshot, config: &Config) -> Option<Window> {
        (config.policy() == Policy::Rate).then(|| Window {
            calls: snapshot.calls,
            failed: snapshot.failed,
            slow: snapshot.slow,
            failure_rate: config.failure_rate(),
            minimum_calls: config.minimum_calls(),
            slow_call_rate: config.slow_call_rate(),
            slow_call: config.slow_call_duration(),
        })
    }

    /// The rule's thresholds as JSON fields, beside the window's counts.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "policy": Policy::Rate.as_str(),
            "calls": self.calls,
            "failed": self.failed,
            "slow": self.slow,
            "failure_rate": self.failure_rate,
            "minimum_calls": self.minimum_calls,
            "slow_call_rate": self.slow_call_rate,
            "slow_call_duration_ms": self.slow_call.map(|slow| slow.as_millis()),
        })
    }
}

/// `part` of `calls` in whole percent, rounded down (so that a percent
/// shown at the threshold has reached it); `None` without calls.
fn percent(part: u64, calls: u64) -> Option<u128> {
    (calls > 0).then(|| u128::from(part) * 100 / u128::from(calls))
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rate {}/{} failed (", self.failed, self.calls)?;
        if let Some(share) = percent(self.failed, self.calls) {
            write!(f, "{share} %, ")?;
        }
        write!(
            f,
            "opens at {} % of >= {})",
            self.failure_rate, self.minimum_calls
        )?;
        if let Some(slow_call) = self.slow_call {
            write!(
                f,
                ", {}/{} slow over {} (",
                self.slow,
                self.calls,
                humantime::format_duration(slow_call)
            )?;
            if let Some(share) = percent(self.slow, self.calls) {
                write!(f, "{share} %, ")?;
            }
            write!(f, "opens at {} %)", self.slow_call_rate)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
