//! Replacing a registry's settings while its circuits run (SPEC §12): one
//! name's, or every name's at once (a reload), whatever the circuits'
//! backing (a shared registry's circuits take them in this process alone).

use std::sync::Arc;

use super::{Configs, Registry, each_circuit};
use crate::backing::Backing;
use crate::config::{Config, ConfigError, Overrides};
use crate::fuse::Fuse;

impl<B: Backing> Registry<B> {
    /// Applies `overrides` on top of the current settings of `name` (the
    /// settings they leave out keep their values) and puts the result in
    /// force for every circuit named `name`, whatever its operation, and
    /// for those made from now on (see [`Fuse::reconfigure`] for what a
    /// running circuit keeps). Refused whole, naming the setting (and the
    /// circuit, for one that cannot take it in place), with nothing
    /// changed. Returns the name's new settings.
    ///
    /// ```
    /// use fuse_breaker::{Config, Registry, config::Overrides};
    ///
    /// let registry = Registry::new(Config::default());
    /// let charge = registry.get_operation("billing", "charge");
    /// let stricter = Overrides { failure_threshold: Some(3), ..Overrides::default() };
    /// registry.reconfigure("billing", &stricter)?;
    /// assert_eq!(charge.config().failure_threshold(), 3);
    /// assert_eq!(registry.get_operation("billing", "refund").config().failure_threshold(), 3);
    /// assert_eq!(registry.get("search").config().failure_threshold(), 8);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    ///
    /// A registry of shared circuits (feature `store`) puts the settings
    /// in force in this process: its circuits' keys in the store are not
    /// written.
    ///
    /// ```
    /// # #[cfg(feature = "store")]
    /// # futures::executor::block_on(async {
    /// use std::sync::Arc;
    /// use fuse_breaker::{Registry, State, config::Overrides};
    /// use fuse_breaker::store::MemoryStore;
    ///
    /// let registry = Registry::builder().store(Arc::new(MemoryStore::new())).build()?;
    /// let charge = registry.get_operation("billing", "charge");
    /// let stricter = Overrides { failure_threshold: Some(1), ..Overrides::default() };
    /// registry.reconfigure("billing", &stricter)?;
    /// assert_eq!(charge.config().failure_threshold(), 1);
    /// charge.try_acquire().await?.failure().await?;
    /// assert_eq!(charge.state().await?, State::Open);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn reconfigure(&self, name: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
        self.reconfigure_by(name, overrides, "registry")
    }

    /// [`reconfigure`](Self::reconfigure), the events naming `by`.
    pub(crate) fn reconfigure_by(
        &self,
        name: &str,
        overrides: &Overrides,
        by: &str,
    ) -> Result<Config, ConfigError> {
        let changed = {
            // Creations wait: none is made between the check and the swap.
            let _held = self.lock_held();
            let configs = self.configs.load_full();
            let config = overrides.apply(configs.of(name))?;
            let named: Vec<Arc<Fuse<B>>> = each_circuit(&self.circuits.pin())
                .filter(|fuse| fuse.name() == name)
                .cloned()
                .collect();
            let changed: Vec<(Arc<Fuse<B>>, Config)> = named
                .into_iter()
                .map(|fuse| (fuse, config.clone()))
                .collect();
            check(&changed)?;
            self.configs.store(Arc::new(configs.with(name, config)));
            changed
        };
        apply(&changed, by)?;
        Ok(self.config_for(name).clone())
    }

    /// Replaces the registry's settings whole: `defaults` for every name,
    /// each name's `overrides` applied to them (given twice for one name,
    /// the later wins), as [`RegistryBuilder`](crate::RegistryBuilder)
    /// takes them. Every circuit that runs the registry's settings for its
    /// name takes its name's new ones in place; a name no longer given
    /// overrides runs on the new defaults; a circuit given settings of its
    /// own ([`get_with_config`](Self::get_with_config), or
    /// [`Fuse::reconfigure`]) keeps them. Refused whole, naming the
    /// setting (and the circuit), with nothing changed.
    ///
    /// ```
    /// use fuse_breaker::{Config, Registry, config::Overrides};
    ///
    /// let registry = Registry::builder()
    ///     .overrides("billing", Overrides { failure_threshold: Some(3), ..Overrides::default() })
    ///     .build()?;
    /// let (billing, search) = (registry.get("billing"), registry.get("search"));
    /// let defaults = Config::builder().failure_threshold(5).build()?;
    /// registry.reload(defaults, &[])?;
    /// assert_eq!(billing.config().failure_threshold(), 5);
    /// assert_eq!(search.config().failure_threshold(), 5);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    ///
    /// A registry of shared circuits (feature `store`) reloads in this
    /// process alone: nothing is written to the store.
    ///
    /// ```
    /// # #[cfg(feature = "store")]
    /// # {
    /// use std::sync::Arc;
    /// use fuse_breaker::{Config, Registry};
    /// use fuse_breaker::store::MemoryStore;
    ///
    /// let registry = Registry::builder().store(Arc::new(MemoryStore::new())).build()?;
    /// let billing = registry.get("billing");
    /// registry.reload(Config::builder().failure_threshold(5).build()?, &[])?;
    /// assert_eq!(billing.config().failure_threshold(), 5);
    /// assert_eq!(registry.get("search").config().failure_threshold(), 5);
    /// # }
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn reload(
        &self,
        defaults: Config,
        overrides: &[(String, Overrides)],
    ) -> Result<(), ConfigError> {
        self.reload_by(defaults, overrides, "reload")
    }

    /// [`reload`](Self::reload), the events naming `by`.
    pub(crate) fn reload_by(
        &self,
        defaults: Config,
        overrides: &[(String, Overrides)],
        by: &str,
    ) -> Result<(), ConfigError> {
        let changed = {
            let _held = self.lock_held();
            let old = self.configs.load_full();
            let new = Configs::new(defaults, overrides)?;
            let mut changed = Vec::new();
            let circuits = self.circuits.pin();
            let overflow = self.overflow.get();
            for fuse in each_circuit(&circuits).chain(overflow) {
                let (from, to) = (old.of(fuse.name()), new.of(fuse.name()));
                if std::ptr::eq(fuse.config(), from) && !std::ptr::eq(from, to) {
                    changed.push((fuse.clone(), to.clone()));
                }
            }
            check(&changed)?;
            self.configs.store(Arc::new(new));
            changed
        };
        apply(&changed, by)
    }
}

/// `Ok` if every circuit can take its new settings in place.
fn check<B: Backing>(changed: &[(Arc<Fuse<B>>, Config)]) -> Result<(), ConfigError> {
    for (fuse, config) in changed {
        fuse.takes_in_place(config)
            .map_err(|refused| refused.in_circuit(fuse.key()))?;
    }
    Ok(())
}

/// Puts each circuit's new settings in force (checked by [`check`]), the
/// events naming `by`.
fn apply<B: Backing>(changed: &[(Arc<Fuse<B>>, Config)], by: &str) -> Result<(), ConfigError> {
    for (fuse, config) in changed {
        fuse.reconfigure_by(config.clone(), by)
            .map_err(|refused| refused.in_circuit(fuse.key()))?;
    }
    Ok(())
}

impl<B: Backing> Registry<B> {
    /// What decides for the registry's circuits while their store does
    /// not answer; `None` for a registry whose circuits live in this
    /// process (a settings file's reload checks it has not changed).
    #[cfg(feature = "config-file")]
    pub(crate) fn store_fallback(&self) -> Option<crate::fallback::Fallback> {
        <B as crate::backing::sealed::Sealed>::fallback(&self.options)
    }
}
