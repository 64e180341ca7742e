//! How long an opening lasts (SPEC §10), as pure integer functions: the
//! n-th opening in a row lasts `min(max_open, open * backoff^n)`, shortened
//! by up to `jitter` of itself by a draw `u` made once when the circuit
//! opens, and at least the server's hint (capped at `max_open`) when the
//! verdict that opened it carried one.
//!
//! The factors are whole millionths ([`Factor`](crate::Factor)), so a
//! configuration stays `Eq` and `Hash` and every engine computes the same
//! nanosecond; `u` is a 32-bit fraction of 1 (`u / 2^32`), drawn by
//! [`draw`] from a circuit's seed and the opening's time, so that whoever
//! stamps an opening draws the same `u` for it.

use crate::config::{Config, nanos};

/// One, in millionths.
const MILLION: u128 = 1_000_000;

/// The duration settings of §10, in nanoseconds and millionths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// `open_duration`.
    pub(crate) open: u64,
    /// `max_open_duration` (at least `open`).
    pub(crate) max_open: u64,
    /// `open_backoff` in millionths (1 000 000 ..= 10 000 000).
    pub(crate) factor: u32,
    /// `open_jitter` in millionths (0 ..= 999 999).
    pub(crate) jitter: u32,
}

impl Backoff {
    /// The settings of `config`.
    pub(crate) fn of(config: &Config) -> Self {
        Backoff {
            open: config.open_nanos(),
            max_open: nanos(config.max_open_duration()),
            factor: config.open_backoff().millionths(),
            jitter: config.open_jitter().millionths(),
        }
    }

    /// The n-th opening's duration before jitter: `min(max_open, open *
    /// factor^n)`, without overflow however large `n` (each step rounds
    /// down to the nanosecond).
    pub(crate) fn base(self, n: u32) -> u64 {
        if n == 0 || u128::from(self.factor) <= MILLION {
            return self.open;
        }
        let mut base = u128::from(self.open);
        let max = u128::from(self.max_open.max(self.open));
        if u128::from(self.factor) > MILLION {
            for _ in 0..n {
                let next = base * u128::from(self.factor) / MILLION;
                // Once a step no longer grows it (a factor too close to 1
                // for the duration's nanoseconds), none will: at most a
                // few thousand steps, however large `n`.
                if base >= max || next == base {
                    break;
                }
                base = next;
            }
        }
        // At most `max`, a u64.
        u64::try_from(base.min(max)).unwrap_or(u64::MAX)
    }

    /// The n-th opening's duration with the draw `u` (a fraction `u /
    /// 2^32` of 1): the base shortened by `jitter * u` of itself.
    pub(crate) fn duration(self, n: u32, u: u32) -> u64 {
        if self.jitter == 0 {
            return self.base(n);
        }
        let base = u128::from(self.base(n));
        let jitter = u128::from(self.jitter).min(MILLION - 1);
        let cut = base * jitter * u128::from(u) / (MILLION << 32);
        // `cut` < `base`, so the difference fits the base's u64.
        u64::try_from(base - cut).unwrap_or(u64::MAX)
    }

    /// The duration of an opening whose verdict carried the server's hint
    /// `hint` (nanoseconds; `None` without one): at least the hint, capped
    /// at `max_open`.
    pub(crate) fn with_hint(self, n: u32, u: u32, hint: Option<u64>) -> u64 {
        let duration = self.duration(n, u);
        match hint {
            Some(hint) => duration.max(hint.min(self.max_open.max(self.open))),
            None => duration,
        }
    }
}

/// The draw `u` of an opening at `at` (nanoseconds) of a circuit whose
/// jitter seed is `seed`: splitmix64's finaliser over the two, its high
/// half. Whoever stamps one opening draws the same `u`; two processes (whose
/// seeds differ) draw apart, so a fleet does not come back at one instant.
pub(crate) fn draw(seed: u64, at: u64) -> u32 {
    let mut z = seed ^ at.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // The high half.
    u32::try_from(z >> 32).unwrap_or(u32::MAX)
}

/// When an opening at `at` ends: `at` plus the duration of the n-th
/// opening with the draw of `seed` at `at` and the verdict's `hint`.
pub(crate) fn retry_at(config: &Config, n: u32, at: u64, seed: u64, hint: Option<u64>) -> u64 {
    let backoff = Backoff::of(config);
    // Drawn only when it matters (a jitter), so a fixed opening costs no
    // draw.
    let u = if backoff.jitter == 0 {
        0
    } else {
        draw(seed, at)
    };
    at.saturating_add(backoff.with_hint(n, u, hint))
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
