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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct File {
        #[serde(deserialize_with = "Policy::deserialize")]
        policy: Policy,
    }

    #[test]
    fn a_policy_is_read_by_name_and_anything_else_refused() {
        assert_eq!(Policy::from_text("rate"), Ok(Policy::Rate));
        assert_eq!(Policy::from_text(" COUNT "), Ok(Policy::Count));
        assert_eq!(
            Policy::from_text("ratio"),
            Err("not a policy: expected count or rate".to_owned())
        );
        let read = |text: &str| toml::from_str::<File>(text).map(|file| file.policy);
        assert_eq!(read("policy = \"rate\"").ok(), Some(Policy::Rate));
        let err = read("policy = \"ratio\"").unwrap_err().to_string();
        assert!(
            err.contains("unknown policy \"ratio\": expected count or rate"),
            "{err}"
        );
        let err = read("policy = 2").unwrap_err().to_string();
        assert!(err.contains("a policy: \"count\" or \"rate\""), "{err}");
    }
}
