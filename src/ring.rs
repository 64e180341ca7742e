//! Stamped 128-bit records: the ring of failure times and the `opened`
//! record of the engine.
//!
//! A record is `stamp << 64 | time`. The stamp names what the time belongs
//! to (an epoch and, in the ring, a claim number), so a reader recognises a
//! record that is not (yet) the one it expects, and a late writer never
//! overwrites a newer record: a slot only moves forward. Writers of the same
//! stamp keep the latest of their times (see [`Record::write`]).

use crate::model::EPOCH_BITS;
use crate::packed::CLAIMS_MODULUS;
use crate::sync::{AtomicU128, RECORD_LOAD, RECORD_WRITE};

/// Set in every written stamp, so an untouched record (all zero) matches no
/// stamp.
const WRITTEN: u64 = 1 << 63;
const EPOCH_MOD: u32 = 1 << EPOCH_BITS;

/// What a record belongs to: an epoch and, for a failure, its claim number
/// in that epoch (zero for the `opened` record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) epoch: u32,
    pub(crate) claim: u32,
}

impl Stamp {
    #[inline]
    fn bits(self) -> u64 {
        WRITTEN | (u64::from(self.epoch) << 32) | u64::from(self.claim)
    }

    /// Whether a record stamped `other` is strictly newer than one stamped
    /// `self`: a later epoch, or a later claim of the same epoch. Both
    /// counters wrap, so "later" means less than half the range ahead.
    #[inline]
    fn is_older_than(self, other: u64) -> bool {
        if other & WRITTEN == 0 {
            return false;
        }
        let (epoch, claim) = split_stamp(other);
        if epoch == self.epoch {
            let ahead = claim.wrapping_sub(self.claim) % CLAIMS_MODULUS;
            ahead != 0 && ahead < CLAIMS_MODULUS / 2
        } else {
            let ahead = epoch.wrapping_sub(self.epoch) % EPOCH_MOD;
            ahead < EPOCH_MOD / 2
        }
    }
}

/// One stamped time in a 128-bit atomic.
#[derive(Debug)]
pub(crate) struct Record(AtomicU128);

/// What a record holds for the stamp a reader expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// The expected record, with its time.
    Found(u64),
    /// An older record: the expected one is not written yet.
    Missing,
    /// A newer record: the reader's view is out of date.
    Superseded,
}

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

    /// Reads the time stamped `stamp`.
    #[inline]
    pub(crate) fn read(&self, stamp: Stamp) -> Read {
        classify(stamp, self.0.load(RECORD_LOAD))
    }

    /// Writes `at` stamped `stamp`, unless the record holds a newer stamp
    /// or already holds `stamp` with a time `keep` prefers; returns what the
    /// record holds for `stamp` afterwards.
    pub(crate) fn write(&self, stamp: Stamp, at: u64, keep: Keep) -> Read {
        let mine = (u128::from(stamp.bits()) << 64) | u128::from(at);
        let mut current = self.0.load(RECORD_LOAD);
        loop {
            match classify(stamp, current) {
                Read::Found(held) if keep == Keep::First || held >= at => {
                    return Read::Found(held);
                }
                Read::Superseded => return Read::Superseded,
                Read::Found(_) | Read::Missing => {}
            }
            // RECORD_WRITE (AcqRel / Acquire): see `sync`.
            match self
                .0
                .compare_exchange(current, mine, RECORD_WRITE, RECORD_LOAD)
            {
                Ok(_) => return Read::Found(at),
                Err(actual) => current = actual,
            }
        }
    }
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

/// The epoch and claim of stamp bits (the claim is the low 32 bits, the
/// epoch the 30 above them).
#[allow(clippy::cast_possible_truncation)]
#[inline]
fn split_stamp(bits: u64) -> (u32, u32) {
    (((bits >> 32) as u32) & (EPOCH_MOD - 1), bits as u32)
}

/// The stamp (high half) and time (low half) of a record.
#[allow(clippy::cast_possible_truncation)]
#[inline]
fn split_record(record: u128) -> (u64, u64) {
    ((record >> 64) as u64, record as u64)
}

#[inline]
fn classify(stamp: Stamp, record: u128) -> Read {
    let (bits, at) = split_record(record);
    if bits == stamp.bits() {
        Read::Found(at)
    } else if stamp.is_older_than(bits) {
        Read::Superseded
    } else {
        Read::Missing
    }
}

/// The failure times of a closed epoch: claim `k` lives in slot
/// `k mod len`, `len` the threshold rounded up to a power of two, so the
/// last `threshold` claims never share a slot.
#[derive(Debug)]
pub(crate) struct Ring {
    slots: Box<[Record]>,
    mask: u32,
}

impl Ring {
    pub(crate) fn new(threshold: u32) -> Self {
        let len = threshold.max(1).next_power_of_two();
        Ring {
            slots: (0..len).map(|_| Record::new()).collect(),
            mask: len - 1,
        }
    }

    fn slot(&self, claim: u32) -> &Record {
        // `mask` is the length minus one, so the index is always in range.
        &self.slots[(claim & self.mask) as usize]
    }

    /// Writes the failure time of claim `claim` of `epoch`, before the
    /// claim; `false` when the slot already holds a newer claim (the
    /// writer's reading of the state word is out of date).
    pub(crate) fn write(&self, epoch: u32, claim: u32, at: u64) -> bool {
        self.slot(claim)
            .write(Stamp { epoch, claim }, at, Keep::Latest)
            != Read::Superseded
    }

    /// The times of the `count` claims of `epoch` that end with `last`,
    /// oldest first; `None` for a claim whose time is not there (not yet
    /// written, or already replaced by a newer claim).
    pub(crate) fn recent(
        &self,
        epoch: u32,
        last: u32,
        count: u32,
    ) -> impl Iterator<Item = Option<u64>> + '_ {
        (0..count).rev().map(move |back| {
            let claim = last.wrapping_sub(back) % CLAIMS_MODULUS;
            match self.slot(claim).read(Stamp { epoch, claim }) {
                Read::Found(at) => Some(at),
                Read::Missing | Read::Superseded => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_only_moves_forward() {
        let record = Record::new();
        let old = Stamp { epoch: 3, claim: 1 };
        let new = Stamp { epoch: 3, claim: 9 };
        assert_eq!(record.read(new), Read::Missing);
        assert_eq!(record.write(new, 50, Keep::Latest), Read::Found(50));
        assert_eq!(record.write(old, 40, Keep::Latest), Read::Superseded);
        assert_eq!(record.read(new), Read::Found(50));
        assert_eq!(
            record.write(new, 45, Keep::Latest),
            Read::Found(50),
            "the latest time stays"
        );
        assert_eq!(
            record.write(new, 60, Keep::Latest),
            Read::Found(60),
            "the latest time stays"
        );
        let next_epoch = Stamp { epoch: 4, claim: 0 };
        assert_eq!(record.write(next_epoch, 70, Keep::Latest), Read::Found(70));
        assert_eq!(record.write(new, 99, Keep::Latest), Read::Superseded);
        let first = Record::new();
        let stamp = Stamp { epoch: 1, claim: 0 };
        assert_eq!(first.write(stamp, 10, Keep::First), Read::Found(10));
        assert_eq!(
            first.write(stamp, 20, Keep::First),
            Read::Found(10),
            "the first time stays"
        );
        assert_eq!(record.read(new), Read::Superseded);
    }

    #[test]
    fn stamps_compare_across_wrap() {
        let last_epoch = Stamp {
            epoch: EPOCH_MOD - 1,
            claim: CLAIMS_MODULUS - 1,
        };
        assert!(last_epoch.is_older_than(Stamp { epoch: 0, claim: 0 }.bits()));
        let same_epoch_wrapped = Stamp {
            epoch: EPOCH_MOD - 1,
            claim: 0,
        };
        assert!(last_epoch.is_older_than(same_epoch_wrapped.bits()));
        assert!(!same_epoch_wrapped.is_older_than(last_epoch.bits()));
        assert!(!last_epoch.is_older_than(0), "an untouched record is older");
    }

    #[test]
    fn ring_recent_reads_oldest_first() {
        let ring = Ring::new(3);
        assert!(ring.write(1, 1, 10));
        assert!(ring.write(1, 2, 20));
        assert!(ring.write(1, 3, 30));
        let got: Vec<_> = ring.recent(1, 3, 3).collect();
        assert_eq!(got, vec![Some(10), Some(20), Some(30)]);
        let got: Vec<_> = ring.recent(1, 4, 2).collect();
        assert_eq!(got, vec![Some(30), None], "claim 4 is not written yet");
        assert_eq!(ring.recent(2, 3, 1).next(), Some(None), "other epoch");
        assert!(ring.write(1, 7, 70), "claim 7 shares a slot with claim 3");
        assert!(!ring.write(1, 3, 35), "a late writer of claim 3 is refused");
        assert_eq!(ring.recent(1, 7, 1).next(), Some(Some(70)));
    }
}
