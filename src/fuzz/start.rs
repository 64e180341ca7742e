//! Where a circuit of the differential harness starts: fresh, or a few
//! epochs before a wrap-around of its counters with its records left any
//! number of epochs behind.

use super::Bytes;
use crate::epoch::Epoch;
use crate::fuse::Fuse;
use crate::packed::CLAIMS_MODULUS;

/// Where a circuit of the harness starts: an epoch and claim counter, and
/// how far behind them its records were left.
#[derive(Clone, Copy, Debug)]
pub(super) struct Start {
    pub(super) epoch: Epoch,
    claims: u32,
    /// `None`: fresh records (never written).
    aged: Option<Ages>,
}

/// How old the records of a [`Start`] are.
#[derive(Clone, Copy, Debug)]
struct Ages {
    /// Epochs behind the start, for the `phase` record.
    opened: u32,
    /// Epochs behind the start for the failure slots (zero: the slots hold
    /// the latest claims of the start epoch, already cleared).
    slots: u32,
}

/// A few below each wrap-around point of the counters: epochs wrap at
/// 2^30, claims at 2^19 (and the midpoints, where a half-range comparison
/// would turn).
const EPOCH_STARTS: [u32; 3] = [0, 1 << (Epoch::BITS - 1), 0];
const CLAIM_STARTS: [u32; 3] = [0, CLAIMS_MODULUS / 2, 0];

/// Records are never left this close behind the history's own epochs (a
/// history changes the epoch at most once per byte).
const AGE_MARGIN: u32 = 1 << 20;

impl Start {
    pub(super) fn decode(bytes: &mut Bytes<'_>) -> Start {
        let choice = bytes.u8();
        if choice < 128 {
            return Start {
                epoch: Epoch::ZERO,
                claims: 0,
                aged: None,
            };
        }
        let before = u32::from(bytes.u8() % 8);
        let modulus = 1u32 << Epoch::BITS;
        let epoch = Epoch::new(EPOCH_STARTS[usize::from(choice % 3)]).back(before);
        let claims =
            CLAIM_STARTS[usize::from((choice / 3) % 3)].wrapping_sub(before) % CLAIMS_MODULUS;
        let age = |raw: u32| 1 + raw % (modulus - AGE_MARGIN);
        let aged = choice.is_multiple_of(2).then(|| Ages {
            opened: age(bytes.u32()),
            slots: if choice.is_multiple_of(4) {
                0
            } else {
                age(bytes.u32())
            },
        });
        Start {
            epoch,
            claims,
            aged,
        }
    }

    /// Moves `fuse` to this start (it is fresh and not shared yet).
    pub(super) fn apply(self, fuse: &Fuse) {
        let engine = fuse.engine();
        let ages = self.aged.map(|ages| (ages.opened, ages.slots));
        engine.start_at(self.epoch, self.claims, ages);
    }
}
