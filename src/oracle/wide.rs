//! Unsigned numbers of 256 bits for the oracle's powers of a factor
//! (SPEC §10), written apart from the crate's own arithmetic.

/// An unsigned number of 256 bits, four 64-bit digits, lowest first: the
/// products of the power in [`Oracle::duration`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Wide([u64; 4]);

impl Wide {
    pub(super) fn from(value: impl Into<u128>) -> Self {
        let value: u128 = value.into();
        Wide([digit(value), digit(value >> 64), 0, 0])
    }

    fn digits_high_first(self) -> [u64; 4] {
        let [a, b, c, d] = self.0;
        [d, c, b, a]
    }

    pub(super) fn at_most(self, limit: Wide) -> Wide {
        if self.digits_high_first() > limit.digits_high_first() {
            limit
        } else {
            self
        }
    }

    pub(super) fn times(self, other: Wide) -> Wide {
        let mut out = [0_u64; 8];
        for i in 0..4 {
            let mut carry = 0_u128;
            for j in 0..4 {
                let sum =
                    u128::from(self.0[i]) * u128::from(other.0[j]) + u128::from(out[i + j]) + carry;
                out[i + j] = digit(sum);
                carry = sum >> 64;
            }
            out[i + 4] = digit(carry);
        }
        assert!(out[4..].iter().all(|&d| d == 0), "a product past 256 bits");
        Wide([out[0], out[1], out[2], out[3]])
    }

    pub(super) fn plus(self, other: Wide) -> Wide {
        let mut out = [0_u64; 4];
        let mut carry = 0_u128;
        for (digit_out, (&a, &b)) in out.iter_mut().zip(self.0.iter().zip(&other.0)) {
            let sum = u128::from(a) + u128::from(b) + carry;
            *digit_out = digit(sum);
            carry = sum >> 64;
        }
        Wide(out)
    }

    pub(super) fn shl(self, by: u32) -> Wide {
        (0..by).fold(self, |w, _| w.plus(w))
    }

    pub(super) fn shr(self, by: u32) -> Wide {
        let mut out = self.0;
        for _ in 0..by {
            for i in 0..4 {
                let above = if i < 3 { out[i + 1] & 1 } else { 0 };
                out[i] = (out[i] >> 1) | (above << 63);
            }
        }
        Wide(out)
    }

    pub(super) fn div_small(self, divisor: u64) -> Wide {
        let mut out = [0_u64; 4];
        let mut rest = 0_u128;
        for i in (0..4).rev() {
            let current = (rest << 64) | u128::from(self.0[i]);
            out[i] = digit(current / u128::from(divisor));
            rest = current % u128::from(divisor);
        }
        Wide(out)
    }

    pub(super) fn low(self) -> u64 {
        assert!(self.0[1..].iter().all(|&d| d == 0), "past 64 bits");
        self.0[0]
    }
}

/// The low 64 bits of `value`.
fn digit(value: u128) -> u64 {
    u64::try_from(value & u128::from(u64::MAX)).expect("64 bits")
}
