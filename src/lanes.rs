//! Per-thread counters (feature `metrics`): counts that any number of
//! threads add to without a read-modify-write, and without writing a cache
//! line another thread writes.
//!
//! Every [`Count`] has an id, reused once the count is dropped. Every
//! thread that counts has a lane: chunks of 512 counters indexed by id,
//! each chunk allocated the first time the thread counts for an id in it,
//! and written by that thread only, with a load and a store (no lock
//! prefix, no contention). A count's value is the sum over the lanes, read
//! under the one mutex that also folds the lane of a thread that exits
//! into the counts of departed threads, and clears the counters of a
//! dropped count before its id is reused. Counting never takes the mutex;
//! a thread keeps its two counters added to last in a constant
//! thread-local, so a loop that counts for one circuit (or two counts)
//! finds its counter with one thread-local read.
//!
//! Memory: 12 bytes per count, 4 KiB per lane per chunk of 512 ids it
//! counted for, and 32 KiB of chunk table per lane. A lane lives as long
//! as the process: a thread that exits leaves its lane, cleared, to the
//! next thread that counts, so there are as many lanes as threads ever
//! counted at once.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Counters per chunk.
const CHUNK: usize = 512;
/// Chunks per lane: ids below 2^21.
const CHUNKS: usize = 4096;
/// The number of ids: counts beyond as many live at once share one atomic
/// each (still exact, no longer free of read-modify-writes).
const IDS: usize = CHUNK * CHUNKS;

/// One chunk of a lane, on cache lines of its own.
#[repr(align(128))]
struct Chunk([AtomicU64; CHUNK]);

/// One thread's counters.
struct Lane {
    chunks: Box<[OnceLock<Box<Chunk>>]>,
}

impl Lane {
    fn new() -> Self {
        Lane {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// This thread's counter for `id` (allocating its chunk if needed).
    #[inline]
    fn counter(&self, id: usize) -> &AtomicU64 {
        let chunk = self.chunks[id / CHUNK]
            .get_or_init(|| Box::new(Chunk(std::array::from_fn(|_| AtomicU64::new(0)))));
        &chunk.0[id % CHUNK]
    }

    /// The value of `id` in this lane.
    fn get(&self, id: usize) -> u64 {
        self.chunks[id / CHUNK]
            .get()
            // Relaxed: a count; the mutex every reader holds orders nothing
            // it needs beyond the value itself.
            .map_or(0, |chunk| chunk.0[id % CHUNK].load(Relaxed))
    }

    /// Every counter of this lane that is not zero, by id.
    fn each(&self) -> impl Iterator<Item = (usize, &AtomicU64)> {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(n, chunk)| chunk.get().map(|chunk| (n, chunk)))
            .flat_map(|(n, chunk)| {
                chunk
                    .0
                    .iter()
                    .enumerate()
                    .map(move |(i, counter)| (n * CHUNK + i, counter))
            })
    }
}

/// The lanes of the live threads, the counts of departed ones, the lanes
/// departed threads left (cleared, for the next thread that counts), and
/// the ids.
#[derive(Default)]
struct Lanes {
    live: Vec<&'static Lane>,
    departed: Vec<u64>,
    spare: Vec<&'static Lane>,
    free: Vec<usize>,
    next: usize,
}

fn lanes() -> MutexGuard<'static, Lanes> {
    static LANES: OnceLock<Mutex<Lanes>> = OnceLock::new();
    LANES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// This thread's lane, registered while the thread lives. Lanes are never
/// freed: a departed thread's is cleared and goes to the next thread that
/// counts, so there are as many as threads ever counted at once.
struct Registered(&'static Lane);

impl Registered {
    fn new() -> Self {
        let mut lanes = lanes();
        let lane = lanes
            .spare
            .pop()
            .unwrap_or_else(|| Box::leak(Box::new(Lane::new())));
        lanes.live.push(lane);
        Registered(lane)
    }
}

impl Drop for Registered {
    /// The thread exits: its counts move to the departed threads' counts,
    /// and its lane, cleared, to the spare ones (after this thread's
    /// recent counters are forgotten: it counts in the shared atomics from
    /// now on).
    fn drop(&mut self) {
        RECENT.with(|recent| recent.set(NO_RECENT));
        let mut lanes = lanes();
        lanes.live.retain(|lane| !std::ptr::eq(*lane, self.0));
        for (id, counter) in self.0.each() {
            let value = counter.load(Relaxed);
            if value != 0 {
                if lanes.departed.len() <= id {
                    lanes.departed.resize(id + 1, 0);
                }
                lanes.departed[id] += value;
                counter.store(0, Relaxed);
            }
        }
        lanes.spare.push(self.0);
    }
}

/// A thread's two counters added to last, by id: the counter of an id in
/// a lane is the same for the lane's life, whichever count holds the id.
type Recent = [(usize, Option<&'static AtomicU64>); 2];

/// No counter added to yet.
const NO_RECENT: Recent = [(usize::MAX, None); 2];

thread_local! {
    static LANE: Registered = Registered::new();
    /// A constant thread-local without a destructor: read with one load,
    /// no check of its state.
    static RECENT: std::cell::Cell<Recent> = const { std::cell::Cell::new(NO_RECENT) };
}

/// This thread's counter of `id`, if it added to it last or the time
/// before.
#[inline]
fn recent(id: usize) -> Option<&'static AtomicU64> {
    let [first, second] = RECENT.with(std::cell::Cell::get);
    if first.0 == id {
        first.1
    } else if second.0 == id {
        second.1
    } else {
        None
    }
}

/// A count that threads add to without contending.
#[derive(Debug)]
pub(crate) struct Count {
    /// Its counters' index in every lane, or `None` when every id is taken.
    id: Option<usize>,
    /// What was added when no lane could be used (every id taken, or a
    /// thread counting while its thread-locals are torn down).
    shared: AtomicU64,
}

impl Count {
    pub(crate) fn new() -> Self {
        let mut lanes = lanes();
        let id = lanes.free.pop().or_else(|| {
            (lanes.next < IDS).then(|| {
                lanes.next += 1;
                lanes.next - 1
            })
        });
        Count {
            id,
            shared: AtomicU64::new(0),
        }
    }

    /// Adds one: this thread's counter only.
    #[inline]
    pub(crate) fn add_one(&self) {
        self.add(1);
    }

    /// Adds `n`: this thread's counter only (found with one thread-local
    /// read when this thread added to it last or the time before).
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        if let Some(id) = self.id {
            if let Some(counter) = recent(id) {
                // Relaxed load and store, not a read-modify-write: no other
                // thread writes this counter while the count lives.
                counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
                return;
            }
            if Self::add_in_lane(id, n) {
                return;
            }
        }
        // Relaxed: a count; nothing is ordered by it.
        self.shared.fetch_add(n, Relaxed);
    }

    /// Adds `n` to this thread's counter of `id`, found in its lane, and
    /// remembers it; `false` when the thread has no lane (its
    /// thread-locals are torn down).
    #[inline(never)]
    fn add_in_lane(id: usize, n: u64) -> bool {
        LANE.try_with(|lane| {
            let counter = lane.0.counter(id);
            counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
            RECENT.with(|recent| {
                let [first, _] = recent.get();
                recent.set([(id, Some(counter)), first]);
            });
        })
        .is_ok()
    }

    /// The total added so far, by every thread.
    pub(crate) fn sum(&self) -> u64 {
        let shared = self.shared.load(Relaxed);
        let Some(id) = self.id else {
            return shared;
        };
        let lanes = lanes();
        let departed = lanes.departed.get(id).copied().unwrap_or(0);
        lanes
            .live
            .iter()
            .map(|lane| lane.get(id))
            .fold(shared + departed, u64::wrapping_add)
    }
}

impl Drop for Count {
    /// Clears this count's counters and frees its id. No thread adds to a
    /// count being dropped, and every addition happened before the drop.
    fn drop(&mut self) {
        let Some(id) = self.id else {
            return;
        };
        let mut lanes = lanes();
        for lane in &lanes.live {
            if let Some(chunk) = lane.chunks[id / CHUNK].get() {
                chunk.0[id % CHUNK].store(0, Relaxed);
            }
        }
        if let Some(departed) = lanes.departed.get_mut(id) {
            *departed = 0;
        }
        lanes.free.push(id);
    }
}

#[cfg(test)]
mod tests;
