//! [`Config`]: the settings of one circuit, their defaults and their rules
//! (SPEC §2); [`ConfigBuilder`], whose setters the list of settings in
//! `overrides.rs` writes; [`ConfigError`].

use std::fmt;
use std::time::Duration;

use crate::classify::FailureKind;
use crate::factor::Factor;
pub use crate::limits::{
    MAX_DURATION, MAX_FAILURE_THRESHOLD, MAX_HALF_OPEN_PROBES, MAX_MIN_REPORTERS,
    MAX_MINIMUM_CALLS, MAX_WINDOW_BUCKETS,
};
use crate::policy::kind::Policy;

const DEFAULT_STATUSES: [u16; 3] = [502, 503, 504];
/// The default first piece of every key.
pub(crate) const DEFAULT_KEY_PREFIX: &str = "fuse";

/// The validated settings of one circuit (SPEC §2).
///
/// Built once with [`Config::builder`] (every value is checked there) or
/// taken as [`Config::default`]: threshold 8, window 60 s, open 30 s,
/// 2 probes, statuses 502/503/504, timeouts and connection errors counted,
/// HTTP 500 not counted, key prefix `fuse`; policy `count` (SPEC §9: the
/// `rate` settings default to 50 %, 20 calls, 10 buckets, no slow calls,
/// 100 % slow); a fixed open duration without jitter, probes that time
/// out after the open duration (SPEC §10).
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::Config;
///
/// let config = Config::builder()
///     .failure_threshold(5)
///     .open_duration(Duration::from_secs(10))
///     .build()?;
/// assert_eq!(config.failure_threshold(), 5);
/// assert_eq!(config.failure_window(), Duration::from_secs(60));
/// # Ok::<(), fuse_breaker::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    pub(crate) failure_threshold: u32,
    pub(crate) failure_window: Duration,
    pub(crate) open_duration: Duration,
    pub(crate) half_open_probes: u32,
    pub(crate) counted_http_statuses: Vec<u16>,
    pub(crate) count_timeouts: bool,
    pub(crate) count_connection_errors: bool,
    pub(crate) count_http_500: bool,
    pub(crate) key_prefix: String,
    pub(crate) policy: Policy,
    pub(crate) failure_rate: u32,
    pub(crate) minimum_calls: u32,
    pub(crate) window_buckets: u32,
    pub(crate) slow_call_duration: Option<Duration>,
    pub(crate) slow_call_rate: u32,
    pub(crate) open_backoff: Factor,
    pub(crate) max_open_duration: Option<Duration>,
    pub(crate) open_jitter: Factor,
    pub(crate) probe_timeout: Option<Duration>,
    pub(crate) min_reporters: u32,
}

impl Default for Config {
    /// The defaults of SPEC §2.
    ///
    /// ```
    /// let config = fuse_breaker::Config::default();
    /// assert_eq!(config.failure_threshold(), 8);
    /// assert_eq!(config.counted_http_statuses(), &[502, 503, 504]);
    /// ```
    fn default() -> Self {
        Config {
            failure_threshold: 8,
            failure_window: Duration::from_mins(1),
            open_duration: Duration::from_secs(30),
            half_open_probes: 2,
            counted_http_statuses: DEFAULT_STATUSES.to_vec(),
            count_timeouts: true,
            count_connection_errors: true,
            count_http_500: false,
            key_prefix: DEFAULT_KEY_PREFIX.to_owned(),
            policy: Policy::Count,
            failure_rate: 50,
            minimum_calls: 20,
            window_buckets: 10,
            slow_call_duration: None,
            slow_call_rate: 100,
            open_backoff: Factor::ONE,
            max_open_duration: None,
            open_jitter: Factor::ZERO,
            probe_timeout: None,
            min_reporters: 1,
        }
    }
}

impl Config {
    /// A builder that starts from the defaults.
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().half_open_probes(1).build()?;
    /// assert_eq!(config.half_open_probes(), 1);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder {
            config: Config::default(),
        }
    }

    /// A builder that starts from this configuration, to derive a variant.
    ///
    /// ```
    /// let base = fuse_breaker::Config::default();
    /// let strict = base.to_builder().failure_threshold(2).build()?;
    /// assert_eq!(strict.failure_threshold(), 2);
    /// assert_eq!(strict.half_open_probes(), base.half_open_probes());
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder {
            config: self.clone(),
        }
    }

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
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    #[inline]
    pub fn counts_http_status(&self, status: u16) -> bool {
        self.counted_http_statuses.contains(&status) || (status == 500 && self.count_http_500)
    }

    /// Whether an error of this kind is a counted failure (SPEC §4).
    ///
    /// ```
    /// use fuse_breaker::{Config, FailureKind};
    /// let config = Config::builder().count_timeouts(false).build()?;
    /// assert!(!config.counts(FailureKind::Timeout));
    /// assert!(config.counts(FailureKind::Connection));
    /// assert!(config.counts(FailureKind::HttpStatus(502)));
    /// assert!(!config.counts(FailureKind::Other));
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn counts(&self, kind: FailureKind) -> bool {
        match kind {
            FailureKind::Timeout => self.count_timeouts,
            FailureKind::Connection => self.count_connection_errors,
            FailureKind::HttpStatus(status) => self.counts_http_status(status),
            FailureKind::Other => false,
        }
    }

    /// Checks every setting (SPEC §2): the first invalid one, with its value.
    /// Which rule opens a closed circuit (SPEC §9; default
    /// [`Policy::Count`]).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Config::default().policy(), fuse_breaker::Policy::Count);
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
    /// use fuse_breaker::{Config, Factor};
    /// assert_eq!(Config::default().open_backoff(), Factor::ONE);
    /// let doubling = Config::builder().open_backoff(2.0).build()?;
    /// assert_eq!(doubling.open_backoff().to_f64(), 2.0);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
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
    /// # Ok::<(), fuse_breaker::ConfigError>(())
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
    /// # Ok::<(), fuse_breaker::ConfigError>(())
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
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn probe_timeout(&self) -> Duration {
        self.probe_timeout.unwrap_or(self.open_duration)
    }

    /// The probe timeout in nanoseconds.
    #[inline]
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

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        let c = self;
        check_count(
            "failure_threshold",
            c.failure_threshold,
            MAX_FAILURE_THRESHOLD,
        )?;
        check_duration("failure_window", c.failure_window)?;
        check_duration("open_duration", c.open_duration)?;
        check_count("half_open_probes", c.half_open_probes, MAX_HALF_OPEN_PROBES)?;
        check_count("failure_rate", c.failure_rate, 100)?;
        check_count("minimum_calls", c.minimum_calls, MAX_MINIMUM_CALLS)?;
        check_count("window_buckets", c.window_buckets, MAX_WINDOW_BUCKETS)?;
        check_count("min_reporters", c.min_reporters, MAX_MIN_REPORTERS)?;
        check_count("slow_call_rate", c.slow_call_rate, 100)?;
        if let Some(slow) = c.slow_call_duration {
            check_duration("slow_call_duration", slow)?;
        }
        check_factor("open_backoff", c.open_backoff, Factor::ONE, true)?;
        check_factor("open_jitter", c.open_jitter, Factor::ZERO, false)?;
        if let Some(max) = c.max_open_duration {
            check_duration("max_open_duration", max)?;
            if max < c.open_duration {
                return Err(ConfigError::new(
                    "max_open_duration",
                    format!("{max:?}"),
                    format!("must be at least open_duration ({:?})", c.open_duration),
                ));
            }
        }
        if let Some(timeout) = c.probe_timeout {
            check_duration("probe_timeout", timeout)?;
        }
        if let Some(bad) = c
            .counted_http_statuses
            .iter()
            .find(|s| !(100..=599).contains(*s))
        {
            return Err(ConfigError::new(
                "counted_http_statuses",
                bad.to_string(),
                "every status must be in 100..=599".to_owned(),
            ));
        }
        if c.key_prefix.is_empty() {
            return Err(ConfigError::new(
                "key_prefix",
                "\"\"".to_owned(),
                "must not be empty".to_owned(),
            ));
        }
        if c.key_prefix.chars().any(char::is_control) {
            return Err(ConfigError::new(
                "key_prefix",
                format!("{:?}", c.key_prefix),
                "must not contain control characters".to_owned(),
            ));
        }
        if c.key_prefix.contains(':') {
            return Err(ConfigError::new(
                "key_prefix",
                format!("{:?}", c.key_prefix),
                "must not contain ':' (it separates the pieces of a key)".to_owned(),
            ));
        }
        Ok(())
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

/// Builds a [`Config`]: a base the setters change (one setter per setting,
/// written by the list of settings); [`build`](Self::build) checks every
/// setting.
///
/// ```
/// use std::time::Duration;
/// let config = fuse_breaker::Config::builder()
///     .failure_threshold(3)
///     .failure_window(Duration::from_secs(10))
///     .open_duration(Duration::from_secs(5))
///     .half_open_probes(1)
///     .counted_http_statuses([500, 502, 503])
///     .count_timeouts(true)
///     .count_connection_errors(true)
///     .count_http_500(false)
///     .key_prefix("svc")
///     .build()?;
/// assert_eq!(config.key_prefix(), "svc");
/// # Ok::<(), fuse_breaker::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ConfigBuilder {
    /// The configuration so far, checked by `build`.
    pub(crate) config: Config,
}

impl ConfigBuilder {
    /// Checks every setting and returns the configuration, or the first
    /// invalid setting with its value.
    ///
    /// ```
    /// let err = fuse_breaker::Config::builder().failure_threshold(0).build().unwrap_err();
    /// assert_eq!(err.setting(), "failure_threshold");
    /// assert_eq!(err.value(), "0");
    /// ```
    pub fn build(self) -> Result<Config, ConfigError> {
        self.config.check()?;
        Ok(self.config)
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

#[cfg(test)]
#[test]
fn nanos_are_exact_and_saturate() {
    for duration in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::new(1, 999_999_999),
        MAX_DURATION,
        Duration::from_nanos(u64::MAX),
    ] {
        assert_eq!(u128::from(nanos(duration)), duration.as_nanos());
    }
    assert_eq!(
        nanos(Duration::from_nanos(u64::MAX) + Duration::from_nanos(1)),
        u64::MAX
    );
    assert_eq!(nanos(Duration::MAX), u64::MAX);
    assert_eq!(
        nanos(Duration::new(u64::MAX / 1_000_000_000, 999_999_999)),
        u64::MAX
    );
}

fn check_count(setting: &'static str, value: u32, max: u32) -> Result<(), ConfigError> {
    if (1..=max).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::new(
            setting,
            value.to_string(),
            format!("must be between 1 and {max}"),
        ))
    }
}

/// A factor from `min` to 10 (`up_to_ten`), or from `min` to 1 exclusive.
fn check_factor(
    setting: &'static str,
    value: Factor,
    min: Factor,
    up_to_ten: bool,
) -> Result<(), ConfigError> {
    let (fits, rule) = if up_to_ten {
        (
            value >= min && value <= Factor::from_millionths(10_000_000),
            format!("must be a number from {min} to 10"),
        )
    } else {
        (
            value >= min && value < Factor::ONE,
            format!("must be a number from {min} to 1 (exclusive)"),
        )
    };
    if fits {
        Ok(())
    } else {
        Err(ConfigError::new(setting, value.to_string(), rule))
    }
}

fn check_duration(setting: &'static str, value: Duration) -> Result<(), ConfigError> {
    if value.is_zero() || value > MAX_DURATION {
        Err(ConfigError::new(
            setting,
            format!("{value:?}"),
            format!(
                "must be greater than zero and at most {} days",
                MAX_DURATION.as_secs() / 86_400
            ),
        ))
    } else {
        Ok(())
    }
}

/// A setting refused by [`ConfigBuilder::build`]: names the setting, the
/// value and the rule it broke.
///
/// ```
/// let err = fuse_breaker::Config::builder().half_open_probes(0).build().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid half_open_probes = 0: must be between 1 and 4096"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    setting: &'static str,
    value: String,
    rule: String,
}

impl ConfigError {
    pub(crate) fn new(setting: &'static str, value: String, rule: String) -> Self {
        ConfigError {
            setting,
            value,
            rule,
        }
    }

    /// The name of the refused setting, as in SPEC §2 (`failure_threshold`, ...).
    ///
    /// ```
    /// let err = fuse_breaker::Config::builder().key_prefix("").build().unwrap_err();
    /// assert_eq!(err.setting(), "key_prefix");
    /// ```
    pub fn setting(&self) -> &'static str {
        self.setting
    }

    /// The refused value, as text.
    ///
    /// ```
    /// let err = fuse_breaker::Config::builder().counted_http_statuses([99]).build().unwrap_err();
    /// assert_eq!(err.value(), "99");
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} = {}: {}",
            self.setting, self.value, self.rule
        )
    }
}

impl std::error::Error for ConfigError {}

/// The one `'static` copy of `config`: each distinct configuration is
/// stored once for the life of the process and shared by every circuit
/// that has it, so that a permit can read its circuit's configuration
/// after the circuit is gone. Runs when a circuit is built, never on a
/// call. Configurations come from code and configuration files, not from
/// traffic: there are as many as an application writes.
pub(crate) fn intern(config: Config) -> &'static Config {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static TABLE: OnceLock<Mutex<HashSet<&'static Config>>> = OnceLock::new();
    let mut table = TABLE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(&interned) = table.get(&config) {
        return interned;
    }
    let interned: &'static Config = Box::leak(Box::new(config));
    table.insert(interned);
    interned
}
