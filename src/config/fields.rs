//! [`Config`]'s getters: what each setting is (the type, its fields and
//! their defaults are the list of settings in `overrides.rs`).

use std::time::Duration;

use super::Config;
use crate::classify::FailureKind;
use crate::factor::Factor;
use crate::policy::kind::Policy;

impl Config {
    /// How many counted failures inside the window open the circuit.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().failure_threshold(), 8);
    /// ```
    #[inline]
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// How long a counted failure stays in the count (inclusive edge).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fuse_breaker::Config::default().failure_window(), Duration::from_secs(60));
    /// ```
    pub fn failure_window(&self) -> Duration {
        self.failure_window
    }

    /// How long an open circuit rejects calls before the next call probes.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fuse_breaker::Config::default().open_duration(), Duration::from_secs(30));
    /// ```
    pub fn open_duration(&self) -> Duration {
        self.open_duration
    }

    /// How many probes may be in flight while half-open, and how many
    /// successful probes close the circuit.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().half_open_probes(), 2);
    /// ```
    #[inline]
    pub fn half_open_probes(&self) -> u32 {
        self.half_open_probes
    }

    /// The HTTP statuses that count as failures, as they were set (without
    /// the 500 that [`count_http_500`](Self::count_http_500) adds).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().counted_http_statuses(), &[502, 503, 504]);
    /// ```
    pub fn counted_http_statuses(&self) -> &[u16] {
        &self.counted_http_statuses
    }

    /// Whether timeouts count as failures.
    ///
    /// ```
    /// assert!(fuse_breaker::Config::default().count_timeouts());
    /// ```
    pub fn count_timeouts(&self) -> bool {
        self.count_timeouts
    }

    /// Whether connection errors (refused, reset, DNS, TLS) count as failures.
    ///
    /// ```
    /// assert!(fuse_breaker::Config::default().count_connection_errors());
    /// ```
    pub fn count_connection_errors(&self) -> bool {
        self.count_connection_errors
    }

    /// Whether HTTP 500 counts as a failure in addition to the listed statuses.
    ///
    /// ```
    /// assert!(!fuse_breaker::Config::default().count_http_500());
    /// ```
    pub fn count_http_500(&self) -> bool {
        self.count_http_500
    }

    /// The first piece of every circuit key.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().key_prefix(), "fuse");
    /// ```
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// Whether a response with this status is a counted failure: listed in
    /// [`counted_http_statuses`](Self::counted_http_statuses), or 500 with
    /// [`count_http_500`](Self::count_http_500).
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().count_http_500(true).build()?;
    /// assert!(config.counts_http_status(503));
    /// assert!(config.counts_http_status(500));
    /// assert!(!config.counts_http_status(404));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    #[inline]
    pub fn counts_http_status(&self, status: u16) -> bool {
        self.counted_http_statuses.contains(&status) || (status == 500 && self.count_http_500)
    }

    /// Whether an error of this kind is a counted failure (SPEC §4).
    ///
    /// ```
    /// use fuse_breaker::{Config, classify::FailureKind};
    /// let config = Config::builder().count_timeouts(false).build()?;
    /// assert!(!config.counts(FailureKind::Timeout));
    /// assert!(config.counts(FailureKind::Connection));
    /// assert!(config.counts(FailureKind::HttpStatus(502)));
    /// assert!(!config.counts(FailureKind::Other));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn counts(&self, kind: FailureKind) -> bool {
        match kind {
            FailureKind::Timeout => self.count_timeouts,
            FailureKind::Connection => self.count_connection_errors,
            FailureKind::HttpStatus(status) => self.counts_http_status(status),
            FailureKind::Other => false,
        }
    }

    /// Which rule opens a closed circuit (SPEC §9; default
    /// [`Policy::Count`]).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().policy(), fuse_breaker::config::Policy::Count);
    /// ```
    #[inline]
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Under `rate`: the share of failed calls, in percent, that opens the
    /// circuit (default 50).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().failure_rate(), 50);
    /// ```
    pub fn failure_rate(&self) -> u32 {
        self.failure_rate
    }

    /// Under `rate`: how many calls the window must hold before a rate is
    /// judged (default 20).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().minimum_calls(), 20);
    /// ```
    pub fn minimum_calls(&self) -> u32 {
        self.minimum_calls
    }

    /// Under `rate`: how many buckets the window is kept in (default 10;
    /// each covers `failure_window / window_buckets`).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().window_buckets(), 10);
    /// ```
    pub fn window_buckets(&self) -> u32 {
        self.window_buckets
    }

    /// Under `rate`: how long a call may take, from admission to verdict,
    /// before it is also slow (default `None`: no call is slow).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().slow_call_duration(), None);
    /// ```
    pub fn slow_call_duration(&self) -> Option<Duration> {
        self.slow_call_duration
    }

    /// Under `rate`: the share of slow calls, in percent, that opens the
    /// circuit (default 100).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().slow_call_rate(), 100);
    /// ```
    pub fn slow_call_rate(&self) -> u32 {
        self.slow_call_rate
    }

    /// How much longer each opening in a row lasts than the one before
    /// (SPEC §10; default 1, a fixed open duration; 1 to 10).
    ///
    /// ```
    /// use fuse_breaker::{Config, config::Factor};
    /// assert_eq!(Config::default().open_backoff(), Factor::ONE);
    /// let doubling = Config::builder().open_backoff(2.0).build()?;
    /// assert_eq!(doubling.open_backoff().to_f64(), 2.0);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn open_backoff(&self) -> Factor {
        self.open_backoff
    }

    /// The longest an opening lasts, whatever the backoff or the server's
    /// hint (SPEC §10; default the [`open_duration`](Self::open_duration)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = fuse_breaker::Config::builder()
    ///     .open_backoff(2.0)
    ///     .max_open_duration(Duration::from_secs(300))
    ///     .build()?;
    /// assert_eq!(config.max_open_duration(), Duration::from_secs(300));
    /// assert_eq!(fuse_breaker::Config::default().max_open_duration(), Duration::from_secs(30));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn max_open_duration(&self) -> Duration {
        self.max_open_duration.unwrap_or(self.open_duration)
    }

    /// The share of an opening by which a random draw may shorten it, so
    /// that processes do not all come back at one instant (SPEC §10;
    /// default 0; from 0 to 1, exclusive).
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().open_jitter(0.2).build()?;
    /// assert_eq!(config.open_jitter().to_f64(), 0.2);
    /// assert!(fuse_breaker::Config::builder().open_jitter(1.0).build().is_err());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn open_jitter(&self) -> Factor {
        self.open_jitter
    }

    /// How long a half-open circuit waits for its probes before it starts
    /// half-open over with new ones (SPEC §10; default the
    /// [`open_duration`](Self::open_duration)). Shared circuits' probe
    /// leases last this long unless set otherwise.
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = fuse_breaker::Config::builder().probe_timeout(Duration::from_secs(5)).build()?;
    /// assert_eq!(config.probe_timeout(), Duration::from_secs(5));
    /// assert_eq!(fuse_breaker::Config::default().probe_timeout(), Duration::from_secs(30));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn probe_timeout(&self) -> Duration {
        self.probe_timeout.unwrap_or(self.open_duration)
    }

    /// In a shared store: how many distinct processes (store handles) must
    /// have reported the counted failures in the window before the circuit
    /// opens from Closed (SPEC §8's quorum; default 1). The in-process
    /// engine ignores it: in one process the quorum is 1.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().min_reporters(), 1);
    /// ```
    pub fn min_reporters(&self) -> u32 {
        self.min_reporters
    }

    /// How long after a circuit closes from half-open its admitted share
    /// ramps up from [`ramp_up_floor`](Self::ramp_up_floor) to every call
    /// (SPEC §11; default `None`, no ramp).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fuse_breaker::Config::default().ramp_up(), None);
    /// let config = fuse_breaker::Config::builder().ramp_up(Duration::from_secs(20)).build()?;
    /// assert_eq!(config.ramp_up(), Some(Duration::from_secs(20)));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn ramp_up(&self) -> Option<Duration> {
        self.ramp_up
    }

    /// The share of calls, in percent, a ramp admits from its start
    /// (SPEC §11; default 10).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().ramp_up_floor(), 10);
    /// ```
    pub fn ramp_up_floor(&self) -> u32 {
        self.ramp_up_floor
    }

    /// Adaptive throttling's K (SPEC §11; default `None`, no throttling): a
    /// closed circuit sheds calls once its window holds more than K
    /// requests per accepted call.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().throttle_k(), None);
    /// let config = fuse_breaker::Config::builder().throttle_k(2.0).build()?;
    /// assert_eq!(config.throttle_k().map(|k| k.to_f64()), Some(2.0));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn throttle_k(&self) -> Option<Factor> {
        self.throttle_k
    }

    /// The largest share of calls, in percent, throttling sheds (SPEC §11;
    /// default 90).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().max_throttle(), 90);
    /// ```
    pub fn max_throttle(&self) -> u32 {
        self.max_throttle
    }
}
