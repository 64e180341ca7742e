//! The engine's memory of a `rate` window (SPEC §9): per thread, a lane of
//! `window_buckets + 1` bucket cells that only that thread writes (see
//! [`sync::Cell`](crate::sync::Cell)), so that a closed success writes no
//! cache line another thread writes.
//!
//! A verdict at window time `now` adds to its thread's cell for bucket
//! `b = now / width`, cell `b mod (window_buckets + 1)`, stamped with the
//! permit's epoch and `b`. A cell is moved to a new stamp only by its own
//! thread, for a bucket at least `window_buckets + 1` after the one it held
//! (or for a new epoch): what it held is out of the window of any time up
//! to a whole bucket behind the writer's. A reader sums, for one epoch, the
//! cells of every lane whose bucket is in the window that ends at the
//! latest bucket it finds (its own `now`'s, or a later one another thread
//! has reached): each verdict is in exactly one cell, read once, so none is
//! counted twice, and one is left out only when its cell has moved on past
//! the window the reader sums, or is moving (so its writer's time is a
//! bucket or more past the reader's).
//!
//! Entering a new epoch empties the window without writing: cells of other
//! epochs are not summed. A verdict of an epoch that ended adds to a cell
//! stamped with its old epoch, which no reader of a later epoch sums.
//!
//! A failed or slow verdict adds to its cell, passes the circuit's
//! [`Passage`](crate::sync::Passage), then sums: of two such verdicts the
//! later to pass sees the earlier's, so when the verdicts that happened
//! before one of them make the rule hold, that one sees it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Counts, width};
use crate::config::Config;
use crate::epoch::Epoch;
#[cfg(not(fuse_loom))]
use crate::model::{Grant, PermitKind};
use crate::policy::{self, Outcome};
use crate::sync::{Cell, Passage, PerThread};

/// The cell a thread last added to and its stamp (the end of its bucket,
/// and the epoch), by its window's address: a window is a slot's, never
/// freed, so its address names it for the life of the process (a later
/// circuit of the slot has other epochs). So a closed success of the same
/// window, epoch and bucket finds its cell with one thread-local read, not
/// through [`PerThread`]'s table. The bucket's start is not compared: the
/// quick path is the coarse time's, which no thread reads going back, and
/// the cell was stamped at a time this thread read before.
#[cfg(not(fuse_loom))]
#[derive(Clone, Copy)]
struct Recent {
    /// The window's address; 0 for none.
    window: usize,
    end: u64,
    /// The epoch as a closed permit's grant holds it.
    grant: u64,
    cell: &'static Cell,
}

#[cfg(not(fuse_loom))]
impl Recent {
    const NONE: Recent = Recent {
        window: 0,
        end: 0,
        grant: u64::MAX,
        cell: &NO_CELL,
    };
}

/// The cell of [`Recent::NONE`], never added to (no window has address 0).
#[cfg(not(fuse_loom))]
static NO_CELL: Cell = Cell::new();

/// Forgets this thread's [`Recent`] cell as the thread exits, before
/// [`PerThread`] gives its lane to a later thread (it is dropped first:
/// it is made after the thread's first lane, and thread-locals are
/// dropped in the reverse order), so that a verdict given while the
/// thread exits finds its lane anew and no two threads write one lane.
#[cfg(not(fuse_loom))]
struct Forget;

#[cfg(not(fuse_loom))]
impl Drop for Forget {
    fn drop(&mut self) {
        let _ = RECENT.try_with(|recent| recent.set(Recent::NONE));
    }
}

#[cfg(not(fuse_loom))]
thread_local! {
    static RECENT: std::cell::Cell<Recent> = const { std::cell::Cell::new(Recent::NONE) };
    static FORGET: Forget = const { Forget };
}

/// The most buckets a window has (the bound on [`Config::window_buckets`]),
/// plus the current one a summing reader may be ahead by.
const MAX_SUMMED: usize = crate::config::MAX_WINDOW_BUCKETS as usize;

/// A circuit's rate window: the lanes of its threads and its passage.
#[derive(Debug)]
pub(crate) struct Tallies {
    lanes: PerThread<Lane>,
    passage: Passage,
    /// Cells per lane: `window_buckets + 1`.
    cells: u64,
    width: u64,
}

/// One thread's cells, and the stamp of the cell it last added to (so
/// that a verdict of the same epoch in the same bucket finds its cell
/// without a division, and adds to it without reading its stamp).
#[derive(Debug)]
struct Lane {
    cells: Box<[Cell]>,
    /// The current cell's bucket's first and last nanosecond + 1, its
    /// epoch ([`NO_EPOCH`] before the first verdict), its bucket and its
    /// index: always the stamp the cell at `index` holds, since only this
    /// thread moves its cells. This thread's own: relaxed (no other thread
    /// reads them).
    start: AtomicU64,
    end: AtomicU64,
    epoch: AtomicU64,
    bucket: AtomicU64,
    index: AtomicU64,
}

/// A lane's epoch before its first verdict (epochs are 30 bits).
const NO_EPOCH: u64 = u64::MAX;

impl Tallies {
    /// The empty window of `config` (under `rate`).
    pub(crate) fn new(config: &Config) -> Self {
        Tallies {
            lanes: PerThread::new(),
            passage: Passage::new(),
            cells: u64::from(config.window_buckets()) + 1,
            width: width(config),
        }
    }

    /// Adds a closed verdict of `epoch` at window time `now` to this
    /// thread's lane, whose cell becomes the one
    /// [`add_success_quickly`](Self::add_success_quickly) finds. `true`
    /// when the verdict moved the lane to a new bucket (the throttle, SPEC
    /// §11, then recomputes its share: once per bucket and thread).
    #[inline]
    pub(crate) fn add(&'static self, epoch: Epoch, outcome: Outcome, now: u64) -> bool {
        self.add_counts(epoch, Counts::of(outcome), now)
    }

    /// [`add`](Self::add) of `counts` at once (a restored window's, SPEC
    /// §12).
    #[inline]
    pub(crate) fn add_counts(&'static self, epoch: Epoch, counts: Counts, now: u64) -> bool {
        let lane = self.lanes.get_or(|| Lane::new(self.cells));
        let started = if let Some(cell) = lane.current(epoch, now) {
            cell.add(epoch.get(), lane.bucket.load(Relaxed), counts);
            false
        } else {
            self.add_in_new_bucket(lane, epoch, counts, now);
            true
        };
        self.remember(lane);
        started
    }

    /// Moves this thread's lane to `now`'s bucket in `epoch`, adding
    /// nothing: `true` if it was not there yet (as [`add`](Self::add)
    /// says). A throttling `rate` circuit's verdicts are counted in its
    /// `rate` window, and enter the throttle's so that a thread's first
    /// request of a bucket, counted in either, recomputes the share once
    /// (SPEC §11). It does not become the cell
    /// [`add_success_quickly`](Self::add_success_quickly) finds.
    pub(crate) fn enter(&'static self, epoch: Epoch, now: u64) -> bool {
        let lane = self.lanes.get_or(|| Lane::new(self.cells));
        if lane.current(epoch, now).is_some() {
            return false;
        }
        self.add_in_new_bucket(lane, epoch, Counts::default(), now);
        true
    }

    /// Adds a closed success of `epoch` at window time `now` (the closed
    /// path of `rate`) if this thread's last verdict was added to this
    /// window, in that epoch and `now`'s bucket: `false` if not (nothing
    /// was added; then [`add`](Self::add) does). One thread-local read,
    /// compares, and the cell's count loaded and stored: no call.
    ///
    /// `window` is the window's [`address`](Self::address), or 0 for a
    /// circuit without a window on the coarse time, which never matches
    /// (no window is added to at time 0 or before, the end of `Recent::NONE`).
    #[inline]
    pub(crate) fn add_success_quickly(window: usize, epoch: Epoch, now: u64) -> bool {
        #[cfg(not(fuse_loom))]
        {
            // A thread-local without a destructor is never gone: `try_with`
            // only keeps a panic out of the path.
            let Ok(recent) = RECENT.try_with(std::cell::Cell::get) else {
                return false;
            };
            let current = recent.window == window
                && now < recent.end
                && recent.grant == Grant::new(PermitKind::Closed, epoch).bits();
            if current {
                recent.cell.add_call();
            }
            current
        }
        // A loom model's threads share one OS thread's thread-locals: its
        // verdicts all take `add`, whose same-bucket branch adds as here.
        #[cfg(fuse_loom)]
        {
            let _ = (window, epoch, now);
            false
        }
    }

    /// Empties the window, for tests that start a circuit in a slot an
    /// earlier one used, at an epoch of their choosing, which the earlier
    /// circuit's counts may hold (no other thread adds to it then); this
    /// thread forgets its recent cell.
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn clear(&self) {
        self.lanes.each(|lane| {
            for cell in &lane.cells {
                cell.clear();
            }
            lane.start.store(1, Relaxed);
            lane.end.store(0, Relaxed);
            lane.epoch.store(NO_EPOCH, Relaxed);
        });
        #[cfg(not(fuse_loom))]
        let _ = RECENT.try_with(|recent| recent.set(Recent::NONE));
    }

    /// The window's address, which names it for the life of the process
    /// (it is a slot's: never freed).
    pub(crate) fn address(&'static self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// Makes `lane`'s current cell (this thread's) the one
    /// [`add_success_quickly`](Self::add_success_quickly) finds.
    #[cfg_attr(fuse_loom, allow(clippy::unused_self, unused_variables))]
    fn remember(&'static self, lane: &'static Lane) {
        #[cfg(not(fuse_loom))]
        {
            if FORGET.try_with(|_| ()).is_err() {
                // The thread is exiting: its verdicts find their lane anew.
                return;
            }
            let epoch = lane.epoch.load(Relaxed);
            let cell = lane.cells.get(lane.index()).filter(|_| epoch != NO_EPOCH);
            let recent = match (cell, u32::try_from(epoch)) {
                (Some(cell), Ok(epoch)) => Recent {
                    window: self.address(),
                    end: lane.end.load(Relaxed),
                    grant: Grant::new(PermitKind::Closed, Epoch::new(epoch)).bits(),
                    cell,
                },
                _ => Recent::NONE,
            };
            let _ = RECENT.try_with(|slot| slot.set(recent));
        }
    }

    /// [`add`](Self::add) for a time outside the lane's current bucket,
    /// or another epoch: the lane's current cell becomes that of `now`'s
    /// bucket, stamped with `epoch`.
    #[cold]
    fn add_in_new_bucket(&self, lane: &Lane, epoch: Epoch, counts: Counts, now: u64) {
        let bucket = now / self.width;
        let start = bucket.saturating_mul(self.width);
        let index = bucket % self.cells;
        lane.cell(index).add(epoch.get(), bucket, counts);
        lane.start.store(start, Relaxed);
        lane.end.store(start.saturating_add(self.width), Relaxed);
        lane.epoch.store(u64::from(epoch.get()), Relaxed);
        lane.bucket.store(bucket, Relaxed);
        lane.index.store(index, Relaxed);
    }

    /// After a failed or slow verdict of `epoch` was added at window time
    /// `now`: whether the window now makes the rule hold.
    pub(crate) fn holds(&self, config: &Config, epoch: Epoch, now: u64) -> bool {
        self.passage.pass();
        policy::trips(config, self.sum(config, epoch, now))
    }

    /// The counts of `epoch`'s window at window time `now` (or at the
    /// latest bucket a lane has reached, if later). One reading of every
    /// cell; if a cell holds a bucket after `now`'s (another thread's
    /// time is ahead), the window is summed again, to that bucket.
    pub(crate) fn sum(&self, config: &Config, epoch: Epoch, now: u64) -> Counts {
        let top = now / self.width;
        let mut sum = Counts::default();
        let mut ahead = None;
        self.lanes.each(|lane| {
            for cell in &lane.cells {
                let Some(held) = cell.read() else { continue };
                if held.epoch != epoch.get() {
                    continue;
                }
                if held.bucket > top {
                    ahead = ahead.max(Some(held.bucket));
                } else if policy::live(config, held.bucket, top) {
                    sum = sum.plus(held.counts);
                }
            }
        });
        match ahead {
            None => sum,
            Some(_) => self.sum_ahead(config, epoch, top),
        }
    }

    /// [`sum`](Self::sum) when some lane is ahead of `top`: the window
    /// that ends at the latest bucket found, keeping each bucket's counts
    /// apart while that bucket is not yet known.
    #[cold]
    fn sum_ahead(&self, config: &Config, epoch: Epoch, mut top: u64) -> Counts {
        let window = u64::from(config.window_buckets());
        // Bucket `b`'s counts at `b mod window` (`u64::MAX`: none).
        let mut live = [(u64::MAX, Counts::default()); MAX_SUMMED];
        self.lanes.each(|lane| {
            for cell in &lane.cells {
                let Some(held) = cell.read() else { continue };
                if held.epoch != epoch.get()
                    || !policy::live(config, held.bucket, top.max(held.bucket))
                {
                    continue;
                }
                top = top.max(held.bucket);
                #[allow(clippy::cast_possible_truncation)] // below window <= 60
                let at = (held.bucket % window) as usize;
                let (bucket, counts) = &mut live[at];
                if *bucket == held.bucket {
                    *counts = counts.plus(held.counts);
                } else if *bucket == u64::MAX || *bucket < held.bucket {
                    // The slot's bucket (if any) is a whole window older.
                    *bucket = held.bucket;
                    *counts = held.counts;
                }
            }
        });
        live.iter()
            .filter(|&&(bucket, _)| bucket != u64::MAX && policy::live(config, bucket, top))
            .fold(Counts::default(), |sum, &(_, counts)| sum.plus(counts))
    }
}

impl Lane {
    fn new(cells: u64) -> Self {
        Lane {
            cells: (0..cells).map(|_| Cell::new()).collect(),
            start: AtomicU64::new(1),
            end: AtomicU64::new(0),
            epoch: AtomicU64::new(NO_EPOCH),
            bucket: AtomicU64::new(0),
            index: AtomicU64::new(0),
        }
    }

    /// The current cell, if it holds `epoch` and `now`'s bucket.
    #[inline]
    fn current(&self, epoch: Epoch, now: u64) -> Option<&Cell> {
        // Relaxed: this thread's own stamp of its current cell.
        let current = now >= self.start.load(Relaxed)
            && now < self.end.load(Relaxed)
            && self.epoch.load(Relaxed) == u64::from(epoch.get());
        self.cells.get(self.index()).filter(|_| current)
    }

    /// The index of the current cell.
    fn index(&self) -> usize {
        #[allow(clippy::cast_possible_truncation)] // an index below 61
        let index = self.index.load(Relaxed) as usize;
        index
    }

    fn cell(&self, index: u64) -> &Cell {
        #[allow(clippy::cast_possible_truncation)] // below cells <= 61
        &self.cells[index as usize]
    }
}

#[cfg(all(test, not(fuse_loom)))]
mod tests;
