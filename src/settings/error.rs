//! [`SettingsError`]: what is wrong with a configuration.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::choice::Choice;
use crate::config::ConfigError;

/// A configuration that cannot be used, and what is wrong with it.
///
/// ```
/// let err = fuse_breaker::settings::Settings::from_toml("failure_treshold = 3").unwrap_err();
/// let text = err.to_string();
/// assert!(text.contains("failure_treshold"), "{text}");
/// assert!(text.contains("line 1, column 1"), "{text}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a valid configuration file: bad TOML, an unknown key
    /// (a typo), a value of the wrong type, a duration without a unit.
    #[error(
        "invalid configuration{}: {message}",
        prefixed(" in ", .path.as_deref().map(Path::display))
    )]
    Parse {
        /// The file, when read from one.
        path: Option<PathBuf>,
        /// What is wrong and where (line and column).
        message: String,
    },
    /// A value is out of range for its setting.
    #[error("{source} (in {table}{})", prefixed(", ", .place.as_ref()))]
    Invalid {
        /// `defaults`, or `breakers.NAME`.
        table: String,
        /// Where the value was written, when it came from the file.
        place: Option<String>,
        /// The setting and value refused.
        source: ConfigError,
    },
    /// An environment variable holds a value its setting cannot take.
    #[error("invalid {var} = {value:?}: {reason}")]
    Env {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// A `FUSE_*` variable that names no setting but is a near miss of
    /// one's (a typo): see [`Settings::with_env_vars`](crate::settings::Settings::with_env_vars).
    #[error("{var} is not a setting: did you mean {closest}? (unset it, or spell it right)")]
    UnknownVariable {
        /// The variable.
        var: String,
        /// The setting's variable it is closest to.
        closest: String,
    },
    /// The store is not one the crate knows.
    #[error(
        "unknown store {store:?} ({origin}): the stores are {}",
        <super::StoreKind as Choice>::choices()
    )]
    UnknownStore {
        /// The name given.
        store: String,
        /// Where it was given (`store` in the file, or `FUSE_STORE`).
        origin: String,
    },
    /// The fallback is not `local`, `allow` or `reject`.
    #[error(
        "unknown fallback {fallback:?} ({origin}): the fallbacks are {}",
        <crate::config::Fallback as Choice>::choices()
    )]
    UnknownFallback {
        /// The name given.
        fallback: String,
        /// Where it was given (`fallback` in the file, or `FUSE_FALLBACK`).
        origin: String,
    },
    /// The payload is not `json`, `php` or `laravel`.
    #[error(
        "unknown payload {payload:?} ({origin}): the payloads are {}",
        <crate::config::PayloadKind as Choice>::choices()
    )]
    UnknownPayload {
        /// The name given.
        payload: String,
        /// Where it was given (`payload` in the file, or `FUSE_PAYLOAD`).
        origin: String,
    },
    /// The payload read is not `written` or `auto`.
    #[error(
        "unknown payload_read {read:?} ({origin}): the choices are {}",
        <crate::config::PayloadRead as Choice>::choices()
    )]
    UnknownPayloadRead {
        /// The name given.
        read: String,
        /// Where it was given (`payload_read` in the file, or
        /// `FUSE_PAYLOAD_READ`).
        origin: String,
    },
    /// The settings name a store that this call, or this build, cannot
    /// make circuits in, or that could not be opened.
    #[error("{reason}")]
    Store {
        /// What is wrong.
        reason: String,
    },
}

impl SettingsError {
    /// The error of a name that is none of `T`'s, given at `origin`.
    fn unknown<T: Choice>(name: String, origin: String) -> SettingsError {
        match T::SETTING {
            "store" => SettingsError::UnknownStore {
                store: name,
                origin,
            },
            "fallback" => SettingsError::UnknownFallback {
                fallback: name,
                origin,
            },
            "payload" => SettingsError::UnknownPayload {
                payload: name,
                origin,
            },
            // `payload_read`, the one other list of names settings take
            _ => SettingsError::UnknownPayloadRead { read: name, origin },
        }
    }
}

/// `name` read as one of `T`'s, or the error naming it and `origin`, where
/// it was given.
pub(super) fn choice<T: Choice>(name: &str, origin: impl Into<String>) -> Result<T, SettingsError> {
    T::named(name).ok_or_else(|| SettingsError::unknown::<T>(name.to_owned(), origin.into()))
}

/// `prefix` then `value`, or nothing without a value.
fn prefixed(prefix: &str, value: Option<impl fmt::Display>) -> String {
    value
        .map(|value| format!("{prefix}{value}"))
        .unwrap_or_default()
}
