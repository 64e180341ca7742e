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

use crate::config::Config;
use crate::epoch::Epoch;
use crate::policy::{self, Counts, Outcome};
use crate::sync::{Cell, Passage, PerThread};

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
            width: policy::rate::width(config),
        }
    }

    /// Adds a closed verdict of `epoch` at window time `now` to this
    /// thread's lane.
    #[inline]
    pub(crate) fn add(&self, epoch: Epoch, outcome: Outcome, now: u64) {
        let lane = self.lanes.get_or(|| Lane::new(self.cells));
        let counts = Counts::of(outcome);
        match lane.current(epoch, now) {
            Some(cell) => cell.add(epoch.get(), lane.bucket.load(Relaxed), counts),
            None => self.add_in_new_bucket(lane, epoch, counts, now),
        }
    }

    /// Adds a closed success of `epoch` at window time `now` (the closed
    /// path of `rate`) if this thread's lane has a current cell of that
    /// epoch and `now`'s bucket: `false` if not (nothing was added; then
    /// [`add`](Self::add) does). A function without calls but the
    /// thread's id, for the caller's few registers.
    #[inline]
    pub(crate) fn add_success_quickly(&self, epoch: Epoch, now: u64) -> bool {
        let Some(cell) = self.lanes.get().and_then(|lane| lane.current(epoch, now)) else {
            return false;
        };
        cell.add_call();
        true
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
        #[allow(clippy::cast_possible_truncation)] // an index below 61
        let index = self.index.load(Relaxed) as usize;
        self.cells.get(index).filter(|_| current)
    }

    fn cell(&self, index: u64) -> &Cell {
        #[allow(clippy::cast_possible_truncation)] // below cells <= 61
        &self.cells[index as usize]
    }
}

#[cfg(all(test, not(fuse_loom)))]
mod tests {
    use super::*;
    use crate::Policy;
    use std::time::Duration;

    fn config(buckets: u32) -> Config {
        Config::builder()
            .policy(Policy::Rate)
            .window_buckets(buckets)
            .failure_window(Duration::from_nanos(100 * u64::from(buckets)))
            .minimum_calls(2)
            .failure_rate(50)
            .build()
            .unwrap()
    }

    #[test]
    fn verdicts_count_in_their_bucket_until_it_leaves_the_window() {
        let config = config(3);
        let tallies = Tallies::new(&config);
        let epoch = Epoch::new(4);
        tallies.add(epoch, Outcome::SUCCESS, 50);
        tallies.add(epoch, Outcome::FAILURE, 150);
        let at = |now| tallies.sum(&config, epoch, now);
        assert_eq!(
            at(299),
            Counts {
                calls: 2,
                failed: 1,
                slow: 0
            }
        );
        assert_eq!(
            at(300),
            Counts {
                calls: 1,
                failed: 1,
                slow: 0
            }
        );
        assert_eq!(at(400), Counts::default());
        assert!(tallies.holds(&config, epoch, 299));
        assert_eq!(tallies.sum(&config, Epoch::new(5), 299), Counts::default());
    }

    #[test]
    fn a_lane_reuses_its_cells_round_the_ring() {
        let config = config(2);
        let tallies = Tallies::new(&config);
        let epoch = Epoch::ZERO;
        for bucket in 0..20u64 {
            tallies.add(epoch, Outcome::FAILURE, bucket * 100);
            tallies.add(epoch, Outcome::SUCCESS, bucket * 100 + 99);
            let sum = tallies.sum(&config, epoch, bucket * 100 + 99);
            let live = (bucket + 1).min(2);
            assert_eq!(
                sum,
                Counts {
                    calls: 2 * live,
                    failed: live,
                    slow: 0
                },
                "bucket {bucket}"
            );
        }
    }

    #[test]
    fn every_thread_counts_and_a_reader_sums_to_the_latest_bucket() {
        let config = config(2);
        let tallies = Tallies::new(&config);
        let epoch = Epoch::ZERO;
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    for _ in 0..1000 {
                        tallies.add(epoch, Outcome::SUCCESS, 10);
                    }
                });
            }
        });
        assert_eq!(tallies.sum(&config, epoch, 10).calls, 3000);
        // A thread that reached bucket 3 makes bucket 0 leave the window
        // even for a reader whose own time is in bucket 0.
        std::thread::scope(|scope| {
            scope.spawn(|| tallies.add(epoch, Outcome::SUCCESS, 300));
        });
        assert_eq!(tallies.sum(&config, epoch, 10).calls, 1);
    }
}
