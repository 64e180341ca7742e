//! The `config` target: the configuration builder against the rules of
//! SPEC §2, §10 and §11 on arbitrary inputs, and (with `config-file`) the
//! same values as `FUSE_*` variables against the builder.

use std::time::Duration;

mod graded;

use graded::Graded;

use super::Bytes;
use crate::config::{Config, MAX_DURATION, MAX_FAILURE_THRESHOLD, MAX_HALF_OPEN_PROBES};
use crate::factor::Factor;

/// Builds a configuration from arbitrary inputs, and checks that the
/// builder refuses exactly the values SPEC §2, §10 and §11 call invalid,
/// names the setting it refused, and that an accepted configuration
/// returns every value through its getters; with `config-file`, that the
/// same values written as `FUSE_*` variables build the same
/// configuration. Never panics on any input (but on a broken promise).
pub fn config(data: &[u8]) {
    let mut bytes = Bytes(data);
    let threshold = bytes.u32() >> (bytes.u8() % 32);
    let probes = bytes.u32() >> (bytes.u8() % 32);
    let window = Duration::new(
        bytes.u64() >> (bytes.u8() % 64),
        bytes.u32() % 1_000_000_000,
    );
    let open = Duration::new(
        bytes.u64() >> (bytes.u8() % 64),
        bytes.u32() % 1_000_000_000,
    );
    let statuses: Vec<u16> = (0..bytes.u8() % 6).map(|_| bytes.u16() % 700).collect();
    let flags = bytes.u8();
    let recovery = Recovery::decode(&mut bytes, open);
    let prefix = String::from_utf8_lossy(&bytes.0[..bytes.0.len().min(12)]).into_owned();
    bytes.0 = &bytes.0[bytes.0.len().min(12)..];
    let graded = Graded::decode(&mut bytes);

    let built = Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .failure_window(window)
        .open_duration(open)
        .counted_http_statuses(statuses.iter().copied())
        .count_timeouts(flags & 1 != 0)
        .count_connection_errors(flags & 2 != 0)
        .count_http_500(flags & 4 != 0)
        .key_prefix(prefix.clone());
    let built = graded.apply(recovery.apply(built)).build();

    let valid_duration = |d: Duration| !d.is_zero() && d <= MAX_DURATION;
    let first_invalid = [
        (
            "failure_threshold",
            (1..=MAX_FAILURE_THRESHOLD).contains(&threshold),
        ),
        ("failure_window", valid_duration(window)),
        ("open_duration", valid_duration(open)),
        (
            "half_open_probes",
            (1..=MAX_HALF_OPEN_PROBES).contains(&probes),
        ),
    ]
    .into_iter()
    .chain(recovery.validity(open))
    .chain(graded.validity())
    .chain([
        (
            "counted_http_statuses",
            statuses.iter().all(|s| (100..=599).contains(s)),
        ),
        (
            "key_prefix",
            !prefix.is_empty() && !prefix.chars().any(char::is_control),
        ),
    ])
    .find(|(_, ok)| !ok)
    .map(|(setting, _)| setting);

    match (built.clone(), first_invalid) {
        (Ok(config), None) => {
            assert_eq!(config.failure_threshold(), threshold);
            assert_eq!(config.half_open_probes(), probes);
            assert_eq!(config.failure_window(), window);
            assert_eq!(config.open_duration(), open);
            assert_eq!(config.counted_http_statuses(), statuses.as_slice());
            assert_eq!(config.count_timeouts(), flags & 1 != 0);
            assert_eq!(config.count_connection_errors(), flags & 2 != 0);
            assert_eq!(config.count_http_500(), flags & 4 != 0);
            assert_eq!(config.key_prefix(), prefix);
            recovery.given_by(&config, open);
            graded.given_by(&config);
            assert_eq!(config.to_builder().build().as_ref(), Ok(&config));
        }
        (Err(err), Some(setting)) => {
            assert_eq!(err.setting(), setting, "{err}");
            assert!(err.to_string().contains(setting), "{err}");
            assert!(!err.value().is_empty(), "{err}");
        }
        (built, expected) => {
            panic!("built {built:?}, expected the first invalid setting to be {expected:?}")
        }
    }

    #[cfg(feature = "config-file")]
    from_env(
        &built,
        Values {
            threshold,
            probes,
            window,
            open,
            statuses: &statuses,
            flags,
            prefix: &prefix,
            recovery,
            graded,
        },
    );
}

/// SPEC §10's settings of a [`config`] history: factors of any millionths
/// (mostly near their bounds), the longest opening and the probe timeout
/// unset or any duration (mostly near the open duration).
#[derive(Clone, Copy, Debug)]
struct Recovery {
    backoff: Factor,
    jitter: Factor,
    max_open: Option<Duration>,
    probe_timeout: Option<Duration>,
}

impl Recovery {
    fn decode(bytes: &mut Bytes<'_>, open: Duration) -> Self {
        let factor = |bytes: &mut Bytes<'_>, near: u32| {
            let raw = bytes.u32();
            Factor::from_millionths(if raw.is_multiple_of(2) {
                near.wrapping_add(raw % 5).wrapping_sub(2)
            } else {
                raw
            })
        };
        let duration = |bytes: &mut Bytes<'_>| match bytes.u8() % 4 {
            0 => None,
            1 => Some(open + Duration::from_nanos(u64::from(bytes.u8()))),
            2 => open.checked_sub(Duration::from_nanos(u64::from(bytes.u8()))),
            _ => Some(Duration::new(
                bytes.u64() >> (bytes.u8() % 64),
                bytes.u32() % 1_000_000_000,
            )),
        };
        let near = if bytes.u8().is_multiple_of(2) {
            1_000_000
        } else {
            10_000_000
        };
        let backoff = factor(bytes, near);
        let jitter = factor(bytes, 1_000_000);
        Recovery {
            backoff,
            jitter,
            max_open: duration(bytes),
            probe_timeout: duration(bytes),
        }
    }

    /// Whether each setting is valid (SPEC §10's table), in the order the
    /// builder checks them, for a circuit open for `open`.
    fn validity(self, open: Duration) -> [(&'static str, bool); 4] {
        let valid = |d: Duration| !d.is_zero() && d <= MAX_DURATION;
        let ten = Factor::from_millionths(10_000_000);
        [
            ("open_backoff", (Factor::ONE..=ten).contains(&self.backoff)),
            ("open_jitter", self.jitter < Factor::ONE),
            (
                "max_open_duration",
                self.max_open.is_none_or(|max| valid(max) && max >= open),
            ),
            ("probe_timeout", self.probe_timeout.is_none_or(valid)),
        ]
    }

    /// Panics unless `config` (open for `open`) returns these settings
    /// through its getters, the unset durations as the open duration.
    fn given_by(self, config: &Config, open: Duration) {
        assert_eq!(config.open_backoff(), self.backoff);
        assert_eq!(config.open_jitter(), self.jitter);
        assert_eq!(config.max_open_duration(), self.max_open.unwrap_or(open));
        assert_eq!(config.probe_timeout(), self.probe_timeout.unwrap_or(open));
    }

    /// `builder` with these settings; the durations only when set.
    fn apply(self, builder: crate::config::ConfigBuilder) -> crate::config::ConfigBuilder {
        let builder = builder
            .open_backoff(self.backoff.to_f64())
            .open_jitter(self.jitter.to_f64());
        let builder = match self.max_open {
            Some(max) => builder.max_open_duration(max),
            None => builder,
        };
        match self.probe_timeout {
            Some(timeout) => builder.probe_timeout(timeout),
            None => builder,
        }
    }
}

/// The inputs of [`config`].
#[derive(Clone, Copy)]
#[cfg(feature = "config-file")]
struct Values<'a> {
    threshold: u32,
    probes: u32,
    window: Duration,
    open: Duration,
    statuses: &'a [u16],
    flags: u8,
    prefix: &'a str,
    recovery: Recovery,
    graded: Graded,
}

/// The same values as `FUSE_*` variables give the same configuration as
/// the builder did, or refuse the same setting.
#[cfg(feature = "config-file")]
fn from_env(built: &Result<Config, crate::config::ConfigError>, values: Values<'_>) {
    let Values {
        threshold,
        probes,
        window,
        open,
        statuses,
        flags,
        prefix,
        recovery,
        graded,
    } = values;
    let list = |values: &[u16]| values.iter().map(u16::to_string).collect::<Vec<_>>();
    let vars = [
        ("FUSE_FAILURE_THRESHOLD", threshold.to_string()),
        ("FUSE_HALF_OPEN_PROBES", probes.to_string()),
        (
            "FUSE_FAILURE_WINDOW",
            humantime::format_duration(window).to_string(),
        ),
        (
            "FUSE_OPEN_DURATION",
            humantime::format_duration(open).to_string(),
        ),
        ("FUSE_COUNTED_HTTP_STATUSES", list(statuses).join(",")),
        ("FUSE_COUNT_TIMEOUTS", (flags & 1 != 0).to_string()),
        ("FUSE_COUNT_CONNECTION_ERRORS", (flags & 2 != 0).to_string()),
        ("FUSE_COUNT_HTTP_500", (flags & 4 != 0).to_string()),
        ("FUSE_KEY_PREFIX", prefix.to_owned()),
        ("FUSE_OPEN_BACKOFF", recovery.backoff.to_string()),
        ("FUSE_OPEN_JITTER", recovery.jitter.to_string()),
    ]
    .into_iter()
    .chain(recovery.max_open.map(|max| {
        (
            "FUSE_MAX_OPEN_DURATION",
            humantime::format_duration(max).to_string(),
        )
    }))
    .chain(recovery.probe_timeout.map(|timeout| {
        (
            "FUSE_PROBE_TIMEOUT",
            humantime::format_duration(timeout).to_string(),
        )
    }))
    .chain(graded.vars());
    let from_env = crate::settings::Settings::default()
        .with_env_vars(vars)
        .and_then(|settings| settings.config());
    match (built, from_env) {
        (Ok(built), Ok(from_env)) => assert_eq!(built, &from_env),
        (Err(built), Err(crate::settings::SettingsError::Invalid { source, .. })) => {
            assert_eq!(built, &source);
        }
        // Text too long for a duration: a duration the builder refuses too.
        (Err(_), Err(crate::settings::SettingsError::Env { var, .. })) => {
            let too_long = |d: Duration| d > MAX_DURATION;
            assert!(
                (var == "FUSE_FAILURE_WINDOW" && too_long(window))
                    || (var == "FUSE_OPEN_DURATION" && too_long(open))
                    || (var == "FUSE_MAX_OPEN_DURATION" && recovery.max_open.is_some_and(too_long))
                    || (var == "FUSE_PROBE_TIMEOUT"
                        && recovery.probe_timeout.is_some_and(too_long))
                    || (var == "FUSE_RAMP_UP" && graded.ramp_up.is_some_and(too_long)),
                "{var}"
            );
        }
        (built, from_env) => panic!("built {built:?}, from the environment {from_env:?}"),
    }
}
