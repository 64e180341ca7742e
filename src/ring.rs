//! Stamped 128-bit records: the ring of failure times and the `phase` and
//! `opening` records of the engine.
//!
//! A record is `stamp << 64 | time`. The stamp names what the time belongs
//! to (an epoch and, in the ring, a claim number), so a reader recognises a
//! record that is not the one it expects. A record holding another stamp
//! may be older or newer than the reader's view, and the stamp alone cannot
//! tell which: epochs wrap, and a record can sit unwritten for any number of
//! them. The state word can: records are only ever written for the word's
//! current epoch (or one the word has since left), so a record that does
//! not match a word *still current* is older than it. A writer therefore
//! replaces another stamp only after checking that its word is still the
//! circuit's ([`Record::write`]); a reader whose word moved on retries from
//! the new word. Writers of the same stamp keep the time [`Keep`] says.

use crate::epoch::Epoch;
use crate::packed::CLAIMS_MODULUS;
use crate::sync::{AtomicU128, RECORD_LOAD, RECORD_WRITE};

/// Set in every written stamp, so an untouched record (all zero) matches no
/// stamp.
const WRITTEN: u64 = 1 << 63;

/// What a record belongs to: an epoch and, for a failure, its claim number
/// in that epoch (for the `phase` and `opening` records, the n of the
/// opening, SPEC §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) epoch: Epoch,
    pub(crate) claim: u32,
}

impl Stamp {
    #[inline]
    fn bits(self) -> u64 {
        WRITTEN | (u64::from(self.epoch.get()) << 32) | u64::from(self.claim)
    }
}

/// One stamped time in a 128-bit atomic.
#[derive(Debug)]
pub(crate) struct Record(AtomicU128);

impl Record {
    pub(crate) fn new() -> Self {
        Record(AtomicU128::new(0))
    }

    /// How many times this record was written (loom builds only).
    #[cfg(fuse_loom)]
    pub(crate) fn writes(&self) -> usize {
        self.0.writes()
    }

    /// The raw 128 bits, for tests that check what was written.
    #[cfg(test)]
    pub(crate) fn raw(&self) -> u128 {
        self.0.load(RECORD_LOAD)
    }

    /// Makes the record unwritten again, for tests that start a circuit in
    /// a slot an earlier one used at an epoch of their choosing.
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn clear(&self) {
        // Tests only, before the circuit is shared (see `set`).
        let current = self.0.load(RECORD_LOAD);
        let _ = self
            .0
            .compare_exchange(current, 0, RECORD_WRITE, RECORD_LOAD);
    }

    /// Overwrites the record, for tests that leave it as old as they like.
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn set(&self, stamp: Stamp, at: u64) {
        // Tests only, before the circuit is shared: a compare-and-swap
        // against what is there (the only write the loom shim offers).
        let current = self.0.load(RECORD_LOAD);
        let _ = self
            .0
            .compare_exchange(current, pack(stamp, at), RECORD_WRITE, RECORD_LOAD);
    }

    /// The time stamped `stamp`, or `None` if the record holds another
    /// stamp (older or newer: only the state word can tell).
    #[inline]
    pub(crate) fn read(&self, stamp: Stamp) -> Option<u64> {
        found(stamp, self.0.load(RECORD_LOAD))
    }

    /// The claim and time stamped with `epoch` (whatever the claim), or
    /// `None` if the record holds another epoch.
    #[inline]
    pub(crate) fn read_epoch(&self, epoch: Epoch) -> Option<(u32, u64)> {
        self.read_any()
            .and_then(|(stamp, at)| (stamp.epoch == epoch).then_some((stamp.claim, at)))
    }

    /// Whatever the record holds, if it was ever written.
    #[allow(clippy::cast_possible_truncation)] // the halves of the record
    #[inline]
    pub(crate) fn read_any(&self) -> Option<(Stamp, u64)> {
        let record = self.0.load(RECORD_LOAD);
        let bits = (record >> 64) as u64;
        (bits & WRITTEN != 0).then(|| {
            let stamp = Stamp {
                epoch: Epoch::new(((bits >> 32) & u64::from(u32::MAX >> 2)) as u32),
                claim: bits as u32,
            };
            (stamp, record as u64)
        })
    }

    /// Writes `at` stamped `stamp` and returns the time the record then
    /// holds for `stamp`; a record that already holds `stamp` keeps the
    /// time `keep` prefers. A record holding another stamp is replaced only
    /// if `current` says, after that stamp was read, that the writer's
    /// reading of the state word is still the circuit's (so that stamp is
    /// older); otherwise `current`'s error is returned and nothing is
    /// written.
    ///
    /// Progress: the loop goes round again only when its compare-and-swap
    /// lost to another writer of this record, which made progress. With
    /// the word unchanged, those are writers of this same stamp (any other
    /// would have failed its own check), and they stop once the record
    /// holds `stamp`: the first time for [`Keep::First`], a time at or
    /// after theirs for [`Keep::Latest`].
    pub(crate) fn write<E>(
        &self,
        stamp: Stamp,
        at: u64,
        keep: Keep,
        current: impl Fn() -> Result<(), E>,
    ) -> Result<u64, E> {
        self.write_telling(stamp, at, keep, current)
            .map(|written| written.time)
    }

    /// [`write`](Self::write), telling also whether this writer's time is
    /// the one the record holds (it wrote it) or another writer's.
    pub(crate) fn write_telling<E>(
        &self,
        stamp: Stamp,
        at: u64,
        keep: Keep,
        current: impl Fn() -> Result<(), E>,
    ) -> Result<Written, E> {
        let mine = pack(stamp, at);
        let mut held = self.0.load(RECORD_LOAD);
        loop {
            match found(stamp, held) {
                Some(time) if keep == Keep::First || time >= at => {
                    return Ok(Written { time, mine: false });
                }
                Some(_) => {}
                None => current()?,
            }
            // RECORD_WRITE / RECORD_LOAD (Release / Acquire): see `sync`.
            match self
                .0
                .compare_exchange(held, mine, RECORD_WRITE, RECORD_LOAD)
            {
                Ok(_) => {
                    return Ok(Written {
                        time: at,
                        mine: true,
                    });
                }
                Err(actual) => held = actual,
            }
        }
    }
}

/// What a record holds for a writer's stamp after its write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Written {
    /// The time the record holds for the stamp.
    pub(crate) time: u64,
    /// Whether this writer wrote it.
    pub(crate) mine: bool,
}

/// Which time a record keeps when several writers stamp it alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The first written: for an opening, whose opener stamps it right
    /// after the compare-and-swap and whose helpers (who only stamp a
    /// missing record, with a later time) stand in for a slow opener.
    First,
    /// The latest: for a failure slot, whose writers all read the clock
    /// before the state word they claim from, so the latest of their times
    /// is still at or before the claim, and at or after the time of the
    /// failure that wins the claim.
    Latest,
}

#[inline]
fn pack(stamp: Stamp, at: u64) -> u128 {
    (u128::from(stamp.bits()) << 64) | u128::from(at)
}

/// The time of `record` if it is stamped `stamp`.
#[allow(clippy::cast_possible_truncation)]
#[inline]
fn found(stamp: Stamp, record: u128) -> Option<u64> {
    ((record >> 64) as u64 == stamp.bits()).then_some(record as u64)
}

/// The failure times of a closed epoch: claim `k` lives in slot
/// `k mod len`, `len` the threshold rounded up to a power of two, so the
/// last `threshold` claims never share a slot.
#[derive(Debug)]
pub(crate) struct Ring {
    /// A power of two of them, at least one.
    slots: Box<[Record]>,
}

impl Ring {
    pub(crate) fn new(threshold: u32) -> Self {
        let len = threshold.max(1).next_power_of_two();
        Ring {
            slots: (0..len).map(|_| Record::new()).collect(),
        }
    }

    /// How many slots the ring has (a power of two): the largest
    /// threshold it serves.
    #[allow(clippy::cast_possible_truncation)] // a threshold's power of two
    pub(crate) fn len(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Overwrites slot `index` (tests only).
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn set(&self, index: u32, stamp: Stamp, at: u64) {
        self.slot(index).set(stamp, at);
    }

    /// Writes the failure time of claim `claim` of `epoch` into a ring no
    /// word uses yet (a growth's copy, SPEC §12), over whatever its slot
    /// holds.
    pub(crate) fn copy(&self, epoch: Epoch, claim: u32, at: u64) {
        let record = self.slot(claim);
        let _ = record.write(
            Stamp { epoch, claim },
            at,
            Keep::Latest,
            || Ok::<(), ()>(()),
        );
    }

    #[inline]
    fn slot(&self, claim: u32) -> &Record {
        // The length is a power of two, so the index is always in range.
        let mask = self.slots.len().wrapping_sub(1);
        &self.slots[claim as usize & mask]
    }

    /// Writes the failure time of claim `claim` of `epoch`, before the
    /// claim, over whatever the slot holds while `current` says the
    /// writer's reading of the state word holds (see [`Record::write`]).
    pub(crate) fn write<E>(
        &self,
        epoch: Epoch,
        claim: u32,
        at: u64,
        current: impl Fn() -> Result<(), E>,
    ) -> Result<(), E> {
        self.slot(claim)
            .write(Stamp { epoch, claim }, at, Keep::Latest, current)
            .map(drop)
    }

    /// The time of claim `claim` of `epoch`; `None` if its slot holds
    /// another stamp (not written yet, or already replaced by a newer
    /// claim).
    #[inline]
    pub(crate) fn read(&self, epoch: Epoch, claim: u32) -> Option<u64> {
        self.slot(claim).read(Stamp { epoch, claim })
    }

    /// The times of the `count` claims of `epoch` that end with `last`,
    /// oldest first, as [`read`](Self::read) gives them.
    pub(crate) fn recent(
        &self,
        epoch: Epoch,
        last: u32,
        count: u32,
    ) -> impl Iterator<Item = Option<u64>> + '_ {
        (0..count)
            .rev()
            .map(move |back| self.read(epoch, last.wrapping_sub(back) % CLAIMS_MODULUS))
    }
}

mod rings;

pub(crate) use rings::Rings;

#[cfg(test)]
mod tests;
