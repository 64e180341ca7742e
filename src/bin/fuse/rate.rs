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
mod tests {
    use super::*;

    fn rate(calls: u64, failed: u64, slow: u64, slow_call: Option<Duration>) -> Window {
        Window {
            calls,
            failed,
            slow,
            failure_rate: 50,
            minimum_calls: 20,
            slow_call_rate: 100,
            slow_call,
        }
    }

    #[test]
    fn a_rate_circuit_is_described_with_its_share_and_its_rule() {
        assert_eq!(
            rate(40, 12, 0, None).to_string(),
            "rate 12/40 failed (30 %, opens at 50 % of >= 20)"
        );
        assert_eq!(
            rate(40, 12, 3, Some(Duration::from_secs(2))).to_string(),
            "rate 12/40 failed (30 %, opens at 50 % of >= 20), \
             3/40 slow over 2s (7 %, opens at 100 %)"
        );
        // No calls: no share to show.
        assert_eq!(
            rate(0, 0, 0, None).to_string(),
            "rate 0/0 failed (opens at 50 % of >= 20)"
        );
        // Rounded down: 2 of 3 is 66 %, never above what the rule sees.
        assert_eq!(
            rate(3, 2, 0, None).to_string(),
            "rate 2/3 failed (66 %, opens at 50 % of >= 20)"
        );
        // Counts as large as a store may hold do not overflow.
        assert!(
            rate(u64::MAX, u64::MAX, 0, None)
                .to_string()
                .contains("100 %")
        );
    }

    #[test]
    fn only_a_rate_circuit_is_described_so() {
        let count = Config::default();
        let mut snapshot = fuse_breaker::Fuse::new("n", count.clone()).snapshot();
        assert_eq!(Window::of_snapshot(&snapshot, &count), None);
        let config = Config::builder()
            .policy(Policy::Rate)
            .failure_rate(25)
            .build()
            .unwrap();
        (snapshot.calls, snapshot.failed, snapshot.slow) = (8, 2, 1);
        let rate = Window::of_snapshot(&snapshot, &config).expect("a rate circuit");
        assert_eq!(
            rate.to_string(),
            "rate 2/8 failed (25 %, opens at 25 % of >= 20)"
        );
        let json = rate.json();
        assert_eq!(json["policy"], "rate");
        assert_eq!((&json["calls"], &json["failed"]), (&8.into(), &2.into()));
        assert_eq!(json["slow_call_duration_ms"], serde_json::Value::Null);

        let view = fuse_breaker::admin::CircuitView::of(&fuse_breaker::Fuse::new("n", config));
        assert_eq!(
            Window::of_view(&view).map(|rate| rate.to_string()),
            Some("rate 0/0 failed (opens at 25 % of >= 20)".to_owned())
        );
    }
}
