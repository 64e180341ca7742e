//! [`SettingsError`]: what is wrong with a configuration.

use std::fmt;
use std::path::PathBuf;

use crate::config::ConfigError;

/// A configuration that cannot be used, and what is wrong with it.
///
/// ```
/// let err = fuse_breaker::settings::Settings::from_toml("failure_treshold = 3").unwrap_err();
/// let text = err.to_string();
/// assert!(text.contains("failure_treshold"), "{text}");
/// assert!(text.contains("line 1, column 1"), "{text}");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a valid configuration file: bad TOML, an unknown key
    /// (a typo), a value of the wrong type, a duration without a unit.
    Parse {
        /// The file, when read from one.
        path: Option<PathBuf>,
        /// What is wrong and where (line and column).
        message: String,
    },
    /// A value is out of range for its setting.
    Invalid {
        /// `defaults`, or `breakers.NAME`.
        table: String,
        /// Where the value was written, when it came from the file.
        place: Option<String>,
        /// The setting and value refused.
        source: ConfigError,
    },
    /// An environment variable holds a value its setting cannot take.
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
    UnknownVariable {
        /// The variable.
        var: String,
        /// The setting's variable it is closest to.
        closest: String,
    },
    /// The store is not one the crate knows.
    UnknownStore {
        /// The name given.
        store: String,
        /// Where it was given (`store` in the file, or `FUSE_STORE`).
        origin: String,
    },
    /// The fallback is not `local`, `allow` or `reject`.
    UnknownFallback {
        /// The name given.
        fallback: String,
        /// Where it was given (`fallback` in the file, or `FUSE_FALLBACK`).
        origin: String,
    },
    /// The payload is not `json`, `php` or `laravel`.
    UnknownPayload {
        /// The name given.
        payload: String,
        /// Where it was given (`payload` in the file, or `FUSE_PAYLOAD`).
        origin: String,
    },
    /// The payload read is not `written` or `auto`.
    UnknownPayloadRead {
        /// The name given.
        read: String,
        /// Where it was given (`payload_read` in the file, or
        /// `FUSE_PAYLOAD_READ`).
        origin: String,
    },
    /// The settings name a store that this call, or this build, cannot
    /// make circuits in, or that could not be opened.
    Store {
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            SettingsError::Parse { path, message } => match path {
                Some(path) => write!(f, "invalid configuration in {}: {message}", path.display()),
                None => write!(f, "invalid configuration: {message}"),
            },
            SettingsError::Invalid {
                table,
                place,
                source,
            } => {
                write!(f, "{source} (in {table}")?;
                if let Some(place) = place {
                    write!(f, ", {place}")?;
                }
                f.write_str(")")
            }
            SettingsError::Env { var, value, reason } => {
                write!(f, "invalid {var} = {value:?}: {reason}")
            }
            SettingsError::UnknownVariable { var, closest } => write!(
                f,
                "{var} is not a setting: did you mean {closest}? (unset it, or spell it right)"
            ),
            SettingsError::UnknownStore { store, origin } => write!(
                f,
                "unknown store {store:?} ({origin}): the stores are `memory`, `redis` and `database`"
            ),
            SettingsError::UnknownFallback { fallback, origin } => write!(
                f,
                "unknown fallback {fallback:?} ({origin}): the fallbacks are `local`, `allow` and `reject`"
            ),
            SettingsError::UnknownPayload { payload, origin } => write!(
                f,
                "unknown payload {payload:?} ({origin}): the payloads are {}",
                crate::config::PayloadKind::CHOICES
            ),
            SettingsError::UnknownPayloadRead { read, origin } => write!(
                f,
                "unknown payload_read {read:?} ({origin}): the choices are {}",
                crate::config::PayloadRead::CHOICES
            ),
            SettingsError::Store { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for SettingsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SettingsError::Read { source, .. } => Some(source),
            SettingsError::Invalid { source, .. } => Some(source),
            _ => None,
        }
    }
}
