//! The list of settings: [`Config`] (its fields and their defaults),
//! [`Overrides`] (a partial [`Config`]) and [`ConfigBuilder`] with its
//! setters, all generated from one entry per setting.
//!
//! A setting is named in three places in the crate: its entry in the list
//! below, its getter on [`Config`] (`config/fields.rs`) and its rule
//! (`config/check.rs`). The entry makes the field and its default, the
//! [`Overrides`] field, the builder setter, the key of the configuration
//! file and the `FUSE_*` environment variable (its name in capitals): all
//! of them read and write the same partial.

use super::{ConfigError, DEFAULT_KEY_PREFIX, DEFAULT_STATUSES};
use crate::factor::Factor;
use crate::policy::kind::Policy;
use std::time::Duration;

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
/// # Ok::<(), fuse_breaker::config::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ConfigBuilder {
    /// The configuration so far, checked by `build`.
    pub(crate) config: Config,
}

/// Writes [`Config`] and its defaults, [`Overrides`], its merge onto a
/// [`Config`], the reading of one setting from text, and one
/// [`ConfigBuilder`] setter per entry (`name: type = default, setter`).
macro_rules! settings {
    ($(
        $(#[$setter_doc:meta])*
        $name:ident: $ty:ty = $default:expr, |$value:ident: $input:ty| $convert:expr;
    )*) => {
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
        /// # Ok::<(), fuse_breaker::config::ConfigError>(())
        /// ```
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct Config {
            $(pub(crate) $name: $ty,)*
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
                    $($name: $default,)*
                }
            }
        }

        /// Settings that replace those of a base [`Config`]; a setting left
        /// `None` keeps the base's value. The partial configuration that
        /// the builder, the registry's per-name overrides, the
        /// configuration file and the `FUSE_*` variables all write.
        ///
        /// ```
        /// use std::time::Duration;
        /// use fuse_breaker::{Config, config::Overrides};
        ///
        /// let strict = Overrides { failure_threshold: Some(3), ..Overrides::default() };
        /// let config = strict.apply(&Config::default())?;
        /// assert_eq!(config.failure_threshold(), 3);
        /// assert_eq!(config.open_duration(), Duration::from_secs(30));
        /// # Ok::<(), fuse_breaker::config::ConfigError>(())
        /// ```
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        #[cfg_attr(
            feature = "config-file",
            derive(serde::Deserialize),
            serde(deny_unknown_fields)
        )]
        pub struct Overrides {
            $(
                #[doc = concat!("See [`Config::", stringify!($name), "`].")]
                #[cfg_attr(
                    feature = "config-file",
                    serde(default, deserialize_with = "crate::value::some")
                )]
                pub $name: Option<$ty>,
            )*
        }

        impl Overrides {
            /// `base` with the settings this names replaced, validated as
            /// [`ConfigBuilder::build`] validates.
            ///
            /// ```
            /// use fuse_breaker::{Config, config::Overrides};
            /// let bad = Overrides { half_open_probes: Some(0), ..Overrides::default() };
            /// assert_eq!(bad.apply(&Config::default()).unwrap_err().setting(), "half_open_probes");
            /// ```
            pub fn apply(&self, base: &Config) -> Result<Config, ConfigError> {
                let mut config = base.clone();
                $(
                    if let Some(value) = &self.$name {
                        config.$name = value.clone();
                    }
                )*
                config.check()?;
                Ok(config)
            }

            /// The names of the settings (the file's keys).
            #[cfg(any(feature = "config-file", feature = "admin"))]
            pub(crate) const NAMES: &[&str] = &[$(stringify!($name)),*];

            /// Sets the setting called `name` from its text form (an
            /// environment variable's value); `None` when no setting has
            /// that name.
            #[cfg(any(feature = "config-file", feature = "admin"))]
            pub(crate) fn set_text(&mut self, name: &str, text: &str) -> Option<Result<(), String>> {
                $(
                    if name == stringify!($name) {
                        return Some(
                            <$ty as crate::value::Value>::from_text(text)
                                .map(|value| self.$name = Some(value)),
                        );
                    }
                )*
                None
            }
        }

        /// Every setting of a [`Config`]: applied to any base, it gives
        /// that configuration (a per-name configuration given whole).
        ///
        /// ```
        /// use fuse_breaker::{Config, config::Overrides};
        /// let strict = Config::builder().failure_threshold(2).build()?;
        /// let overrides = Overrides::from(strict.clone());
        /// assert_eq!(overrides.failure_threshold, Some(2));
        /// let base = Config::builder().half_open_probes(7).build()?;
        /// assert_eq!(overrides.apply(&base)?, strict);
        /// # Ok::<(), fuse_breaker::config::ConfigError>(())
        /// ```
        impl From<Config> for Overrides {
            fn from(config: Config) -> Self {
                Overrides {
                    $($name: Some(config.$name),)*
                }
            }
        }

        impl Config {
            /// Each setting `to` gives another value than this
            /// configuration, in the order of SPEC §2: its name, its value
            /// here and there (as Rust writes them).
            pub(crate) fn changes(&self, to: &Config) -> Vec<(&'static str, String, String)> {
                let mut changes = Vec::new();
                $(
                    if self.$name != to.$name {
                        changes.push((
                            stringify!($name),
                            format!("{:?}", self.$name),
                            format!("{:?}", to.$name),
                        ));
                    }
                )*
                changes
            }
        }

        impl ConfigBuilder {
            $(
                $(#[$setter_doc])*
                pub fn $name(mut self, $value: $input) -> Self {
                    self.config.$name = $convert;
                    self
                }
            )*
        }
    };
}

settings! {
    /// Sets [`Config::failure_threshold`] (1 ..= [`MAX_FAILURE_THRESHOLD`](crate::config::MAX_FAILURE_THRESHOLD)).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().failure_threshold(0).build().is_err());
    /// ```
    failure_threshold: u32 = 8, |value: u32| value;

    /// Sets [`Config::failure_window`] (> 0 and <= [`MAX_DURATION`](crate::config::MAX_DURATION)).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(fuse_breaker::Config::builder().failure_window(Duration::ZERO).build().is_err());
    /// ```
    failure_window: Duration = Duration::from_mins(1), |value: Duration| value;

    /// Sets [`Config::open_duration`] (> 0 and <= [`MAX_DURATION`](crate::config::MAX_DURATION)).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(fuse_breaker::Config::builder().open_duration(Duration::MAX).build().is_err());
    /// ```
    open_duration: Duration = Duration::from_secs(30), |value: Duration| value;

    /// Sets [`Config::half_open_probes`] (1 ..= [`MAX_HALF_OPEN_PROBES`](crate::config::MAX_HALF_OPEN_PROBES)).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().half_open_probes(100_000).build().is_err());
    /// ```
    half_open_probes: u32 = 2, |value: u32| value;

    /// Sets [`Config::counted_http_statuses`] (each in 100 ..= 599).
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().counted_http_statuses([429, 503]).build()?;
    /// assert_eq!(config.counted_http_statuses(), &[429, 503]);
    /// assert!(fuse_breaker::Config::builder().counted_http_statuses([600]).build().is_err());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    counted_http_statuses: Vec<u16> = DEFAULT_STATUSES.to_vec(), |value: impl IntoIterator<Item = u16>| value.into_iter().collect();

    /// Sets [`Config::count_timeouts`].
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().count_timeouts(false).build()?;
    /// assert!(!config.count_timeouts());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    count_timeouts: bool = true, |value: bool| value;

    /// Sets [`Config::count_connection_errors`].
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().count_connection_errors(false).build()?;
    /// assert!(!config.count_connection_errors());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    count_connection_errors: bool = true, |value: bool| value;

    /// Sets [`Config::count_http_500`].
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().count_http_500(true).build()?;
    /// assert!(config.counts_http_status(500));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    count_http_500: bool = false, |value: bool| value;

    /// Sets [`Config::key_prefix`] (non-empty, no control character; it
    /// may hold `:`, as milon/fuse's may).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().key_prefix("a:b").build().is_ok());
    /// assert!(fuse_breaker::Config::builder().key_prefix("").build().is_err());
    /// ```
    key_prefix: String = DEFAULT_KEY_PREFIX.to_owned(), |value: impl Into<String>| value.into();

    /// Sets [`Config::policy`]: `count` or `rate` (SPEC §9).
    ///
    /// ```
    /// use fuse_breaker::{Config, config::Policy};
    /// assert_eq!(Config::builder().policy(Policy::Rate).build()?.policy(), Policy::Rate);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    policy: Policy = Policy::default(), |value: Policy| value;

    /// Sets [`Config::failure_rate`] (percent, 1 ..= 100).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().failure_rate(0).build().is_err());
    /// assert!(fuse_breaker::Config::builder().failure_rate(101).build().is_err());
    /// ```
    failure_rate: u32 = 50, |value: u32| value;

    /// Sets [`Config::minimum_calls`] (1 ..= [`MAX_MINIMUM_CALLS`](crate::config::MAX_MINIMUM_CALLS)).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().minimum_calls(0).build().is_err());
    /// ```
    minimum_calls: u32 = 20, |value: u32| value;

    /// Sets [`Config::window_buckets`] (1 ..= [`MAX_WINDOW_BUCKETS`](crate::config::MAX_WINDOW_BUCKETS)).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().window_buckets(0).build().is_err());
    /// ```
    window_buckets: u32 = 10, |value: u32| value;

    /// Sets [`Config::slow_call_duration`] (> 0 and <= [`MAX_DURATION`](crate::config::MAX_DURATION)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = fuse_breaker::Config::builder().slow_call_duration(Duration::from_secs(2)).build()?;
    /// assert_eq!(config.slow_call_duration(), Some(Duration::from_secs(2)));
    /// assert!(fuse_breaker::Config::builder().slow_call_duration(Duration::ZERO).build().is_err());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    slow_call_duration: Option<Duration> = None, |value: Duration| Some(value);

    /// Sets [`Config::slow_call_rate`] (percent, 1 ..= 100).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().slow_call_rate(0).build().is_err());
    /// ```
    slow_call_rate: u32 = 100, |value: u32| value;

    /// Sets [`Config::open_backoff`] (1 ..= 10; rounded to a millionth).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().open_backoff(0.5).build().is_err());
    /// assert!(fuse_breaker::Config::builder().open_backoff(f64::NAN).build().is_err());
    /// ```
    open_backoff: Factor = Factor::ONE, |value: f64| Factor::from_f64(value);

    /// Sets [`Config::max_open_duration`] (>= `open_duration` and <= [`MAX_DURATION`](crate::config::MAX_DURATION)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let short = fuse_breaker::Config::builder().max_open_duration(Duration::from_secs(1)).build();
    /// assert_eq!(short.unwrap_err().setting(), "max_open_duration");
    /// ```
    max_open_duration: Option<Duration> = None, |value: Duration| Some(value);

    /// Sets [`Config::open_jitter`] (0 ..= 1, exclusive; rounded to a millionth).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().open_jitter(-0.1).build().is_err());
    /// ```
    open_jitter: Factor = Factor::ZERO, |value: f64| Factor::from_f64(value);

    /// Sets [`Config::probe_timeout`] (> 0 and <= [`MAX_DURATION`](crate::config::MAX_DURATION)).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(fuse_breaker::Config::builder().probe_timeout(Duration::ZERO).build().is_err());
    /// ```
    probe_timeout: Option<Duration> = None, |value: Duration| Some(value);

    /// Sets [`Config::min_reporters`] (1 ..= [`MAX_MIN_REPORTERS`](crate::config::MAX_MIN_REPORTERS); SPEC §8's quorum).
    ///
    /// ```
    /// let none = fuse_breaker::Config::builder().min_reporters(0).build();
    /// assert_eq!(none.unwrap_err().setting(), "min_reporters");
    /// ```
    min_reporters: u32 = 1, |value: u32| value;

    /// Sets [`Config::ramp_up`] (> 0 and <= [`MAX_DURATION`](crate::config::MAX_DURATION); SPEC §11).
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = fuse_breaker::Config::builder().ramp_up(Duration::from_secs(30)).build()?;
    /// assert_eq!(config.ramp_up(), Some(Duration::from_secs(30)));
    /// assert!(fuse_breaker::Config::builder().ramp_up(Duration::ZERO).build().is_err());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    ramp_up: Option<Duration> = None, |value: Duration| Some(value);

    /// Sets [`Config::ramp_up_floor`] (percent, 1 ..= 100).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().ramp_up_floor(0).build().is_err());
    /// ```
    ramp_up_floor: u32 = 10, |value: u32| value;

    /// Sets [`Config::throttle_k`] (1 ..= 10; rounded to a millionth; SPEC §11).
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().throttle_k(2.0).build()?;
    /// assert_eq!(config.throttle_k().map(|k| k.to_f64()), Some(2.0));
    /// assert!(fuse_breaker::Config::builder().throttle_k(0.5).build().is_err());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    throttle_k: Option<Factor> = None, |value: f64| Some(Factor::from_f64(value));

    /// Sets [`Config::max_throttle`] (percent, 1 ..= 100).
    ///
    /// ```
    /// assert!(fuse_breaker::Config::builder().max_throttle(101).build().is_err());
    /// ```
    max_throttle: u32 = 90, |value: u32| value;
}
