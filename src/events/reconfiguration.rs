//! [`Reconfiguration`]: a running circuit's settings replaced (SPEC §12),
//! what [`Listener::on_reconfigure`](super::Listener::on_reconfigure)
//! receives.

use crate::config::Config;

/// A running circuit's settings were replaced (SPEC §12): which circuit,
/// who asked, and what changed. Reached as
/// `fuse_breaker::events::Reconfiguration`.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use fuse_breaker::events::{Listener, Reconfiguration, Transition};
/// use fuse_breaker::{Config, Fuse};
///
/// struct Audit(Mutex<Vec<String>>);
/// impl Listener for Audit {
///     fn on_transition(&self, _: &Transition) {}
///     fn on_reconfigure(&self, change: &Reconfiguration) {
///         for c in change.changes() {
///             let line = format!("{} by {}: {} {} -> {}", change.key, change.by, c.setting, c.from, c.to);
///             self.0.lock().unwrap().push(line);
///         }
///     }
/// }
///
/// let audit = Arc::new(Audit(Mutex::default()));
/// let fuse = Fuse::new("billing", Config::default());
/// fuse.on_transition(audit.clone());
/// fuse.reconfigure(Config::builder().failure_threshold(4).build()?)?;
/// assert_eq!(*audit.0.lock().unwrap(), ["fuse:billing by code: failure_threshold 8 -> 4"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Reconfiguration<'a> {
    /// The circuit's key.
    pub key: &'a str,
    /// Who asked: `code` for [`Fuse::reconfigure`](crate::Fuse::reconfigure),
    /// `reload` for a registry's reload, `registry` for a registry's
    /// per-name change, or what the admin API names its caller.
    pub by: &'a str,
    /// The settings before.
    pub from: &'a Config,
    /// The settings now.
    pub to: &'a Config,
}

impl Reconfiguration<'_> {
    /// Each setting that changed, in the order of SPEC §2.
    ///
    /// ```
    /// use fuse_breaker::{Config, events::Reconfiguration};
    /// fn changed(event: &Reconfiguration) -> Vec<&'static str> {
    ///     event.changes().iter().map(|c| c.setting).collect()
    /// }
    /// ```
    pub fn changes(&self) -> Vec<Change> {
        self.from
            .changes(self.to)
            .into_iter()
            .map(|(setting, from, to)| Change { setting, from, to })
            .collect()
    }
}

/// One setting a [`Reconfiguration`] changed, with its values before and
/// after (as Rust writes them: `30s`, `Some(2s)`, `Count`).
///
/// ```
/// use fuse_breaker::{Config, Fuse, events::{Change, Listener, Reconfiguration, Transition}};
/// struct Print;
/// impl Listener for Print {
///     fn on_transition(&self, _: &Transition) {}
///     fn on_reconfigure(&self, event: &Reconfiguration) {
///         for Change { setting, from, to, .. } in event.changes() {
///             println!("{setting}: {from} -> {to}");
///         }
///     }
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// The setting's name, as in SPEC §2.
    pub setting: &'static str,
    /// Its value before.
    pub from: String,
    /// Its value now.
    pub to: String,
}
