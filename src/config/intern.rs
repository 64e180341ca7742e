//! The one `'static` copy of each distinct configuration, and its number.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock, PoisonError};

use super::Config;

/// The interned configurations: by value (to find a copy), and by number
/// (a lock-free read, for a circuit whose configuration can be replaced:
/// its slot holds the number in an atomic, SPEC §12).
struct Table {
    numbers: Mutex<HashMap<&'static Config, u32>>,
    by_number: boxcar::Vec<&'static Config>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    numbers: Mutex::default(),
    by_number: boxcar::Vec::new(),
});

/// How many of the first configurations [`FIRST`] holds.
const FIRST_LEN: usize = 4096;

/// The first configurations by number again, in a flat array: a lookup is
/// a bounds check, a load of the entry's state and one of its pointer,
/// where the table's is a dozen instructions more. Applications
/// have a handful of configurations; the rest are found in the table.
static FIRST: [OnceLock<First>; FIRST_LEN] = [const { OnceLock::new() }; FIRST_LEN];

/// An entry of [`FIRST`]: the configuration, and what a counted failure
/// reads of it, worked out once (see [`count_limits`]).
#[derive(Clone, Copy, Debug)]
struct First {
    config: &'static Config,
    threshold: u32,
    window_nanos: u64,
}

impl First {
    fn of(config: &'static Config) -> Self {
        First {
            config,
            // No `count` limits under `rate`: see `count_limits`.
            threshold: if config.policy().counts_calls() {
                0
            } else {
                config.failure_threshold()
            },
            window_nanos: config.window_nanos(),
        }
    }
}

/// The one `'static` copy of `config` and its number: each distinct
/// configuration is stored once for the life of the process and shared by
/// every circuit that has it, so that a permit can read its circuit's
/// configuration after the circuit is gone. Runs when a circuit is built
/// or reconfigured, never on a call. Configurations come from code,
/// configuration files and operators, not from traffic: there are as many
/// as an application and its operators write.
pub(crate) fn intern_numbered(config: Config) -> (&'static Config, u32) {
    let mut numbers = TABLE.numbers.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((&interned, &number)) = numbers.get_key_value(&config) {
        return (interned, number);
    }
    let interned: &'static Config = Box::leak(Box::new(config));
    // Pushed under the lock: numbers are given in order, one per copy.
    let index = TABLE.by_number.push(interned);
    if let Some(first) = FIRST.get(index) {
        // Set before the number is given out, so every reader finds it.
        let _ = first.set(First::of(interned));
    }
    let number = u32::try_from(index).unwrap_or(u32::MAX);
    numbers.insert(interned, number);
    (interned, number)
}

/// The one `'static` copy of `config` (see [`intern_numbered`]).
pub(crate) fn intern(config: Config) -> &'static Config {
    intern_numbered(config).0
}

/// The number of an interned configuration.
pub(crate) fn number(config: &'static Config) -> u32 {
    intern_numbered(config.clone()).1
}

/// The interned configuration numbered `number`: one lock-free read.
#[inline]
pub(crate) fn numbered(number: u32) -> &'static Config {
    if let Some(first) = FIRST.get(number as usize)
        && let Some(first) = first.get()
    {
        return first.config;
    }
    numbered_later(number)
}

/// The `failure_threshold` and the `failure_window` in nanoseconds of the
/// configuration numbered `number`: what a counted failure decides with,
/// read without converting a duration. The threshold is 0 for a `rate`
/// configuration, whose failures are not counted so (a counted failure
/// that finds one has arrived after a change of policy, SPEC §12).
#[inline]
pub(crate) fn count_limits(number: u32) -> (u32, u64) {
    if let Some(first) = FIRST.get(number as usize)
        && let Some(first) = first.get()
    {
        return (first.threshold, first.window_nanos);
    }
    let config = numbered_later(number);
    let threshold = if config.policy().counts_calls() {
        0
    } else {
        config.failure_threshold()
    };
    (threshold, config.window_nanos())
}

/// [`numbered`] past [`FIRST`].
#[cold]
#[inline(never)]
fn numbered_later(number: u32) -> &'static Config {
    static FALLBACK: LazyLock<Config> = LazyLock::new(Config::default);
    // Every number was given by `intern_numbered`, so the copy is there.
    TABLE
        .by_number
        .get(number as usize)
        .copied()
        .unwrap_or_else(|| &FALLBACK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_find_their_copy() {
        let a = Config::builder().failure_threshold(3).build().unwrap();
        let b = Config::builder().failure_threshold(4).build().unwrap();
        let (ia, na) = intern_numbered(a.clone());
        let (ib, nb) = intern_numbered(b);
        assert_ne!(na, nb);
        assert!(std::ptr::eq(numbered(na), ia));
        assert!(std::ptr::eq(numbered(nb), ib));
        assert_eq!(intern_numbered(a).1, na);
        assert_eq!(number(ia), na);
    }
}
