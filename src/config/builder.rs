//! How a [`ConfigBuilder`] starts (from the defaults or from a
//! [`Config`]) and ends (checked once by `build`); the type and its
//! setters are the list of settings' (`overrides.rs`).

use super::{Config, ConfigBuilder, ConfigError};

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
