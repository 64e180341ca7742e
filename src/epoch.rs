//! [`Epoch`]: which stretch between two state changes of a circuit a
//! permit, a word or a record belongs to (SPEC §1), and the one place its
//! wrap-around arithmetic lives.

/// An epoch, counted modulo 2^[`Epoch::BITS`] (the engine's packed word has
/// room for that many bits). Epochs are only ever compared for equality,
/// never for which is ahead: a permit or record whose epoch differs from
/// the circuit's is simply not the current one, and the engine tells older
/// records from newer ones by the state word (see `ring`). So the only
/// bound the width sets is that a permit held, or a call preempted, across
/// exactly a multiple of 2^30 state changes would be taken for a current
/// one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Epoch(u32);

impl Epoch {
    /// How many bits of the epoch are kept.
    pub(crate) const BITS: u32 = 30;

    const MASK: u32 = (1 << Self::BITS) - 1;

    /// The epoch of a fresh circuit.
    #[cfg(any(test, fuzzing))]
    pub(crate) const ZERO: Epoch = Epoch(0);

    /// The epoch `raw` names, modulo 2^[`BITS`](Self::BITS).
    #[inline]
    pub(crate) const fn new(raw: u32) -> Epoch {
        Epoch(raw & Self::MASK)
    }

    /// The epoch as a number below 2^[`BITS`](Self::BITS).
    #[inline]
    pub(crate) const fn get(self) -> u32 {
        self.0
    }

    /// The epoch after this one.
    #[inline]
    pub(crate) const fn next(self) -> Epoch {
        Epoch::new(self.0.wrapping_add(1))
    }

    /// The epoch before this one.
    #[inline]
    pub(crate) const fn previous(self) -> Epoch {
        self.back(1)
    }

    /// The epoch `epochs` before this one.
    #[inline]
    pub(crate) const fn back(self, epochs: u32) -> Epoch {
        Epoch::new(self.0.wrapping_sub(epochs))
    }
}

#[cfg(test)]
mod tests;
