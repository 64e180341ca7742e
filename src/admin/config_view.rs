//! [`ConfigView`]: a circuit's configuration as the admin API gives it,
//! the rule that opens it (SPEC §9) included. The fields the `rate`
//! policy added read their defaults when an older API leaves them out, so
//! the `fuse` command reads either.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::policy::Policy;

/// A circuit's configuration as the admin API gives it.
///
/// ```
/// let view = fuse_breaker::admin::ConfigView::of(&fuse_breaker::Config::default());
/// assert_eq!(view.failure_threshold, 8);
/// assert_eq!((view.policy.as_str(), view.failure_rate, view.slow_call_duration_ms), ("count", 50, None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConfigView {
    /// Counted failures inside the window that open the circuit (under
    /// the `count` policy).
    pub failure_threshold: u32,
    /// The window, in milliseconds.
    pub failure_window_ms: u64,
    /// How long the circuit stays open, in milliseconds.
    pub open_duration_ms: u64,
    /// Probes at once, and successes that close it.
    pub half_open_probes: u32,
    /// The rule that opens the closed circuit: `count` or `rate` (`count`
    /// when an older API leaves it out).
    #[serde(default = "count")]
    pub policy: String,
    /// Under `rate`: the percent of failed calls that opens it.
    #[serde(default = "failure_rate")]
    pub failure_rate: u32,
    /// Under `rate`: the calls the window must hold before a rate is
    /// judged.
    #[serde(default = "minimum_calls")]
    pub minimum_calls: u32,
    /// Under `rate`: the buckets the window is kept in.
    #[serde(default = "window_buckets")]
    pub window_buckets: u32,
    /// Under `rate`: how long a call takes to be slow, in milliseconds;
    /// `None` when no call is slow.
    #[serde(default)]
    pub slow_call_duration_ms: Option<u64>,
    /// Under `rate`: the percent of slow calls that opens it.
    #[serde(default = "slow_call_rate")]
    pub slow_call_rate: u32,
}

impl ConfigView {
    /// `config` as the API shows it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, Policy, admin::ConfigView};
    ///
    /// let view = ConfigView::of(&Config::default());
    /// assert_eq!(view.half_open_probes, Config::default().half_open_probes());
    ///
    /// let rate = Config::builder()
    ///     .policy(Policy::Rate)
    ///     .slow_call_duration(Duration::from_millis(1500))
    ///     .build()?;
    /// let view = ConfigView::of(&rate);
    /// assert_eq!((view.policy.as_str(), view.slow_call_duration_ms), ("rate", Some(1500)));
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn of(config: &Config) -> Self {
        ConfigView {
            failure_threshold: config.failure_threshold(),
            failure_window_ms: millis(config.failure_window()),
            open_duration_ms: millis(config.open_duration()),
            half_open_probes: config.half_open_probes(),
            policy: config.policy().as_str().to_owned(),
            failure_rate: config.failure_rate(),
            minimum_calls: config.minimum_calls(),
            window_buckets: config.window_buckets(),
            slow_call_duration_ms: config.slow_call_duration().map(millis),
            slow_call_rate: config.slow_call_rate(),
        }
    }

    /// Whether the circuit opens on the share of failed or slow calls (the
    /// `rate` policy).
    ///
    /// ```
    /// use fuse_breaker::{Config, Policy, admin::ConfigView};
    /// assert!(!ConfigView::of(&Config::default()).is_rate());
    /// let rate = Config::builder().policy(Policy::Rate).build()?;
    /// assert!(ConfigView::of(&rate).is_rate());
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn is_rate(&self) -> bool {
        self.policy == Policy::Rate.as_str()
    }
}

/// `duration` in whole milliseconds (saturating), as the views give times.
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn count() -> String {
    Policy::Count.as_str().to_owned()
}

fn failure_rate() -> u32 {
    Config::default().failure_rate()
}

fn minimum_calls() -> u32 {
    Config::default().minimum_calls()
}

fn window_buckets() -> u32 {
    Config::default().window_buckets()
}

fn slow_call_rate() -> u32 {
    Config::default().slow_call_rate()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_api_s_configuration_reads_as_count() {
        let old = r#"{"failure_threshold": 3, "failure_window_ms": 1000,
                      "open_duration_ms": 500, "half_open_probes": 1}"#;
        let view: ConfigView = serde_json::from_str(old).unwrap();
        assert_eq!(view.failure_threshold, 3);
        assert!(!view.is_rate());
        let defaults = ConfigView::of(&Config::default());
        assert_eq!(
            (
                view.failure_rate,
                view.minimum_calls,
                view.window_buckets,
                view.slow_call_duration_ms,
                view.slow_call_rate
            ),
            (
                defaults.failure_rate,
                defaults.minimum_calls,
                defaults.window_buckets,
                defaults.slow_call_duration_ms,
                defaults.slow_call_rate
            )
        );
    }

    #[test]
    fn every_rate_setting_is_shown_and_reads_back() {
        let config = Config::builder()
            .policy(Policy::Rate)
            .failure_rate(30)
            .minimum_calls(40)
            .window_buckets(6)
            .slow_call_duration(std::time::Duration::from_secs(2))
            .slow_call_rate(70)
            .build()
            .unwrap();
        let view = ConfigView::of(&config);
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "failure_threshold": 8, "failure_window_ms": 60000,
                "open_duration_ms": 30000, "half_open_probes": 2,
                "policy": "rate", "failure_rate": 30, "minimum_calls": 40,
                "window_buckets": 6, "slow_call_duration_ms": 2000, "slow_call_rate": 70,
            })
        );
        assert_eq!(serde_json::from_value::<ConfigView>(json).unwrap(), view);
    }
}
