//! SPEC §11's settings of a `config` history: `ramp_up`,
//! `ramp_up_floor`, `throttle_k` and `max_throttle`, each unset or a value
//! near a bound of its range or any value at all.

use std::time::Duration;

use super::Bytes;
use crate::config::{ConfigBuilder, MAX_DURATION};
use crate::factor::Factor;

/// `ramp_up_floor`'s default (SPEC §11).
const FLOOR: u32 = 10;
/// `max_throttle`'s default.
const MAX_THROTTLE: u32 = 90;

/// SPEC §11's settings of a history; `None`: the setter is not called.
#[derive(Clone, Copy, Debug)]
pub(super) struct Graded {
    pub(super) ramp_up: Option<Duration>,
    pub(super) floor: Option<u32>,
    pub(super) throttle_k: Option<Factor>,
    pub(super) max_throttle: Option<u32>,
}

impl Graded {
    /// Every setting unset when the bytes are zeros (or run out).
    pub(super) fn decode(bytes: &mut Bytes<'_>) -> Self {
        let ramp_up = match bytes.u8() % 4 {
            0 => None,
            1 => Some(Duration::from_nanos(u64::from(bytes.u16()))),
            2 => Some(
                MAX_DURATION.saturating_sub(Duration::from_nanos(1))
                    + Duration::from_nanos(u64::from(bytes.u8() % 3)),
            ),
            _ => Some(Duration::new(
                bytes.u64() >> (bytes.u8() % 64),
                bytes.u32() % 1_000_000_000,
            )),
        };
        let percent = |bytes: &mut Bytes<'_>| match bytes.u8() % 4 {
            0 => None,
            1 => Some(u32::from(bytes.u8() % 3)),
            2 => Some(99 + u32::from(bytes.u8() % 3)),
            _ => Some(bytes.u32()),
        };
        let floor = percent(bytes);
        let throttle_k = match bytes.u8() % 4 {
            0 => None,
            near @ (1 | 2) => {
                let bound: u32 = if near == 1 { 1_000_000 } else { 10_000_000 };
                Some(Factor::from_millionths(
                    (bound + u32::from(bytes.u8() % 5)) - 2,
                ))
            }
            _ => Some(Factor::from_millionths(bytes.u32())),
        };
        Graded {
            ramp_up,
            floor,
            throttle_k,
            max_throttle: percent(bytes),
        }
    }

    /// Whether each setting is valid (SPEC §11's table), in the order the
    /// builder checks them.
    pub(super) fn validity(self) -> [(&'static str, bool); 4] {
        let ten = Factor::from_millionths(10_000_000);
        let percent = |value: Option<u32>, default| (1..=100).contains(&value.unwrap_or(default));
        [
            (
                "ramp_up",
                self.ramp_up
                    .is_none_or(|ramp| !ramp.is_zero() && ramp <= MAX_DURATION),
            ),
            ("ramp_up_floor", percent(self.floor, FLOOR)),
            (
                "throttle_k",
                self.throttle_k
                    .is_none_or(|k| (Factor::ONE..=ten).contains(&k)),
            ),
            ("max_throttle", percent(self.max_throttle, MAX_THROTTLE)),
        ]
    }

    /// Panics unless `config` returns these settings through its getters,
    /// the unset ones as their defaults.
    pub(super) fn given_by(self, config: &crate::config::Config) {
        assert_eq!(config.ramp_up(), self.ramp_up);
        assert_eq!(config.ramp_up_floor(), self.floor.unwrap_or(FLOOR));
        assert_eq!(config.throttle_k(), self.throttle_k);
        assert_eq!(
            config.max_throttle(),
            self.max_throttle.unwrap_or(MAX_THROTTLE)
        );
    }

    /// `builder` with the settings that are set.
    pub(super) fn apply(self, builder: ConfigBuilder) -> ConfigBuilder {
        let mut builder = builder;
        if let Some(ramp) = self.ramp_up {
            builder = builder.ramp_up(ramp);
        }
        if let Some(floor) = self.floor {
            builder = builder.ramp_up_floor(floor);
        }
        if let Some(k) = self.throttle_k {
            builder = builder.throttle_k(k.to_f64());
        }
        if let Some(max) = self.max_throttle {
            builder = builder.max_throttle(max);
        }
        builder
    }

    /// The settings that are set as `FUSE_*` variables.
    #[cfg(feature = "config-file")]
    pub(super) fn vars(self) -> Vec<(&'static str, String)> {
        [
            self.ramp_up
                .map(|ramp| ("FUSE_RAMP_UP", humantime::format_duration(ramp).to_string())),
            self.floor
                .map(|floor| ("FUSE_RAMP_UP_FLOOR", floor.to_string())),
            self.throttle_k.map(|k| ("FUSE_THROTTLE_K", k.to_string())),
            self.max_throttle
                .map(|max| ("FUSE_MAX_THROTTLE", max.to_string())),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}
