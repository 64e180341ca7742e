//! Random numbers for stores' generations and lease ids and circuits'
//! jitter seeds: the standard library's
//! per-process random hasher keys (seeded by the operating system) over a
//! counter. Not for secrets; enough that two processes, or two lives of
//! one key, never pick the same generation by accident.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::LazyLock;

use crate::sync::Tally;

/// A random 63-bit number (never zero).
pub(crate) fn next() -> u64 {
    static KEYS: LazyLock<RandomState> = LazyLock::new(RandomState::new);
    static COUNT: Tally = Tally::new();
    let n = COUNT.add(1);
    (KEYS.hash_one(n) >> 1).max(1)
}

#[cfg(test)]
mod tests;
