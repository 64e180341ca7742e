//! The circuit's time: integer nanoseconds since an origin, read from its
//! `quanta::Clock` or, coarsely, from one atomic that an upkeep thread
//! refreshes for the whole process.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use quanta::Clock;

use crate::sync::{coarse_now, set_coarse_now};

/// The start of a call its circuit did not time when it was admitted: no
/// time, so never slow (`now - UNTIMED` saturates at 0), whatever the
/// settings its verdict is judged by (SPEC §12: timing switched on while
/// it ran).
pub(crate) const UNTIMED: u64 = u64::MAX;

/// How often the coarse clock's upkeep thread refreshes the coarse time.
pub(crate) const UPKEEP_INTERVAL: Duration = Duration::from_millis(1);

/// Where a circuit reads its time.
#[derive(Clone, Debug)]
pub(crate) enum Time {
    /// The clock, read on every call (nanoseconds since its origin).
    Precise(Clock),
    /// The process's coarse time: one load, up to [`UPKEEP_INTERVAL`] old.
    Coarse,
    /// A clock of the caller's own (a mock) read coarsely: quanta's recent
    /// time of that clock, since its origin.
    Recent {
        /// The clock.
        clock: Clock,
        /// Its origin in its own instants.
        origin: quanta::Instant,
    },
}

impl Time {
    /// The time of a circuit: `clock` (the real clock when `None`), read
    /// precisely, or coarsely when `coarse`. Coarsely, the real clock is
    /// the process's coarse time (its upkeep thread started here once per
    /// process; when it cannot be started, the clock is read precisely) and
    /// a clock of the caller's own is read through quanta's recent time.
    pub(crate) fn new(clock: Option<Clock>, coarse: bool) -> Self {
        match (clock, coarse) {
            (None, true) if coarse_clock_running() => Time::Coarse,
            (Some(clock), true) if recent_time_running() => Time::Recent {
                origin: clock.scaled(0),
                clock,
            },
            (clock, _) => Time::Precise(clock.unwrap_or_else(real_clock)),
        }
    }

    /// Whether this time is read coarsely.
    pub(crate) fn is_coarse(&self) -> bool {
        !matches!(self, Time::Precise(_))
    }

    /// Nanoseconds since the origin (zero for a new mock clock). The coarse
    /// time is read inline; a clock read is a call, which keeps the
    /// caller's register saves to what the coarse load needs.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        if let Time::Coarse = self {
            coarse_now()
        } else {
            self.read_clock()
        }
    }

    /// [`now`](Self::now) with a precise clock read inline (a coarse time
    /// is read out of line), for a caller that saves its registers anyway
    /// (one that calls out for more than the time).
    #[allow(clippy::inline_always)] // measured: a counted failure inlines whole
    #[inline(always)]
    pub(crate) fn now_inline(&self) -> u64 {
        if let Time::Precise(clock) = self {
            clock.delta_as_nanos(0, clock.raw())
        } else {
            self.read_clock()
        }
    }

    #[inline(never)]
    fn read_clock(&self) -> u64 {
        match self {
            Time::Precise(clock) => clock.delta_as_nanos(0, clock.raw()),
            Time::Coarse => coarse_now(),
            Time::Recent { clock, origin } => {
                // quanta's instants only give their value as a `Duration`.
                let since = clock.recent().duration_since(*origin);
                since
                    .as_secs()
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(u64::from(since.subsec_nanos()))
            }
        }
    }
}

/// The real clock, made once per process and cloned: making a
/// `quanta::Clock` runs `cpuid`, which a virtual machine traps (tens of
/// microseconds each time).
fn real_clock() -> Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(Clock::new).clone()
}

/// Starts the coarse clock's upkeep thread once per process; whether the
/// coarse time is being kept.
fn coarse_clock_running() -> bool {
    static RUNNING: OnceLock<bool> = OnceLock::new();
    *RUNNING.get_or_init(|| {
        let origin = Instant::now();
        let since_origin = move || u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        set_coarse_now(since_origin());
        std::thread::Builder::new()
            .name("fuse-coarse-clock".to_owned())
            .spawn(move || {
                loop {
                    std::thread::sleep(UPKEEP_INTERVAL);
                    set_coarse_now(since_origin());
                }
            })
            .is_ok()
    })
}

/// Starts quanta's upkeep thread once per process, for clocks of the
/// caller's own read coarsely; whether their recent time is being kept.
fn recent_time_running() -> bool {
    static RUNNING: OnceLock<bool> = OnceLock::new();
    *RUNNING.get_or_init(|| match quanta::Upkeep::new(UPKEEP_INTERVAL).start() {
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
mod tests;
