//! [`ConfigError`]: the setting [`ConfigBuilder::build`](super::ConfigBuilder::build)
//! refused, its value and the rule it broke.

use std::fmt;

/// A setting refused by [`ConfigBuilder::build`](super::ConfigBuilder::build):
/// names the setting, the value and the rule it broke.
///
/// ```
/// let err = fuse_breaker::Config::builder().half_open_probes(0).build().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid half_open_probes = 0: must be between 1 and 4096"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    setting: &'static str,
    value: String,
    rule: String,
}

impl ConfigError {
    pub(crate) fn new(setting: &'static str, value: String, rule: String) -> Self {
        ConfigError {
            setting,
            value,
            rule,
        }
    }

    /// This error, said of the circuit `key` (a registry's change refused
    /// for one of its circuits).
    pub(crate) fn in_circuit(mut self, key: &str) -> Self {
        self.rule = format!("{} (circuit {key})", self.rule);
        self
    }

    /// The name of the refused setting, as in SPEC §2 (`failure_threshold`, ...).
    ///
    /// ```
    /// let err = fuse_breaker::Config::builder().key_prefix("").build().unwrap_err();
    /// assert_eq!(err.setting(), "key_prefix");
    /// ```
    pub fn setting(&self) -> &'static str {
        self.setting
    }

    /// The refused value, as text.
    ///
    /// ```
    /// let err = fuse_breaker::Config::builder().counted_http_statuses([99]).build().unwrap_err();
    /// assert_eq!(err.value(), "99");
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} = {}: {}",
            self.setting, self.value, self.rule
        )
    }
}

impl std::error::Error for ConfigError {}
