//! What the builders of both registries (in-process and shared) check in
//! the same way: the configuration of each name and the capacity.

use std::collections::HashMap;

use crate::config::Overrides;
use crate::config::{Config, ConfigError};

/// The configuration a registry gives each name: its defaults, and for a
/// name given overrides, the defaults with them, checked once when the
/// registry is built.
#[derive(Clone, Debug, Default)]
pub(crate) struct Configs {
    defaults: Config,
    named: HashMap<String, Config>,
}

impl Configs {
    /// `defaults`, and each name's `overrides` applied to them (given
    /// twice for one name, the later wins), or the first that makes an
    /// invalid configuration.
    pub(crate) fn new(
        defaults: Config,
        overrides: &[(String, Overrides)],
    ) -> Result<Self, ConfigError> {
        let mut named = HashMap::with_capacity(overrides.len());
        for (name, overrides) in overrides {
            named.insert(name.clone(), overrides.apply(&defaults)?);
        }
        Ok(Configs { defaults, named })
    }

    /// `defaults` for every name.
    pub(crate) fn defaults_only(defaults: Config) -> Self {
        Configs {
            defaults,
            named: HashMap::new(),
        }
    }

    /// The configuration of the circuits named `name`.
    pub(crate) fn of(&self, name: &str) -> &Config {
        self.named.get(name).unwrap_or(&self.defaults)
    }

    /// The configuration of every name without overrides.
    pub(crate) fn defaults(&self) -> &Config {
        &self.defaults
    }

    /// The names with overrides, sorted (for `Debug`).
    pub(crate) fn named(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.named.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

/// The rule of `max_circuits`: at least one.
pub(crate) fn check_max_circuits(max: usize) -> Result<(), ConfigError> {
    if max == 0 {
        return Err(ConfigError::new(
            "max_circuits",
            max.to_string(),
            "must be at least 1".to_owned(),
        ));
    }
    Ok(())
}
