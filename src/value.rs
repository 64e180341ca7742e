//! How each type of setting is read: from the configuration file (through
//! serde, so the TOML parser reports where a bad value is) and from the
//! text of an environment variable or an admin request (features
//! `config-file`, `admin`).

mod duration;
mod factor;
mod policy;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer};

/// A type of setting value.
pub(crate) trait Value: Sized {
    /// The value an environment variable's text names, or why it names none.
    fn from_text(text: &str) -> Result<Self, String>;

    /// The value as the configuration file writes it.
    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// Reads a setting the file sets (a key that is absent is `None` through
/// `#[serde(default)]`).
/// Whether `text` switches an optional setting off: `none` or `off`, in
/// any case.
fn is_none(text: &str) -> bool {
    let text = text.trim();
    text.eq_ignore_ascii_case("none") || text.eq_ignore_ascii_case("off")
}

pub(crate) fn some<'de, D: Deserializer<'de>, T: Value>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

fn number<T: FromStr>(text: &str) -> Result<T, String>
where
    T::Err: fmt::Display,
{
    text.trim()
        .parse()
        .map_err(|e| format!("not a number: {e}"))
}

impl Value for u32 {
    fn from_text(text: &str) -> Result<Self, String> {
        number(text)
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <u32 as Deserialize>::deserialize(deserializer)
    }
}

impl Value for usize {
    fn from_text(text: &str) -> Result<Self, String> {
        number(text)
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <usize as Deserialize>::deserialize(deserializer)
    }
}

impl Value for bool {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err("not a boolean (true/false/1/0)".to_owned()),
        }
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <bool as Deserialize>::deserialize(deserializer)
    }
}

impl Value for String {
    fn from_text(text: &str) -> Result<Self, String> {
        Ok(text.to_owned())
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <String as Deserialize>::deserialize(deserializer)
    }
}

/// A list of statuses: comma separated in a variable, an array in the file.
impl Value for Vec<u16> {
    fn from_text(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(number)
            .collect()
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <Vec<u16> as Deserialize>::deserialize(deserializer)
    }
}
