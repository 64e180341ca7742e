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
//! dropped count before its id is reused. Counting never takes the mutex.
//!
//! Memory: 12 bytes per count, 4 KiB per thread per chunk of 512 ids it
//! counted for, and 32 KiB of chunk table per counting thread.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

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

/// The lanes of the live threads, the counts of departed ones, and the ids.
#[derive(Default)]
struct Lanes {
    live: Vec<Arc<Lane>>,
    departed: Vec<u64>,
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

/// This thread's lane, registered while the thread lives.
struct Registered(Arc<Lane>);

impl Registered {
    fn new() -> Self {
        let lane = Arc::new(Lane::new());
        lanes().live.push(lane.clone());
        Registered(lane)
    }
}

impl Drop for Registered {
    /// The thread exits: its counts move to the departed threads' counts.
    fn drop(&mut self) {
        let mut lanes = lanes();
        lanes.live.retain(|lane| !Arc::ptr_eq(lane, &self.0));
        for (id, counter) in self.0.each() {
            let value = counter.load(Relaxed);
            if value != 0 {
                if lanes.departed.len() <= id {
                    lanes.departed.resize(id + 1, 0);
                }
                lanes.departed[id] += value;
            }
        }
    }
}

thread_local! {
    static LANE: Registered = Registered::new();
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

    /// Adds `n`: this thread's counter only.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        let counted = self.id.is_some_and(|id| {
            LANE.try_with(|lane| {
                let counter = lane.0.counter(id);
                // Relaxed load and store, not a read-modify-write: no other
                // thread writes this counter while the count lives.
                counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
            })
            .is_ok()
        });
        if !counted {
            // Relaxed: a count; nothing is ordered by it.
            self.shared.fetch_add(n, Relaxed);
        }
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
