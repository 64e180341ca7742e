//! A factor as a setting (`open_backoff`, `open_jitter`): a number such as
//! `2` or `0.25`, written as a number or as text, with at most six decimal
//! places.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

use super::{Value, is_none};
use crate::factor::Factor;

/// The largest number a factor holds.
const LARGEST: f64 = 4_294.967_295;

impl Value for Factor {
    fn from_text(text: &str) -> Result<Self, String> {
        text.parse()
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Number)
    }
}

/// A factor as the file writes it: a number, or a string holding one.
impl Value for Option<Factor> {
    fn from_text(text: &str) -> Result<Self, String> {
        if is_none(text) {
            return Ok(None);
        }
        text.parse().map(Some)
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrNone)
    }
}

/// A factor, or `"none"`/`"off"` for an optional one (`throttle_k`).
struct OrNone;

impl Visitor<'_> for OrNone {
    type Value = Option<Factor>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number such as 2 or 1.5, or \"none\"")
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Number.visit_f64(value).map(Some)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Number.visit_i64(value).map(Some)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Number.visit_u64(value).map(Some)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        if is_none(text) {
            return Ok(None);
        }
        Number.visit_str(text).map(Some)
    }
}

struct Number;

impl Visitor<'_> for Number {
    type Value = Factor;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number such as 2 or 0.25")
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        if (0.0..=LARGEST).contains(&value) {
            Ok(Factor::from_f64(value))
        } else {
            Err(E::custom(format!(
                "{value} is not a number from 0 to {LARGEST}"
            )))
        }
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        #[allow(clippy::cast_precision_loss)] // checked against a small range first
        let number = if (0..=4294).contains(&value) {
            value as f64
        } else {
            f64::NAN
        };
        if number.is_nan() {
            return Err(E::custom(format!(
                "{value} is not a number from 0 to {LARGEST}"
            )));
        }
        self.visit_f64(number)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        self.visit_i64(i64::try_from(value).unwrap_or(i64::MAX))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        text.parse().map_err(E::custom)
    }
}

#[cfg(all(test, feature = "config-file"))]
mod tests;
