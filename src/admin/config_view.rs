//! [`ConfigView`]: a circuit's configuration as the admin API gives it,
//! the rule that opens it (SPEC §9), how long it stays open (SPEC §10)
//! and how it grades its admission (SPEC §11) included. The fields the
//! `rate` policy, recovery and graded admission added read as an older
//! API's circuit behaved when it leaves them out, so the `fuse` command
//! reads either.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::Config;
use crate::factor::Factor;
use crate::policy::Policy;

/// A circuit's configuration as the admin API gives it.
///
/// ```
/// let view = fuse_breaker::admin::ConfigView::of(&fuse_breaker::Config::default());
/// assert_eq!(view.failure_threshold, 8);
/// assert_eq!((view.policy.as_str(), view.failure_rate, view.slow_call_duration_ms), ("count", 50, None));
/// assert_eq!((view.open_backoff.to_f64(), view.max_open_duration_ms), (1.0, 30_000));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
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
    /// How much longer each opening in a row lasts than the one before
    /// (SPEC §10), a JSON number (1 when an older API leaves it out).
    #[serde(default = "one", with = "number")]
    pub open_backoff: Factor,
    /// The longest an opening lasts, in milliseconds (the open duration
    /// when an older API leaves it out).
    #[serde(default = "unstated")]
    pub max_open_duration_ms: u64,
    /// The share of an opening a random draw may take off it, a JSON
    /// number from 0 to 1 (0 when an older API leaves it out).
    #[serde(default, with = "number")]
    pub open_jitter: Factor,
    /// How long a half-open circuit waits for its probes before it starts
    /// half-open over, in milliseconds (the open duration when an older
    /// API leaves it out).
    #[serde(default = "unstated")]
    pub probe_timeout_ms: u64,
    /// A shared circuit's quorum (SPEC §8): the distinct processes whose
    /// failures it takes to open it (1 when an older API leaves it out).
    #[serde(default = "min_reporters")]
    pub min_reporters: u32,
    /// How long a circuit that closes from half-open ramps its admitted
    /// share up to every call, in milliseconds (SPEC §11); `None` for no
    /// ramp (also when an older API leaves it out).
    #[serde(default)]
    pub ramp_up_ms: Option<u64>,
    /// The share of calls, in percent, a ramp admits from its start (10
    /// when an older API leaves it out).
    #[serde(default = "ramp_up_floor")]
    pub ramp_up_floor: u32,
    /// Adaptive throttling's K (SPEC §11), a JSON number from 1 to 10;
    /// `None` for no throttling (also when an older API leaves it out).
    #[serde(default, with = "optional_number")]
    pub throttle_k: Option<Factor>,
    /// The largest share of calls, in percent, throttling sheds (90 when
    /// an older API leaves it out).
    #[serde(default = "max_throttle")]
    pub max_throttle: u32,
}

impl Serialize for ConfigView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ConfigView::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for ConfigView {
    /// The fields as they are; the durations recovery added, when an
    /// older API leaves them out, as its circuits behaved: every opening
    /// lasted the open duration, and so did a half-open circuit's wait.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut view = ConfigView::deserialize(deserializer)?;
        for stated in [&mut view.max_open_duration_ms, &mut view.probe_timeout_ms] {
            if *stated == UNSTATED {
                *stated = view.open_duration_ms;
            }
        }
        Ok(view)
    }
}

impl ConfigView {
    /// `config` as the API shows it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, config::Policy, admin::ConfigView};
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
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
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
            open_backoff: config.open_backoff(),
            max_open_duration_ms: millis(config.max_open_duration()),
            open_jitter: config.open_jitter(),
            probe_timeout_ms: millis(config.probe_timeout()),
            min_reporters: config.min_reporters(),
            ramp_up_ms: config.ramp_up().map(millis),
            ramp_up_floor: config.ramp_up_floor(),
            throttle_k: config.throttle_k(),
            max_throttle: config.max_throttle(),
        }
    }

    /// Whether a closed circuit under this configuration grades its
    /// admission (SPEC §11): it ramps up after recovering, or throttles.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, admin::ConfigView};
    /// assert!(!ConfigView::of(&Config::default()).is_graded());
    /// let ramp = Config::builder().ramp_up(Duration::from_secs(30)).build()?;
    /// assert!(ConfigView::of(&ramp).is_graded());
    /// let throttle = Config::builder().throttle_k(2.0).build()?;
    /// assert!(ConfigView::of(&throttle).is_graded());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn is_graded(&self) -> bool {
        self.ramp_up_ms.is_some() || self.throttle_k.is_some()
    }

    /// Whether the circuit opens on the share of failed or slow calls (the
    /// `rate` policy).
    ///
    /// ```
    /// use fuse_breaker::{Config, config::Policy, admin::ConfigView};
    /// assert!(!ConfigView::of(&Config::default()).is_rate());
    /// let rate = Config::builder().policy(Policy::Rate).build()?;
    /// assert!(ConfigView::of(&rate).is_rate());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
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

fn min_reporters() -> u32 {
    Config::default().min_reporters()
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

fn ramp_up_floor() -> u32 {
    Config::default().ramp_up_floor()
}

fn max_throttle() -> u32 {
    Config::default().max_throttle()
}

/// One: what a factor an older API leaves out reads as (an opening's
/// backoff, a circuit's admitted share).
pub(super) fn one() -> Factor {
    Factor::ONE
}

/// What a duration recovery added reads as while an older API's answer
/// leaves it out, until it is given the open duration (no setting lasts
/// this many milliseconds: the longest is a year).
const UNSTATED: u64 = u64::MAX;

fn unstated() -> u64 {
    UNSTATED
}

/// A [`Factor`] as a JSON number (`2`, `1.5`, `0.2`), read back to the
/// nearest millionth; a number no factor holds (negative, not finite, or
/// too large) is refused.
pub(super) mod number {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::factor::Factor;

    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
    pub(in crate::admin) fn serialize<S: Serializer>(
        factor: &Factor,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(factor.to_f64())
    }

    pub(in crate::admin) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Factor, D::Error> {
        let value = f64::deserialize(deserializer)?;
        let factor = Factor::from_f64(value);
        // Within half a millionth of the factor it reads as: one a factor
        // holds (`from_f64` gives the largest factor for any other).
        if (factor.to_f64() - value).abs() <= 0.5e-6 {
            Ok(factor)
        } else {
            Err(serde::de::Error::custom(format_args!(
                "{value} is not a factor (a number from 0 to {})",
                Factor::from_millionths(u32::MAX)
            )))
        }
    }
}

/// An optional [`Factor`] as a JSON number or `null`, each number read as
/// [`number`] reads it.
mod optional_number {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::factor::Factor;

    #[allow(clippy::ref_option, clippy::trivially_copy_pass_by_ref)] // serde's signature
    pub(super) fn serialize<S: Serializer>(
        factor: &Option<Factor>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match factor {
            Some(factor) => super::number::serialize(factor, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Factor>, D::Error> {
        #[derive(Deserialize)]
        struct Number(#[serde(with = "super::number")] Factor);

        Ok(Option::<Number>::deserialize(deserializer)?.map(|Number(factor)| factor))
    }
}

#[cfg(test)]
mod tests;
