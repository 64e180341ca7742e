//! How long an opening lasts (SPEC §10), as pure integer functions: the
//! n-th opening in a row lasts `min(max_open, open * backoff^n)`, shortened
//! by up to `jitter` of itself by a draw `u` made once when the circuit
//! opens, and at least the server's hint (capped at `max_open`) when the
//! verdict that opened it carried one.
//!
//! The factors are whole millionths ([`Factor`](crate::config::Factor)), so a
//! configuration stays `Eq` and `Hash` and every engine computes the same
//! nanosecond; `u` is a 32-bit fraction of 1 (`u / 2^32`), drawn by
//! [`draw`] from a circuit's seed and the opening's time, so that whoever
//! stamps an opening draws the same `u` for it.

use crate::config::{Config, nanos};

/// One, in millionths.
const MILLION: u128 = 1_000_000;

/// The fixed point that powers of a factor are raised on: 72 binary
/// places. Squaring doubles a power's relative error, and a power reaches
/// any cap within 26 squarings (a factor is at least 1.000001, a cap at most
/// 2^55 open durations), so the error stays below 2^-45 of the power.
const POINT: u32 = 72;

/// The largest ratio of the cap to the open duration that powers are
/// raised towards: 2^55 (417 days of nanoseconds), past any
/// configuration's.
const RATIO_LIMIT: u64 = 1 << 55;

/// `a * b / 2^shift`, rounded down, or `None` if that does not fit a u128.
/// (The product is taken on four 64-bit halves: it may not fit a u128.)
fn product_shifted(a: u128, b: u128, shift: u32) -> Option<u128> {
    const LOW: u128 = u64::MAX as u128;
    let (a1, a0) = (a >> 64, a & LOW);
    let (b1, b0) = (b >> 64, b & LOW);
    // a * b = high * 2^128 + low, each of the four products below 2^128.
    let (cross, carried) = (a1 * b0).overflowing_add(a0 * b1);
    let (low, carry) = (a0 * b0).overflowing_add(cross << 64);
    let high = (a1 * b1)
        .checked_add(cross >> 64)?
        .checked_add(u128::from(carried) << 64)?
        .checked_add(u128::from(carry))?;
    if shift == 0 {
        return (high == 0).then_some(low);
    }
    // Only `shift` < 128 is asked for.
    if high >> shift != 0 {
        return None;
    }
    Some((high << (128 - shift)) | (low >> shift))
}

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
    /// factor^n)`, without overflow however large `n`.
    pub(crate) fn base(self, n: u32) -> u64 {
        self.base_counted(n).0
    }

    /// [`base`](Self::base) and how many multiplications it took: at most
    /// two for each bit of `n` (64), whatever `n` and the factor.
    ///
    /// `factor^n` is raised by squaring on a fixed point of 72 binary
    /// places ([`POINT`]), from the lowest bit of `n` up: the factor and
    /// each product are rounded down to the point's unit, and a power past
    /// the cap's ratio (`max_open / open + 1`, at most 2^55 + 1) stands at
    /// that ratio, which keeps every later product past it. The opening is
    /// `open` times that power, rounded to the nearest nanosecond (so that
    /// 30 s * 1.1 is 33 s, not a nanosecond less), capped at `max_open`.
    pub(crate) fn base_counted(self, n: u32) -> (u64, u32) {
        let max = self.max_open.max(self.open);
        if n == 0 || u128::from(self.factor) <= MILLION || self.open == max {
            return (self.open, 0);
        }
        let one = 1_u128 << POINT;
        // At most (2^55 + 1) * 2^72: a u128.
        let ceiling = u128::from((max / self.open).min(RATIO_LIMIT) + 1) << POINT;
        let times =
            |a: u128, b: u128| product_shifted(a, b, POINT).map_or(ceiling, |p| p.min(ceiling));
        let mut power = one;
        // The factor, below 10 * 2^72.
        let mut square = (u128::from(self.factor) << POINT) / MILLION;
        let mut rest = n;
        let mut steps = 0;
        loop {
            if rest & 1 == 1 {
                power = times(power, square);
                steps += 1;
            }
            rest >>= 1;
            if rest == 0 || power == ceiling {
                break;
            }
            square = times(square, square);
            steps += 1;
        }
        // `open * power` rounded to the nearest unit: at least `open`.
        let base = product_shifted(u128::from(self.open), power, 0)
            .and_then(|scaled| scaled.checked_add(one >> 1))
            .map_or(u128::from(max), |scaled| scaled >> POINT);
        // At most `max`, a u64.
        (
            u64::try_from(base.min(u128::from(max))).unwrap_or(u64::MAX),
            steps,
        )
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

    /// The shortest any opening lasts: the open duration less the most
    /// the jitter can cut from it. No opening is shorter: the n-th
    /// opening's base is at least the open duration, a longer base less
    /// its cut is never shorter (the cut is a share below 1 of the base,
    /// rounded down), and a hint only lengthens an opening.
    pub(crate) fn shortest(self) -> u64 {
        let jitter = u128::from(self.jitter).min(MILLION - 1);
        let cut = u128::from(self.open) * jitter / MILLION;
        // `cut` < `open`, so the difference fits the open duration's u64.
        u64::try_from(u128::from(self.open) - cut).unwrap_or(0)
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
/// opening with the draw of `seed` at `at` and the verdict's `hint`;
/// `None` when that is past the clock's last instant (the opening then
/// lasts to the end of time: see [`Span`](crate::model::Span)).
#[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
pub(crate) fn retry_at(
    config: &Config,
    n: u32,
    at: u64,
    seed: u64,
    hint: Option<u64>,
) -> Option<u64> {
    Backoff::of(config).retry_at(n, at, seed, hint)
}

impl Backoff {
    /// [`retry_at`] under these settings (an engine keeps them, read off
    /// its configuration once).
    #[inline]
    pub(crate) fn retry_at(self, n: u32, at: u64, seed: u64, hint: Option<u64>) -> Option<u64> {
        let backoff = self;
        // Drawn only when it matters (a jitter), so a fixed opening costs
        // no draw.
        let u = if backoff.jitter == 0 {
            0
        } else {
            draw(seed, at)
        };
        at.checked_add(backoff.with_hint(n, u, hint))
    }
}

#[cfg(test)]
mod tests;
