//! Call durations, for the `resilience4j` scheme's histogram
//! (`resilience4j_circuitbreaker_calls_seconds_bucket`, `_sum`, `_count`):
//! kept per thread like admissions (a bucket's count and the sum of
//! nanoseconds, each a [`Count`]), so that a closed success writes no
//! cache line another thread writes, and published as absolute values.

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
    buckets: [Counter; 12],
    count: Counter,
    sum: Gauge,
}

impl Durations {
    /// The series of the calls of `kind` of the circuit `name`, at zero.
    pub(super) fn new(name: &str, kind: &'static str) -> Self {
        let durations = Durations {
            counts: std::array::from_fn(|_| Count::new()),
            nanos: Count::new(),
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
        };
        durations.publish();
        durations
    }

    /// A call that took `nanos`: this thread's counters only.
    #[inline]
    pub(super) fn add(&self, nanos: u64) {
        self.counts[bucket(nanos)].add_one();
        self.nanos.add(nanos);
    }

    /// Publishes the counts summed over the threads: each bucket
    /// cumulative, as Prometheus reads a histogram.
    pub(super) fn publish(&self) {
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
}
