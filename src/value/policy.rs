//! A policy as a setting: `count` or `rate` (SPEC §9), by name.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

use super::Value;
use crate::policy::Policy;

/// A policy by name: `count` or `rate`.
impl Value for Policy {
    fn from_text(text: &str) -> Result<Self, String> {
        text.parse()
            .map_err(|_| "not a policy: expected count or rate".to_owned())
    }

    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Named)
    }
}

/// A policy as the file writes it: its name, as a string.
struct Named;

impl Visitor<'_> for Named {
    type Value = Policy;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a policy: \"count\" or \"rate\"")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        text.parse().map_err(E::custom)
    }
}

#[cfg(all(test, feature = "config-file"))]
mod tests;
