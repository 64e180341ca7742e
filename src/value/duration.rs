//! Durations as settings: a duration with a unit (`"30s"`, `"1m30s"`,
//! `"500ms"`), and for a duration that may be switched off
//! (`slow_call_duration`) also `"none"` or `"off"`. A bare number, or a
//! value of another type, is refused with how to write it.

use std::fmt;
use std::time::Duration;

use serde::Deserializer;
use serde::de::{self, Visitor};

use super::{Value, is_none};

/// A duration with a unit, as people write them: `"60s"`, `"1m30s"`,
/// `"500ms"`.
impl Value for Duration {
    fn from_text(text: &str) -> Result<Self, String> {
        humantime::parse_duration(text.trim())
            .map_err(|e| format!("not a duration with a unit (\"30s\", \"1m30s\"): {e}"))
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(Written { or_none: false })?
            .ok_or_else(|| de::Error::custom("a duration is needed here, not \"none\""))
    }
}

/// A duration that may be switched off: a duration with a unit, or `none`
/// (also `off`).
impl Value for Option<Duration> {
    fn from_text(text: &str) -> Result<Self, String> {
        if is_none(text) {
            return Ok(None);
        }
        humantime::parse_duration(text.trim())
            .map(Some)
            .map_err(|e| {
                format!("not a duration with a unit (\"2s\", \"500ms\") nor \"none\": {e}")
            })
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Written { or_none: true })
    }
}

/// A duration as the file writes it; `None` for `"none"` when `or_none`.
struct Written {
    or_none: bool,
}

impl Written {
    /// What to write instead of the bare number `n`.
    fn unit_needed<E: de::Error>(&self, n: impl fmt::Display) -> E {
        let or_none = if self.or_none { " (or \"none\")" } else { "" };
        E::custom(format!(
            "a duration needs a unit: write \"{n}s\" or \"{n}ms\", not {n}{or_none}"
        ))
    }
}

impl Visitor<'_> for Written {
    type Value = Option<Duration>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.or_none {
            f.write_str("a duration with a unit (\"2s\", \"500ms\") or \"none\"")
        } else {
            f.write_str("a duration with a unit (\"30s\", \"1m30s\", \"500ms\")")
        }
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        if self.or_none && is_none(text) {
            return Ok(None);
        }
        humantime::parse_duration(text)
            .map(Some)
            .map_err(|e| E::custom(format!("invalid duration {text:?}: {e}")))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        Err(self.unit_needed(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        Err(self.unit_needed(n))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
        Err(self.unit_needed(n))
    }
}

#[cfg(all(test, feature = "config-file"))]
mod tests;
