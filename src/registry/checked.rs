//! What the builders of both registries (in-process and shared) check in
//! the same way: the configuration of each name and the capacity.

use std::collections::HashMap;

use crate::config::Overrides;
use crate::config::{Config, ConfigError, intern};

/// The configuration a registry gives each name: its defaults, and for a
/// name given overrides, the defaults with them, checked once when the
/// registry is built (or reloaded), each the interned copy.
#[derive(Clone, Debug)]
pub(crate) struct Configs {
    defaults: &'static Config,
    named: HashMap<String, &'static Config>,
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
            named.insert(name.clone(), intern(overrides.apply(&defaults)?));
        }
        Ok(Configs {
            defaults: intern(defaults),
            named,
        })
    }

    /// `defaults` for every name.
    pub(crate) fn defaults_only(defaults: Config) -> Self {
        Configs {
            defaults: intern(defaults),
            named: HashMap::new(),
        }
    }

    /// The configuration of the circuits named `name`.
    pub(crate) fn of(&self, name: &str) -> &'static Config {
        self.named.get(name).copied().unwrap_or(self.defaults)
    }

    /// The configuration of every name without overrides.
    pub(crate) fn defaults(&self) -> &'static Config {
        self.defaults
    }

    /// These configurations with `name`'s replaced by `config`.
    pub(crate) fn with(&self, name: &str, config: Config) -> Self {
        let mut named = self.named.clone();
        named.insert(name.to_owned(), intern(config));
        Configs {
            defaults: self.defaults,
            named,
        }
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
