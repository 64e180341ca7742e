//! What the engine reads from a configuration: its durations in integer
//! nanoseconds (exact: every duration is validated to fit well inside a
//! `u64`), and whether admissions read the clock to time calls.

use std::time::Duration;

use super::Config;
use crate::policy::kind::Policy;

impl Config {
    /// The probe timeout in nanoseconds.
    #[inline]
    pub(crate) fn probe_timeout_nanos(&self) -> u64 {
        nanos(self.probe_timeout())
    }

    /// Whether admissions read the clock to time calls: `rate` with a
    /// `slow_call_duration`.
    #[inline]
    pub(crate) fn times_calls(&self) -> bool {
        self.policy == Policy::Rate && self.slow_call_duration.is_some()
    }

    /// The `slow_call_duration` in nanoseconds (`u64::MAX` when none).
    #[inline]
    pub(crate) fn slow_nanos(&self) -> u64 {
        self.slow_call_duration.map_or(u64::MAX, nanos)
    }

    /// The window in nanoseconds (exact: validated to fit well inside `u64`).
    #[inline]
    pub(crate) fn window_nanos(&self) -> u64 {
        nanos(self.failure_window)
    }

    /// The open duration in nanoseconds.
    #[inline]
    pub(crate) fn open_nanos(&self) -> u64 {
        nanos(self.open_duration)
    }

    /// milon/fuse's store TTL, in nanoseconds: twice the longer of the
    /// window and the longest opening (how long a shared circuit's payload
    /// lives, and how long an unused circuit is kept by default).
    #[inline]
    pub(crate) fn ttl_nanos(&self) -> u64 {
        2 * self.window_nanos().max(nanos(self.max_open_duration()))
    }
}

/// Nanoseconds of a validated duration; saturates for any other. (In
/// 64-bit arithmetic: one multiplication, on the rejection path.)
#[inline]
pub(crate) fn nanos(duration: Duration) -> u64 {
    duration
        .as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(duration.subsec_nanos()))
}
