//! Configuration files and environment variables: the complete example,
//! and every kind of mistake, each refused with an error a person can act
//! on.
#![cfg(feature = "config-file")]

use std::time::Duration;

mod environment;
mod file;
mod policies;
mod stores;

use fuse_breaker::{settings::Settings, settings::SettingsError, settings::StoreKind};

fn error(text: &str) -> String {
    Settings::from_toml(text)
        .expect_err("the configuration must be refused")
        .to_string()
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "{message:?} should mention {part:?}"
        );
    }
}
