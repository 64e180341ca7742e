//! [`ConfigBuilder`]: a base configuration its setters change (written by
//! the list of settings in `overrides.rs`), checked once by `build`, and
//! how a [`Config`] becomes one.

use super::{Config, ConfigError};

impl Config {
    /// A builder that starts from the defaults.
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().half_open_probes(1).build()?;
    /// assert_eq!(config.half_open_probes(), 1);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder {
            config: Config::default(),
        }
    }

    /// A builder that starts from this configuration, to derive a variant.
    ///
    /// ```
    /// let base = fuse_breaker::Config::default();
    /// let strict = base.to_builder().failure_threshold(2).build()?;
    /// assert_eq!(strict.failure_threshold(), 2);
    /// assert_eq!(strict.half_open_probes(), base.half_open_probes());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder {
            config: self.clone(),
        }
    }
}

/// Builds a [`Config`]: a base the setters change (one setter per setting,
/// written by the list of settings); [`build`](Self::build) checks every
/// setting.
///
/// ```
/// use std::time::Duration;
/// let config = fuse_breaker::Config::builder()
///     .failure_threshold(3)
///     .failure_window(Duration::from_secs(10))
///     .open_duration(Duration::from_secs(5))
///     .half_open_probes(1)
///     .counted_http_statuses([500, 502, 503])
///     .count_timeouts(true)
///     .count_connection_errors(true)
///     .count_http_500(false)
///     .key_prefix("svc")
///     .build()?;
/// assert_eq!(config.key_prefix(), "svc");
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ConfigBuilder {
    /// The configuration so far, checked by `build`.
    pub(crate) config: Config,
}

impl ConfigBuilder {
    /// Checks every setting and returns the configuration, or the first
    /// invalid setting with its value.
    ///
    /// ```
    /// let err = fuse_breaker::Config::builder().failure_threshold(0).build().unwrap_err();
    /// assert_eq!(err.setting(), "failure_threshold");
    /// assert_eq!(err.value(), "0");
    /// ```
    pub fn build(self) -> Result<Config, ConfigError> {
        self.config.check()?;
        Ok(self.config)
    }
}
