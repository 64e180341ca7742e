//! [`Policy`]: the name of a closed-state rule, as settings write it.

use std::fmt;

/// Which rule opens a closed circuit (SPEC §9).
///
/// - [`Count`](Policy::Count) (the default, milon/fuse's rule): counted
///   failures inside `failure_window` reach `failure_threshold`; a success
///   clears them.
/// - [`Rate`](Policy::Rate): once the window holds `minimum_calls` calls,
///   the share of failed calls reaches `failure_rate` percent, or the share
///   of slow calls reaches `slow_call_rate` percent. The window is
///   `window_buckets` buckets covering `failure_window`.
///
/// ```
/// use fuse_breaker::{Config, config::Policy};
///
/// let config = Config::builder().policy(Policy::Rate).failure_rate(25).build()?;
/// assert_eq!(config.policy(), Policy::Rate);
/// assert_eq!(Policy::Rate.as_str(), "rate");
/// assert_eq!("count".parse::<Policy>(), Ok(Policy::Count));
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Policy {
    /// Counted failures inside the window reach the threshold.
    #[default]
    Count,
    /// The share of failed or slow calls among the recent calls.
    Rate,
}

impl Policy {
    /// Every policy, in the order the settings document them.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Policy::ALL.len(), 2);
    /// ```
    pub const ALL: [Policy; 2] = [Policy::Count, Policy::Rate];

    /// The policy's name in settings and views: `count` or `rate`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Policy::Count.as_str(), "count");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Count => "count",
            Policy::Rate => "rate",
        }
    }
}

impl Policy {
    /// Whether the policy's window counts every closed call (`rate`), so
    /// that a closed success adds to it and successes commute: a store
    /// takes them as increments, a cached circuit batches them and sends
    /// them later, and a closed admission never changes the key. Under
    /// `count` a success only clears the failures.
    #[cfg_attr(not(any(feature = "store", feature = "metrics")), allow(dead_code))]
    pub(crate) fn counts_calls(self) -> bool {
        matches!(self, Policy::Rate)
    }
}

impl fmt::Display for Policy {
    /// The policy's name.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Policy::Rate.to_string(), "rate");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of reading a [`Policy`] from a name that is not one.
///
/// ```
/// let error = "ratio".parse::<fuse_breaker::config::Policy>().unwrap_err();
/// assert_eq!(error.to_string(), "unknown policy \"ratio\": expected count or rate");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown policy {:?}: expected count or rate", self.0)
    }
}

impl std::error::Error for UnknownPolicy {}

impl std::str::FromStr for Policy {
    type Err = UnknownPolicy;

    /// Reads `count` or `rate` (ASCII case ignored, spaces around trimmed).
    ///
    /// ```
    /// assert_eq!(" Rate ".parse::<fuse_breaker::config::Policy>(), Ok(fuse_breaker::config::Policy::Rate));
    /// ```
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim();
        Policy::ALL
            .into_iter()
            .find(|policy| policy.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| UnknownPolicy(name.to_owned()))
    }
}
