//! §10 as the oracle reads it: how long the n-th opening in a row lasts,
//! with its backoff, cap, jitter and the server's hint.

use super::Oracle;
use super::wide::Wide;

impl Oracle {
    /// §10: "The n-th opening in a row ... lasts d = min(`max_open_duration`,
    /// `open_duration` * `open_backoff^n`) * (1 - `open_jitter` * u)", "at least
    /// min(hint, `max_open_duration`)" with a hint. The power's rounding is
    /// the crate's rule (see `recovery`): raised by squaring from the lowest bit of
    /// n on 72 binary places, every product rounded down and held at the
    /// cap's ratio `min(max_open / open, 2^55) + 1` once past it; `open` times the
    /// power is rounded to the nearest nanosecond. The cut is rounded down.
    pub(super) fn duration(&self, n: u32, at: u64, hint: Option<u64>) -> u64 {
        let r = self.recovery;
        let cap = r.max_open.max(self.open);
        let mut base = self.open;
        if n > 0 && r.backoff > 1_000_000 && cap > self.open {
            let ratio = (cap / self.open).min(1 << 55) + 1;
            let mut power = Wide::from(1_u8).shl(72);
            let mut square = Wide::from(r.backoff).shl(72).div_small(1_000_000);
            let limit = Wide::from(ratio).shl(72);
            let mut bits = n;
            while bits != 0 {
                if bits % 2 == 1 {
                    power = power.times(square).shr(72).at_most(limit);
                }
                bits /= 2;
                if bits != 0 && power != limit {
                    square = square.times(square).shr(72).at_most(limit);
                }
                if power == limit {
                    break;
                }
            }
            let nearest = Wide::from(self.open)
                .times(power)
                .plus(Wide::from(1_u8).shl(71))
                .shr(72);
            base = nearest.at_most(Wide::from(cap)).low();
        }
        let base = u128::from(base.min(cap));
        let u = u128::from(Self::u(r.seed, at));
        let cut = base * r.jitter * u / (1_000_000 * (1 << 32));
        let d = u64::try_from(base - cut).expect("d is at most the cap");
        match hint {
            Some(hint) => d.max(hint.min(r.max_open)),
            None => d,
        }
    }

    /// `u` in [0, 1), as a fraction of 2^32: splitmix64 over the seed and
    /// the opening's time, its high half.
    fn u(seed: u64, at: u64) -> u32 {
        const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut x = seed ^ at.wrapping_mul(GOLDEN);
        x ^= x >> 30;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 27;
        x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        u32::try_from(x >> 32).expect("the high half")
    }
}
