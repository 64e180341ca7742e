//! Call durations, for the `resilience4j` scheme's histogram
//! (`resilience4j_circuitbreaker_calls_seconds_bucket`, `_sum`, `_count`):
//! kept per thread like admissions (a bucket's count and the sum of
//! nanoseconds, each a [`Count`]), so that a closed success writes no
//! cache line another thread writes, and published as absolute values.
//!
//! And the longest call of the last two minutes or so
//! (`resilience4j_circuitbreaker_calls_seconds_max`), a maximum that
//! decays as resilience4j's does: the calls that ended in the current
//! period of [`PERIOD`] and the two before, on the circuit's clock. Each
//! period keeps its longest call in one shared word, which a call only
//! reads unless it is the longest of its period so far (the period's
//! first call, then each new longest: a handful of writes per period).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use metrics::{Counter, Gauge, counter, gauge};

use crate::lanes::Count;

/// The upper bounds of the buckets, in seconds (`le`), the last one
/// `+Inf`: the Prometheus clients' default buckets.
const BOUNDS: [&str; 12] = [
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf",
];

/// The same bounds in nanoseconds (the last bucket takes the rest).
const NANOS: [u64; 11] = [
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// A period of the decaying maximum, in nanoseconds: 40 s, so that the
/// three kept cover 80 to 120 s (resilience4j's: two minutes in three).
pub(super) const PERIOD: u64 = 40_000_000_000;

/// The periods the maximum is taken over: the current one and those
/// before it (the length of [`Durations::longest`]).
const PERIODS: u64 = 3;

/// A period's longest call: the period (low 24 bits, modulo 2^24: 21
/// years of periods) and the microseconds (high 40 bits: 12 days, at
/// most).
fn longest(period: u64, micros: u64) -> u64 {
    (period & PERIOD_MASK) | micros.min(MAX_MICROS) << 24
}

const PERIOD_MASK: u64 = (1 << 24) - 1;
const MAX_MICROS: u64 = (1 << 40) - 1;

/// The index of the bucket of a call that took `nanos`.
fn bucket(nanos: u64) -> usize {
    NANOS.partition_point(|&bound| bound < nanos)
}

/// The durations of one kind of call of one circuit, and their series.
pub(super) struct Durations {
    /// Calls per bucket (not cumulative).
    counts: [Count; 12],
    /// Nanoseconds, summed.
    nanos: Count,
    /// The longest call of each of the last [`PERIODS`] periods, by
    /// period modulo [`PERIODS`] (see [`longest`]; 0: none).
    longest: [AtomicU64; 3],
    buckets: [Counter; 12],
    count: Counter,
    sum: Gauge,
    max: Gauge,
}

impl Durations {
    /// The series of the calls of `kind` of the circuit `name`, at zero.
    pub(super) fn new(name: &str, kind: &'static str) -> Self {
        let durations = Durations {
            counts: std::array::from_fn(|_| Count::new()),
            nanos: Count::new(),
            longest: std::array::from_fn(|_| AtomicU64::new(0)),
            buckets: BOUNDS.map(|le| {
                counter!(
                    "resilience4j_circuitbreaker_calls_seconds_bucket",
                    "name" => name.to_owned(),
                    "kind" => kind,
                    "le" => le
                )
            }),
            count: counter!(
                "resilience4j_circuitbreaker_calls_seconds_count",
                "name" => name.to_owned(),
                "kind" => kind
            ),
            sum: gauge!(
                "resilience4j_circuitbreaker_calls_seconds_sum",
                "name" => name.to_owned(),
                "kind" => kind
            ),
            max: gauge!(
                "resilience4j_circuitbreaker_calls_seconds_max",
                "name" => name.to_owned(),
                "kind" => kind
            ),
        };
        durations.publish(None);
        durations.max.set(0.0);
        durations
    }

    /// A call that took `nanos` and ended at `now` (on the circuit's
    /// clock): this thread's counters, and the period's longest call if
    /// it is longer.
    #[inline]
    pub(super) fn add(&self, nanos: u64, now: u64) {
        self.counts[bucket(nanos)].add_one();
        self.nanos.add(nanos);
        let period = now / PERIOD;
        let micros = nanos / 1_000;
        #[allow(clippy::cast_possible_truncation)] // below PERIODS
        let word = &self.longest[(period % PERIODS) as usize];
        // Relaxed: a maximum; nothing is ordered by it.
        let held = word.load(Relaxed);
        if held & PERIOD_MASK != period & PERIOD_MASK || held >> 24 < micros.min(MAX_MICROS) {
            Self::lengthen(word, period, micros);
        }
    }

    /// Makes `micros` the longest call of `period` in `word`, unless a
    /// call of that period as long or longer is there.
    #[cold]
    fn lengthen(word: &AtomicU64, period: u64, micros: u64) {
        let new = longest(period, micros);
        // Relaxed: as in `add`.
        let _ = word.fetch_update(Relaxed, Relaxed, |held| {
            let same = held & PERIOD_MASK == new & PERIOD_MASK;
            (!same || held >> 24 < new >> 24).then_some(new)
        });
    }

    /// The longest call that ended in the period of `now` or the
    /// [`PERIODS`] - 1 before it, in microseconds.
    fn max_micros(&self, now: u64) -> u64 {
        let period = now / PERIOD;
        self.longest
            .iter()
            .map(|word| word.load(Relaxed))
            .filter(|&held| {
                // A period ahead of `now` (a call that ended after the
                // publisher read its time) wraps to a large age, kept.
                let age = period.wrapping_sub(held & PERIOD_MASK) & PERIOD_MASK;
                held != 0 && !(PERIODS..=PERIOD_MASK / 2).contains(&age)
            })
            .map(|held| held >> 24)
            .max()
            .unwrap_or(0)
    }

    /// Publishes the counts summed over the threads: each bucket
    /// cumulative, as Prometheus reads a histogram; and, given the time
    /// on the circuit's clock, the longest call of the last periods.
    pub(super) fn publish(&self, now: Option<u64>) {
        if let Some(now) = now {
            #[allow(clippy::cast_precision_loss)] // exact below 2^53 µs
            self.max.set(self.max_micros(now) as f64 / 1e6);
        }
        let mut below = 0u64;
        for (count, series) in self.counts.iter().zip(&self.buckets) {
            below = below.wrapping_add(count.sum());
            series.absolute(below);
        }
        self.count.absolute(below);
        #[allow(clippy::cast_precision_loss)] // exact to the nanosecond up to 104 days
        self.sum.set(self.nanos.sum() as f64 / 1e9);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_lands_in_the_first_bucket_that_holds_it() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(5_000_000), 0, "le is inclusive");
        assert_eq!(bucket(5_000_001), 1);
        assert_eq!(bucket(1_000_000_000), 7);
        assert_eq!(bucket(10_000_000_001), 11, "+Inf");
        assert_eq!(bucket(u64::MAX), 11);
    }

    #[test]
    fn the_longest_call_decays_period_by_period() {
        let durations = Durations::new("decay", "successful");
        let second = 1_000_000_000;
        let at = |period: u64, into: u64| period * PERIOD + into * second;
        durations.add(2 * second, at(5, 1));
        durations.add(7 * second, at(5, 2));
        durations.add(3 * second, at(5, 3));
        assert_eq!(durations.max_micros(at(5, 39)), 7_000_000);
        durations.add(second, at(6, 0));
        assert_eq!(durations.max_micros(at(7, 39)), 7_000_000, "two periods on");
        assert_eq!(durations.max_micros(at(8, 0)), 1_000_000, "period 5 left");
        assert_eq!(durations.max_micros(at(9, 0)), 0, "period 6 left");
        // Period 8's word is period 5's: a new period replaces it even
        // with a shorter call.
        durations.add(second / 2, at(8, 1));
        assert_eq!(durations.max_micros(at(10, 2)), 500_000);
        // A call that ended after the publisher read its time counts.
        durations.add(4 * second, at(9, 0));
        assert_eq!(durations.max_micros(at(8, 39)), 4_000_000);
    }

    #[test]
    fn a_longest_call_saturates_at_twelve_days() {
        assert_eq!(longest(3, u64::MAX) >> 24, MAX_MICROS);
        assert_eq!(longest((1 << 24) + 3, 5) & PERIOD_MASK, 3);
    }
}
