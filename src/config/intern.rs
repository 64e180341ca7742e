//! The one `'static` copy of each distinct configuration.

use super::Config;

/// The one `'static` copy of `config`: each distinct configuration is
/// stored once for the life of the process and shared by every circuit
/// that has it, so that a permit can read its circuit's configuration
/// after the circuit is gone. Runs when a circuit is built, never on a
/// call. Configurations come from code and configuration files, not from
/// traffic: there are as many as an application writes.
pub(crate) fn intern(config: Config) -> &'static Config {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static TABLE: OnceLock<Mutex<HashSet<&'static Config>>> = OnceLock::new();
    let mut table = TABLE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(&interned) = table.get(&config) {
        return interned;
    }
    let interned: &'static Config = Box::leak(Box::new(config));
    table.insert(interned);
    interned
}
