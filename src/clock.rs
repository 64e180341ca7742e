//! The circuit's time: integer nanoseconds since the origin of its
//! `quanta::Clock`, read precisely or coarsely.

use std::sync::OnceLock;
use std::time::Duration;

use quanta::{Clock, Instant, Upkeep};

/// How often the coarse clock's upkeep thread refreshes the recent time.
pub(crate) const UPKEEP_INTERVAL: Duration = Duration::from_millis(1);

/// Where a circuit reads its time.
#[derive(Clone, Debug)]
pub(crate) struct Time {
    clock: Clock,
    /// Read quanta's recent time (kept by an upkeep thread) rather than the
    /// clock itself.
    coarse: bool,
    /// The clock's origin in its own instants (for the coarse reading).
    origin: Instant,
}

impl Time {
    /// The clock read precisely, or coarsely when `coarse` and a quanta
    /// upkeep thread runs (started here once per process if needed; when it
    /// cannot be started, the clock is read precisely).
    pub(crate) fn new(clock: Clock, coarse: bool) -> Self {
        let coarse = coarse && upkeep_running();
        Time {
            origin: clock.scaled(0),
            clock,
            coarse,
        }
    }

    /// Whether this time is the coarse one.
    pub(crate) fn is_coarse(&self) -> bool {
        self.coarse
    }

    /// Nanoseconds since the clock's origin (zero for a mock clock).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        if self.coarse {
            // quanta's instants only give their value as a `Duration`.
            let since = self.clock.recent().duration_since(self.origin);
            since
                .as_secs()
                .wrapping_mul(1_000_000_000)
                .wrapping_add(u64::from(since.subsec_nanos()))
        } else {
            self.clock.delta_as_nanos(0, self.clock.raw())
        }
    }
}

/// Starts quanta's upkeep thread once per process; whether recent time is
/// being kept (by this thread or by one the program started itself).
fn upkeep_running() -> bool {
    static RUNNING: OnceLock<bool> = OnceLock::new();
    *RUNNING.get_or_init(|| match Upkeep::new(UPKEEP_INTERVAL).start() {
        Ok(handle) => {
            // The thread runs for the life of the process.
            std::mem::forget(handle);
            true
        }
        Err(quanta::Error::UpkeepRunning) => true,
        Err(quanta::Error::FailedToSpawnUpkeepThread(_)) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_readings_of_a_mock_clock_are_its_value() {
        let (clock, mock) = Clock::mock();
        let precise = Time::new(clock.clone(), false);
        let coarse = Time::new(clock, true);
        assert!(coarse.is_coarse());
        assert_eq!((precise.now(), coarse.now()), (0, 0));
        mock.increment(1_234_567);
        assert_eq!((precise.now(), coarse.now()), (1_234_567, 1_234_567));
    }

    #[test]
    fn the_coarse_clock_moves_on_its_own() {
        let time = Time::new(Clock::new(), true);
        let start = time.now();
        std::thread::sleep(UPKEEP_INTERVAL * 20);
        assert!(
            time.now() > start,
            "the upkeep thread refreshes recent time"
        );
    }
}
