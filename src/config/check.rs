//! The rules of SPEC §2 that [`ConfigBuilder::build`](super::ConfigBuilder::build)
//! checks: every setting's range, and what the settings must agree on.

use std::time::Duration;

use super::{
    Config, ConfigError, MAX_DURATION, MAX_FAILURE_THRESHOLD, MAX_HALF_OPEN_PROBES,
    MAX_MIN_REPORTERS, MAX_MINIMUM_CALLS, MAX_WINDOW_BUCKETS,
};
use crate::factor::Factor;

impl Config {
    /// Checks every setting (SPEC §2): the first invalid one, with its value.
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
        if let Some(ramp) = c.ramp_up {
            check_duration("ramp_up", ramp)?;
        }
        check_count("ramp_up_floor", c.ramp_up_floor, 100)?;
        if let Some(k) = c.throttle_k {
            check_factor("throttle_k", k, Factor::ONE, true)?;
        }
        check_count("max_throttle", c.max_throttle, 100)?;
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
        Ok(())
    }
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
