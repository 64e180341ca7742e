//! The atomics of the crate and every memory ordering it uses, each with the
//! reason it is enough.
//!
//! Built with `--cfg fuse_loom`, the atomics are loom's, so the models in
//! `loom-tests/` explore every interleaving of the engine, and every value
//! each ordering lets a load return. Loom has no 128-bit atomic; there a
//! 128-bit word is a loom atomic index into the values it has held, driven
//! with the same orderings as the real one.

pub(crate) use std::sync::atomic::Ordering;

#[cfg(not(fuse_loom))]
pub(crate) use core::sync::atomic::AtomicU64;
#[cfg(fuse_loom)]
pub(crate) use loom_shim::AtomicU64;

#[cfg(not(fuse_loom))]
pub(crate) use portable_atomic::AtomicU128;

#[cfg(fuse_loom)]
pub(crate) use loom_shim::AtomicU128;

/// A pause in a bounded retry loop; under loom, a yield so that the model
/// explores the other threads instead of the loop.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(not(fuse_loom))]
    std::hint::spin_loop();
    #[cfg(fuse_loom)]
    loom::thread::yield_now();
}

/// Loading the state word to decide admission or a verdict. Acquire pairs
/// with the release half of [`CAS_SUCCESS`], so a thread that sees a state
/// also sees what its writer did before writing it. Nothing else is read
/// through this load on the closed path: the epoch it carries is the whole
/// of what a closed permit needs.
pub(crate) const HEAD_LOAD: Ordering = Ordering::Acquire;

/// A compare-and-swap on the state word that wins. Release publishes the
/// new state (and a failure slot written before it). No acquire: the
/// thread decided from the very value the compare-and-swap finds, and it
/// read that value with an acquire already ([`HEAD_LOAD`], or
/// [`CAS_FAILURE`] when an earlier attempt lost); nothing it does after
/// winning reads what that value's writer wrote, except through loads of
/// their own. Being a read-modify-write, it also continues the release
/// sequence of the value it replaces, so a later reader that acquires the
/// new value still sees everything published before. The loom models pass
/// with this; each weaker choice (`Relaxed`, `Acquire`) fails some.
pub(crate) const CAS_SUCCESS: Ordering = Ordering::Release;

/// A compare-and-swap that loses: the returned value is decoded and stepped
/// again, so it needs the same acquire as [`HEAD_LOAD`].
pub(crate) const CAS_FAILURE: Ordering = Ordering::Acquire;

/// Loading the number of a circuit's configuration (SPEC §12). Acquire
/// pairs with [`CONFIG_STORE`]: a thread that reads a new number also sees
/// what the reconfiguration did before storing it (the least shortest
/// opening, a grown ring). The configuration itself is published by its
/// table. A decision that reads the old number while a reconfiguration
/// replaces it decides as the old settings would, before the change.
pub(crate) const CONFIG_LOAD: Ordering = Ordering::Acquire;

/// See [`CONFIG_LOAD`].
pub(crate) const CONFIG_STORE: Ordering = Ordering::Release;

/// The read-modify-write (adding nothing) by which a reconfiguration,
/// having stored its configuration's number, reads the state word before
/// it trims the failures its new threshold keeps; acquire and release. A
/// failure claims its slot by compare-and-swap, then (after an
/// [`acquire_fence`]) reads the number to see whether it decided under
/// replaced settings (then it is judged again). Read-modify-writes of the
/// word are totally ordered: if the reconfiguration's comes second, it
/// reads the claim, and its trim sees it; if the claim comes second, it
/// reads the reconfiguration's write, and the fence makes the new number
/// visible to the failure's second look. Without the one or the other
/// both could miss (plain loads and stores of two atomics, the store
/// buffer's pattern: the loom model `a_smaller_threshold_racing_a_failure`
/// finds it).
pub(crate) const HEAD_TOUCH: Ordering = Ordering::AcqRel;

/// An acquire fence: see [`HEAD_TOUCH`]. On x86 it emits no instruction.
#[inline]
pub(crate) fn acquire_fence() {
    #[cfg(not(fuse_loom))]
    core::sync::atomic::fence(Ordering::Acquire);
    #[cfg(fuse_loom)]
    loom::sync::atomic::fence(Ordering::Acquire);
}

/// Loading how many rings a `count` circuit's growths pushed (SPEC §12).
/// Acquire pairs with [`RINGS_STORE`], stored after each push: a reader
/// that picks a ring sees it whole. A reader whose word's parity names the
/// newest ring learnt the word from the compare-and-swap that flipped it,
/// after the push, so it sees the push too; a reader that finds a ring
/// newer than its word's is reading a word that has moved on, which its
/// records' checks tell.
pub(crate) const RINGS_LOAD: Ordering = Ordering::Acquire;

/// See [`RINGS_LOAD`].
pub(crate) const RINGS_STORE: Ordering = Ordering::Release;

/// Reading the `phase` or `opening` record or a failure slot. Each record carries the
/// epoch (and claim) it belongs to and is checked against it, so a stale
/// value is recognised rather than trusted. A failure slot is written
/// before the state-word CAS that claims it (release), and read after a
/// state-word load (acquire) that sees the claim or a later value of the
/// word (every later change is a read-modify-write, so it continues the
/// release sequence): the slot's write is visible to every reader that can
/// see its claim. Acquire here pairs with the release of [`RECORD_WRITE`].
///
/// It also makes the check that judges a record by the state word sound: a
/// record is written only by a thread that first loaded (or itself wrote)
/// a word of the record's epoch (and, for a slot, the claim before). A
/// reader that reads such a record (acquire) and then loads the word again
/// therefore loads that word or a later one (the writer's load or write
/// happens before its release, which the reader's acquire sees, and a load
/// never goes back past what happened before it in the word's modification
/// order). So if the reader's second load still shows the
/// word it decided on, the record is not from a later epoch or claim: it is
/// older, and may be overwritten.
pub(crate) const RECORD_LOAD: Ordering = Ordering::Acquire;

/// The compare-and-swap that writes a record, when it wins. Release
/// publishes the time with its stamp, and with it the writer's view of the
/// state word (see [`RECORD_LOAD`]). No acquire, for the reason
/// [`CAS_SUCCESS`] has none: the writer read the value it replaces with
/// [`RECORD_LOAD`] (a load, or the compare-and-swap that lost before).
pub(crate) const RECORD_WRITE: Ordering = Ordering::Release;

/// Loading and storing a throttle's share in use (SPEC §11). Relaxed: the
/// share is a number computed from the window and publishes nothing else;
/// it names the epoch it belongs to, which the reader checks against the
/// state word it already loaded, and the rule allows it to lag the window
/// by a bucket, which a reader seeing an older value only does.
pub(crate) const SHARE_LOAD: Ordering = Ordering::Relaxed;

/// See [`SHARE_LOAD`].
pub(crate) const SHARE_STORE: Ordering = Ordering::Relaxed;

/// The process's coarse time: nanoseconds since the coarse clock's origin,
/// stored by its upkeep thread and loaded by every circuit that reads time
/// coarsely. Relaxed both ways: the value is a time and publishes nothing
/// else; a thread never reads it going backwards (coherence of one
/// location), and threads that disagree by a tick are as far apart as two
/// cores reading a clock. A plain `std` atomic even under loom: the models
/// run on mock clocks.
static COARSE_NOW: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// The coarse time: one relaxed load.
#[inline]
pub(crate) fn coarse_now() -> u64 {
    COARSE_NOW.load(Ordering::Relaxed)
}

/// Sets the coarse time (its upkeep thread only).
pub(crate) fn set_coarse_now(nanos: u64) {
    COARSE_NOW.store(nanos, Ordering::Relaxed);
}

/// A mark that a registry's lookups set and its sweeps take, so that a
/// sweep can tell a circuit in use from an idle one. Setting it is a load,
/// and a store only when it is clear: at most one store per circuit
/// between two sweeps, however many lookups. Relaxed: the mark publishes
/// nothing; a lookup racing a sweep may be missed by it, which the
/// registry documents (a call admitted at the moment its circuit is
/// retired concludes as stale).
#[derive(Debug, Default)]
pub(crate) struct UseMark(core::sync::atomic::AtomicBool);

impl UseMark {
    #[inline]
    pub(crate) fn set(&self) {
        if !self.0.load(Ordering::Relaxed) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the mark was set since the last take; clears it.
    pub(crate) fn take(&self) -> bool {
        self.0.swap(false, Ordering::Relaxed)
    }
}

/// Four words that one writer at a time (the caller holds a lock) writes
/// together and anyone reads without a lock: a sequence lock made of
/// atomics, so a reader never sees words of two writes. The writer makes
/// the sequence odd, then (after a release fence) writes the words, then
/// makes it even again with a release store; a reader loads the sequence
/// (acquire), the words, then (after an acquire fence) the sequence again,
/// and keeps the words only if both readings are the same even number.
/// The fences order the relaxed word accesses against the sequence; on
/// x86 both are free. A cached shared circuit keeps its quiet permit here.
/// The loom model `a_sequence_lock_never_mixes_two_writes` checks these
/// orderings (and fails without either fence, or with the last store
/// relaxed).
#[cfg(any(feature = "store", fuse_loom))]
#[derive(Debug)]
pub(crate) struct Words4 {
    seq: AtomicU64,
    words: [AtomicU64; 4],
}

#[cfg(any(feature = "store", fuse_loom))]
impl Default for Words4 {
    fn default() -> Self {
        Words4 {
            seq: AtomicU64::new(0),
            words: [
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
            ],
        }
    }
}

#[cfg(all(feature = "store", not(fuse_loom)))]
use core::sync::atomic::fence;
#[cfg(fuse_loom)]
use loom::sync::atomic::fence;

#[cfg(any(feature = "store", fuse_loom))]
impl Words4 {
    /// Writes `words`; writers must not overlap (the caller serialises
    /// them).
    pub(crate) fn write(&self, words: [u64; 4]) {
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        // Release: the odd sequence is seen before any of the new words.
        fence(Ordering::Release);
        for (word, value) in self.words.iter().zip(words) {
            word.store(value, Ordering::Relaxed);
        }
        // Release: the words are seen before the even sequence.
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// The words of one write, or `None` while a write is under way.
    #[inline]
    pub(crate) fn read(&self) -> Option<[u64; 4]> {
        // Acquire: pairs with the writer's final release store.
        let before = self.seq.load(Ordering::Acquire);
        let words = [
            self.words[0].load(Ordering::Relaxed),
            self.words[1].load(Ordering::Relaxed),
            self.words[2].load(Ordering::Relaxed),
            self.words[3].load(Ordering::Relaxed),
        ];
        // Acquire: the word loads happen before the second reading.
        fence(Ordering::Acquire);
        let after = self.seq.load(Ordering::Relaxed);
        (before == after && before.is_multiple_of(2)).then_some(words)
    }
}

/// [`Words4`] for the loom models of `loom-tests/`. Only in loom builds
/// (`--cfg fuse_loom`); not part of the API.
#[cfg(fuse_loom)]
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct LoomWords4(Words4);

#[cfg(fuse_loom)]
impl LoomWords4 {
    /// [`Words4::write`].
    pub fn write(&self, words: [u64; 4]) {
        self.0.write(words);
    }

    /// [`Words4::read`].
    pub fn read(&self) -> Option<[u64; 4]> {
        self.0.read()
    }
}

/// A request for work that one task at a time does: a cached shared
/// circuit's read of its key, asked by every announcement on the key. Asking
/// tells whether a request was pending already (its work, not begun yet,
/// covers this one too); the task takes the request just before it begins.
/// `SeqCst`: every ask and take of one flag fall in one order, so an ask that
/// finds a request pending comes before the take of the work covering it,
/// and that work (the read, sent after its take) after the ask.
#[cfg(feature = "store")]
#[derive(Debug, Default)]
pub(crate) struct Request(core::sync::atomic::AtomicBool);

#[cfg(feature = "store")]
impl Request {
    /// Asks for the work; whether it was asked for already and not begun.
    pub(crate) fn ask(&self) -> bool {
        self.0.swap(true, Ordering::SeqCst)
    }

    /// Takes the request, as the work it asks for begins.
    pub(crate) fn take(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// A flag nothing is ordered by (Relaxed): a hint read on a hot path whose
/// details live under a lock (a shared circuit's store outage).
#[cfg(feature = "store")]
#[derive(Debug, Default)]
pub(crate) struct Hint(core::sync::atomic::AtomicBool);

#[cfg(feature = "store")]
impl Hint {
    #[inline]
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }
}

/// A count nothing is ordered by (Relaxed): the registry's retirements and
/// overflows, read by its accessors, a slot's occupancies (taken under the
/// lock of the free slots, or by the slot's first circuit), and the counter
/// behind the stores' random numbers (which only has to differ between
/// calls), and a shared circuit's writes in this process (a hint its steps
/// read; the store's compare-and-set decides).
#[derive(Debug)]
pub(crate) struct Tally(core::sync::atomic::AtomicU64);

impl Default for Tally {
    fn default() -> Self {
        Tally::new()
    }
}

impl Tally {
    /// A count at zero (for statics).
    pub(crate) const fn new() -> Self {
        Tally(core::sync::atomic::AtomicU64::new(0))
    }

    /// Adds `n`; the count before.
    pub(crate) fn add(&self, n: u64) -> u64 {
        self.0.fetch_add(n, Ordering::Relaxed)
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

mod lanes;
#[cfg(fuse_loom)]
mod loom_shim;

pub(crate) use lanes::{Cell, Passage, PerThread};

#[cfg(all(test, feature = "store", not(fuse_loom)))]
mod tests;
