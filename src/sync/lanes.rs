//! The atomics of the `rate` window: one lane per thread and circuit, each
//! a ring of bucket cells that only its thread writes, and the passage
//! that orders failed and slow verdicts.
//!
//! A closed success under `rate` adds to its thread's cell with plain
//! loads and stores: no read-modify-write, no cache line another thread
//! writes. A cell is a sequence lock over its stamp (epoch and bucket):
//! moving the cell to a new stamp makes its sequence odd, writes the stamp
//! and the counts, and makes it even again; adding to the cell's current
//! stamp leaves the sequence as it is. A reader keeps a cell's reading only
//! if its sequence was the same even number before and after, so the counts
//! it keeps are counts of the stamp it read. Within one stamp counts only
//! grow; a reader loads the failed and slow counts (acquire) before the
//! calls, and the writer stores the calls before them (release), so a
//! reading never holds a failure without its call.
//!
//! The slow calls that failed share the slow calls' word (its high half;
//! one more atomic would be one more step in every reading), stored after
//! the failure and loaded before it, so a reading never holds a slow
//! failure without its failure.

use std::fmt;

use super::{AtomicU64, Ordering};
use crate::policy::Counts;

#[cfg(not(fuse_loom))]
use core::sync::atomic::fence;
#[cfg(fuse_loom)]
use loom::sync::atomic::fence;

/// No epoch (epochs are 30 bits): the stamp of a cell never written.
const NO_EPOCH: u64 = u64::MAX;

/// How many times a reader re-reads a cell whose stamp moved under it
/// before it leaves the cell out (each move is its writer's progress).
const READ_TRIES: u32 = 4;

/// One bucket of one thread's lane.
pub(crate) struct Cell {
    seq: AtomicU64,
    epoch: AtomicU64,
    bucket: AtomicU64,
    calls: AtomicU64,
    failed: AtomicU64,
    /// The slow calls (low half) and the slow calls that failed (high
    /// half), each saturating at `u32::MAX`: see [`slow_word`].
    slow: AtomicU64,
}

/// The slow calls' word of `slow` slow calls, `slow_failed` of which
/// failed: a cell is one thread's bucket, whose counts saturate at
/// `u32::MAX` (over four billion calls of one thread in one bucket).
fn slow_word(slow: u64, slow_failed: u64) -> u64 {
    let half = |n: u64| n.min(u64::from(u32::MAX));
    half(slow) | half(slow_failed) << 32
}

/// The slow calls and the slow calls that failed in a [`slow_word`].
fn slow_counts(word: u64) -> (u64, u64) {
    (word & u64::from(u32::MAX), word >> 32)
}

/// What a cell held at one reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) epoch: u32,
    pub(crate) bucket: u64,
    pub(crate) counts: Counts,
}

/// A cell never written (a `const` where the atomics allow it).
macro_rules! new_cell {
    () => {
        Cell {
            seq: AtomicU64::new(0),
            epoch: AtomicU64::new(NO_EPOCH),
            bucket: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            slow: AtomicU64::new(0),
        }
    };
}

impl Cell {
    #[cfg(not(fuse_loom))]
    pub(crate) const fn new() -> Self {
        new_cell!()
    }

    #[cfg(fuse_loom)]
    pub(crate) fn new() -> Self {
        new_cell!()
    }

    /// Makes the cell unwritten again, for tests that start a circuit in
    /// a slot an earlier one used, at an epoch of their choosing (no
    /// other thread adds to it then).
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn clear(&self) {
        self.epoch.store(NO_EPOCH, Ordering::Relaxed);
        self.bucket.store(0, Ordering::Relaxed);
        self.calls.store(0, Ordering::Relaxed);
        self.failed.store(0, Ordering::Relaxed);
        self.slow.store(0, Ordering::Relaxed);
    }

    /// Adds `counts` to this cell under the stamp `epoch`, `bucket`: to its
    /// counts if it holds that stamp, otherwise in place of what it holds.
    /// Only the lane's own thread calls it.
    #[inline]
    pub(crate) fn add(&self, epoch: u32, bucket: u64, counts: Counts) {
        // Relaxed: only this thread writes the cell, and it reads its own
        // writes.
        let same = self.epoch.load(Ordering::Relaxed) == u64::from(epoch)
            && self.bucket.load(Ordering::Relaxed) == bucket;
        if same {
            // Relaxed: a concurrent reader may see the call or not; one
            // that sees a failure or a slow call sees its call (below).
            let calls = self.calls.load(Ordering::Relaxed);
            self.calls
                .store(calls.saturating_add(counts.calls), Ordering::Relaxed);
            if counts.failed != 0 {
                let failed = self.failed.load(Ordering::Relaxed);
                // Release: a reader that acquires the failure sees its call.
                self.failed
                    .store(failed.saturating_add(counts.failed), Ordering::Release);
            }
            if counts.slow != 0 {
                let (slow, slow_failed) = slow_counts(self.slow.load(Ordering::Relaxed));
                let word = slow_word(
                    slow.saturating_add(counts.slow),
                    slow_failed.saturating_add(counts.slow_failed),
                );
                // Release: as for a failure; a reader that acquires a
                // slow failure also sees its failure (stored above).
                self.slow.store(word, Ordering::Release);
            }
        } else {
            self.restamp(epoch, bucket, counts);
        }
    }

    /// Adds one call that neither failed nor was slow (a closed success)
    /// to the stamp the cell holds, which its thread knows to be the
    /// verdict's: [`add`](Self::add) without the stamp to compare or the
    /// counts to carry. Only the lane's own thread calls it. Loom models
    /// do not take it (their threads share one OS thread's thread-locals,
    /// where the quick path finds its cell): they add a success through
    /// `add`'s same-stamp branch, the same relaxed load and store.
    #[cfg_attr(fuse_loom, allow(dead_code))]
    #[inline]
    pub(crate) fn add_call(&self) {
        // Relaxed: as in `add`. Not saturating: one thread's calls in one
        // bucket do not reach 2^64.
        let calls = self.calls.load(Ordering::Relaxed);
        self.calls.store(calls.wrapping_add(1), Ordering::Relaxed);
    }

    /// Moves the cell to a new stamp holding `counts`.
    #[cold]
    fn restamp(&self, epoch: u32, bucket: u64, counts: Counts) {
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        // Release: the odd sequence is seen before any of the new words.
        fence(Ordering::Release);
        self.epoch.store(u64::from(epoch), Ordering::Relaxed);
        self.bucket.store(bucket, Ordering::Relaxed);
        self.calls.store(counts.calls, Ordering::Relaxed);
        self.failed.store(counts.failed, Ordering::Relaxed);
        self.slow.store(
            slow_word(counts.slow, counts.slow_failed),
            Ordering::Relaxed,
        );
        // Release: the new words are seen before the even sequence.
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// What the cell holds: `None` if it was never written, or if its
    /// writer is moving it to a new stamp (what it held is then at least a
    /// whole window behind the writer's time: see `tallies`), or if the
    /// stamp kept moving while it was read.
    pub(crate) fn read(&self) -> Option<Held> {
        for _ in 0..READ_TRIES {
            // Acquire: pairs with the writer's final release store.
            let before = self.seq.load(Ordering::Acquire);
            if !before.is_multiple_of(2) {
                return None;
            }
            let epoch = self.epoch.load(Ordering::Relaxed);
            let bucket = self.bucket.load(Ordering::Relaxed);
            // Acquire: pairs with the writer's release of a slow call, whose
            // call (and failure, if it failed) are then seen below, or of
            // a failure, whose call is then seen below.
            let (slow, slow_failed) = slow_counts(self.slow.load(Ordering::Acquire));
            let failed = self.failed.load(Ordering::Acquire);
            let calls = self.calls.load(Ordering::Relaxed);
            // Acquire: the loads above happen before the second reading.
            fence(Ordering::Acquire);
            let after = self.seq.load(Ordering::Relaxed);
            if before == after {
                let epoch = u32::try_from(epoch).ok()?;
                return Some(Held {
                    epoch,
                    bucket,
                    counts: Counts {
                        calls,
                        failed,
                        slow,
                        slow_failed,
                    },
                });
            }
        }
        None
    }
}

impl fmt::Debug for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cell").field("held", &self.read()).finish()
    }
}

/// The order of a circuit's failed and slow verdicts: each passes it (a
/// read-modify-write, acquire and release) after adding to its lane and
/// before reading the others. Of two such verdicts the later to pass sees
/// everything the earlier added, so two failures that together make the
/// rule hold are never both blind to each other.
#[derive(Debug)]
pub(crate) struct Passage(AtomicU64);

impl Passage {
    pub(crate) fn new() -> Self {
        Passage(AtomicU64::new(0))
    }

    /// Passes: acquires what every earlier verdict added before it passed,
    /// and releases what this one added.
    pub(crate) fn pass(&self) {
        // AcqRel: see the type's documentation.
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// One value per thread: the lanes of a circuit.
#[cfg(not(fuse_loom))]
pub(crate) struct PerThread<T: Send>(thread_local::ThreadLocal<T>);

#[cfg(not(fuse_loom))]
impl<T: Send + Sync> PerThread<T> {
    pub(crate) fn new() -> Self {
        PerThread(thread_local::ThreadLocal::new())
    }

    /// This thread's value, made by `make` the first time.
    #[inline]
    pub(crate) fn get_or(&self, make: impl FnOnce() -> T) -> &T {
        self.0.get_or(make)
    }

    /// Every thread's value (of threads that exited too: their counts
    /// still count, and the next thread given their slot goes on with it).
    pub(crate) fn each(&self, mut visit: impl FnMut(&T)) {
        for value in &self.0 {
            visit(value);
        }
    }
}

/// The most threads a loom model gives values to.
#[cfg(fuse_loom)]
const LOOM_THREADS: usize = 4;

/// One value per loom thread, in slots made with the circuit (before any
/// model thread starts): a thread takes the next free slot under a `std`
/// mutex that loom does not see (never held across a loom operation),
/// makes its value there and publishes it with a loom release store of the
/// slot's flag, which a reader loads (acquire) before it reads the value's
/// atomics, as `thread_local` publishes its entries.
#[cfg(fuse_loom)]
pub(crate) struct PerThread<T: Send + Sync> {
    owners: std::sync::Mutex<Vec<loom::thread::ThreadId>>,
    slots: Box<[(loom::sync::atomic::AtomicBool, std::sync::OnceLock<T>)]>,
}

#[cfg(fuse_loom)]
impl<T: Send + Sync> PerThread<T> {
    pub(crate) fn new() -> Self {
        PerThread {
            owners: std::sync::Mutex::new(Vec::new()),
            slots: (0..LOOM_THREADS)
                .map(|_| {
                    (
                        loom::sync::atomic::AtomicBool::new(false),
                        std::sync::OnceLock::new(),
                    )
                })
                .collect(),
        }
    }

    pub(crate) fn get_or(&self, make: impl FnOnce() -> T) -> &T {
        let id = loom::thread::current().id();
        let index = {
            let mut owners = self
                .owners
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(index) = owners.iter().position(|owner| *owner == id) {
                index
            } else {
                owners.push(id);
                owners.len() - 1
            }
        };
        let (present, value) = &self.slots[index];
        let mut fresh = false;
        let value = value.get_or_init(|| {
            fresh = true;
            make()
        });
        if fresh {
            // Release: publishes the value's atomics to the readers below.
            present.store(true, Ordering::Release);
        }
        value
    }

    pub(crate) fn each(&self, mut visit: impl FnMut(&T)) {
        for (present, value) in &self.slots {
            // Acquire: pairs with the release that published the value.
            if present.load(Ordering::Acquire)
                && let Some(value) = value.get()
            {
                visit(value);
            }
        }
    }
}

#[cfg(not(fuse_loom))]
impl<T: Send> fmt::Debug for PerThread<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PerThread")
    }
}

#[cfg(fuse_loom)]
impl<T: Send + Sync> fmt::Debug for PerThread<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PerThread")
    }
}
