//! The bounds of the settings: the largest values [`Config`](crate::Config)
//! accepts, each set by what the engine's state word or its times hold.

use std::time::Duration;

/// The largest accepted [`failure_threshold`](crate::Config::failure_threshold).
///
/// The engine keeps one failure slot per unit of threshold and counts the
/// failures of the current closed epoch in a 13-bit field of its state word.
///
/// ```
/// use fuse_breaker::{Config, config::MAX_FAILURE_THRESHOLD};
/// assert!(Config::builder().failure_threshold(MAX_FAILURE_THRESHOLD).build().is_ok());
/// assert!(Config::builder().failure_threshold(MAX_FAILURE_THRESHOLD + 1).build().is_err());
/// ```
pub const MAX_FAILURE_THRESHOLD: u32 = 4096;

/// The largest accepted [`half_open_probes`](crate::Config::half_open_probes).
///
/// The half-open success and in-flight counters are 13-bit fields of the
/// engine's state word.
///
/// ```
/// use fuse_breaker::{Config, config::MAX_HALF_OPEN_PROBES};
/// assert!(Config::builder().half_open_probes(MAX_HALF_OPEN_PROBES).build().is_ok());
/// assert!(Config::builder().half_open_probes(MAX_HALF_OPEN_PROBES + 1).build().is_err());
/// ```
pub const MAX_HALF_OPEN_PROBES: u32 = 4096;

/// The longest accepted [`failure_window`](crate::Config::failure_window) and
/// [`open_duration`](crate::Config::open_duration): 365 days.
///
/// Times are kept as `u64` nanoseconds; a year keeps every sum of a time and
/// a duration far from overflow while allowing any realistic setting.
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::{Config, config::MAX_DURATION};
/// assert!(Config::builder().open_duration(MAX_DURATION).build().is_ok());
/// let too_long = MAX_DURATION + Duration::from_nanos(1);
/// assert!(Config::builder().failure_window(too_long).build().is_err());
/// ```
pub const MAX_DURATION: Duration = Duration::from_hours(8760);

/// The largest accepted [`minimum_calls`](crate::Config::minimum_calls).
///
/// ```
/// use fuse_breaker::{Config, config::MAX_MINIMUM_CALLS, config::Policy};
/// let rate = Config::builder().policy(Policy::Rate);
/// assert!(rate.clone().minimum_calls(MAX_MINIMUM_CALLS).build().is_ok());
/// assert!(rate.minimum_calls(MAX_MINIMUM_CALLS + 1).build().is_err());
/// ```
pub const MAX_MINIMUM_CALLS: u32 = 1_000_000;

/// The largest accepted [`min_reporters`](crate::Config::min_reporters)
/// (SPEC §8's quorum), and the most reporters a payload may name.
///
/// ```
/// use fuse_breaker::{Config, config::MAX_MIN_REPORTERS};
/// assert!(Config::builder().min_reporters(MAX_MIN_REPORTERS).build().is_ok());
/// assert!(Config::builder().min_reporters(MAX_MIN_REPORTERS + 1).build().is_err());
/// ```
pub const MAX_MIN_REPORTERS: u32 = 64;

/// The largest accepted [`window_buckets`](crate::Config::window_buckets).
///
/// ```
/// use fuse_breaker::{Config, config::MAX_WINDOW_BUCKETS};
/// assert!(Config::builder().window_buckets(MAX_WINDOW_BUCKETS).build().is_ok());
/// assert!(Config::builder().window_buckets(MAX_WINDOW_BUCKETS + 1).build().is_err());
/// ```
pub const MAX_WINDOW_BUCKETS: u32 = 60;

/// How many circuits a registry holds unless told otherwise
/// ([`RegistryBuilder::max_circuits`](crate::RegistryBuilder::max_circuits)).
///
/// ```
/// assert_eq!(fuse_breaker::config::DEFAULT_MAX_CIRCUITS, 10_000);
/// ```
pub const DEFAULT_MAX_CIRCUITS: usize = 10_000;

/// The name of the circuit that decides the calls of new names while a
/// registry is full.
///
/// ```
/// let registry = fuse_breaker::Registry::builder().max_circuits(1).build()?;
/// let _held = registry.get("billing");
/// assert_eq!(registry.get("search").name(), fuse_breaker::config::OVERFLOW_NAME);
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
/// ```
pub const OVERFLOW_NAME: &str = "(overflow)";
