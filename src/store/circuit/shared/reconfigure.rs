//! A shared circuit's settings replaced while it runs (SPEC §12, "Shared
//! circuits"): this process's own, with nothing written to the store and
//! nothing reset there. What the parts of the circuit keep of their
//! settings follows: the local fallback takes them in place, and the
//! mirror, the batches' task and the throttle's task read them from
//! [`Live`](crate::store::circuit::live::Live) at each use.

use crate::config::{Config, ConfigError, intern_numbered};
use crate::events::Reconfiguration;
use crate::reconfigure::in_place;
use crate::store::circuit::shared::Shared;

impl Shared {
    /// `Ok` if the circuit and each of its parts can take `config` in
    /// place; otherwise the first setting that cannot change. The store's
    /// circuit keeps a window as the local one does (its payload's, and in
    /// cached mode the batches counted in its buckets), and its throttle
    /// has a task only when `throttle_k` is set: the rules of
    /// [`in_place`] are its own. Its local fallback is asked besides (it
    /// runs other settings if it was reconfigured on its own), and named
    /// when it is what refuses.
    pub(in crate::store) fn takes_in_place(&self, config: &Config) -> Result<(), ConfigError> {
        in_place(self.live.get(), config)?;
        self.local.takes_in_place(config).map_err(|refused| {
            ConfigError::new(
                refused.setting(),
                refused.value().to_owned(),
                format!(
                    "its local fallback cannot take it in place, running other settings ({refused})"
                ),
            )
        })
    }

    /// Puts `config` in force (see
    /// [`Fuse::reconfigure`](crate::Fuse::reconfigure)), the event naming
    /// `by`: the local fallback first (with no event of its own: the
    /// change is this one), then the settings every decision reads, then
    /// the mirror's quiet permit. Nothing is written to the store and no
    /// call waits; two reconfigurations of one circuit take turns.
    pub(in crate::store) fn reconfigure_by(
        &self,
        config: Config,
        by: &str,
    ) -> Result<(), ConfigError> {
        let _one_at_a_time = self.live.lock();
        self.takes_in_place(&config)?;
        let from = self.live.get();
        let (to, number) = intern_numbered(config);
        self.local.backing.put_in_force(to, number);
        if std::ptr::eq(from, to) {
            return Ok(());
        }
        self.live.set(number);
        if let Some(cache) = &self.cache {
            cache.reconfigured();
        }
        self.listeners.emit_reconfigure(&Reconfiguration {
            key: self.names.key(),
            by,
            from,
            to,
        });
        Ok(())
    }
}
