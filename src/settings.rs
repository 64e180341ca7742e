//! [`Settings`]: a registry's configuration from a TOML file and the
//! environment (feature `config-file`).
//!
//! ```toml
//! app = "shop"                 # optional piece of every key
//! store = "memory"             # where circuits live (only `memory` for now)
//! key_prefix = "fuse"
//! failure_threshold = 8
//! failure_window = "60s"       # durations with a unit: "500ms", "1m30s", "2h"
//! open_duration = "30s"
//! half_open_probes = 2
//! counted_http_statuses = [502, 503, 504]
//! count_timeouts = true
//! count_connection_errors = true
//! count_http_500 = false
//!
//! [breakers.billing]           # overrides for the circuits named `billing`
//! failure_threshold = 3
//! open_duration = "15s"
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use toml::Spanned;

use crate::config::{Config, ConfigError};
use crate::registry::{Overrides, Registry};

/// Where a registry keeps its circuits (`store = "..."` in a file,
/// `FUSE_STORE`).
///
/// ```
/// use fuse_breaker::{Settings, Store};
///
/// assert_eq!(Settings::from_toml(r#"store = "memory""#)?.store, Store::Memory);
/// assert!(Settings::from_toml(r#"store = "carrier pigeon""#).is_err());
/// # Ok::<(), fuse_breaker::SettingsError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Store {
    /// In this process, lock-free.
    #[default]
    Memory,
}

impl Store {
    fn parse(name: &str) -> Option<Store> {
        match name {
            "memory" => Some(Store::Memory),
            _ => None,
        }
    }
}

/// The configuration of a [`Registry`]: defaults, app, store and per-name
/// overrides, read from a TOML file and overridden by `FUSE_*` environment
/// variables.
///
/// ```
/// use fuse_breaker::Settings;
///
/// let settings = Settings::from_toml(r#"
///     app = "shop"
///     failure_threshold = 5
///     open_duration = "1m30s"
///
///     [breakers.billing]
///     failure_threshold = 2
/// "#)?
/// .with_env_vars([("FUSE_HALF_OPEN_PROBES", "3")])?;
///
/// let registry = settings.registry()?;
/// let billing = registry.get("billing");
/// assert_eq!(billing.key(), "fuse:shop:billing");
/// assert_eq!(billing.config().failure_threshold(), 2);
/// assert_eq!(billing.config().open_duration().as_secs(), 90);
/// assert_eq!(billing.config().half_open_probes(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The application piece of every key.
    pub app: Option<String>,
    /// Where the circuits live.
    pub store: Store,
    /// Changes to [`Config::default`] for every circuit.
    pub defaults: Overrides,
    /// Changes to the defaults for the circuits of one name.
    pub breakers: BTreeMap<String, Overrides>,
    /// Where each setting was written, to point at it in errors.
    places: BTreeMap<String, Place>,
}

/// A line and column in a file (both from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    line: usize,
    column: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// A configuration that cannot be used, and what is wrong with it.
///
/// ```
/// let err = fuse_breaker::Settings::from_toml("failure_treshold = 3").unwrap_err();
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
    /// The store is not one this build has.
    UnknownStore {
        /// The name given.
        store: String,
        /// Where it was given (`store` in the file, or `FUSE_STORE`).
        origin: String,
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
            SettingsError::UnknownStore { store, origin } => write!(
                f,
                "unknown store {store:?} ({origin}): this build has `memory`"
            ),
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

/// A duration written the way people write them: `"60s"`, `"1m30s"`.
#[derive(Clone, Copy, Debug)]
struct Text(Duration);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Number(i64),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Text(text) => humantime::parse_duration(&text)
                .map(Text)
                .map_err(|e| serde::de::Error::custom(format!("invalid duration {text:?}: {e}"))),
            Raw::Number(n) => Err(serde::de::Error::custom(format!(
                "a duration needs a unit: write \"{n}s\" or \"{n}ms\", not {n}"
            ))),
        }
    }
}

/// One table of the file: the top level (defaults, app, store, breakers) or
/// a `[breakers.NAME]` table (settings only).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Table {
    app: Option<Spanned<String>>,
    store: Option<Spanned<String>>,
    breakers: Option<Spanned<BTreeMap<String, Table>>>,
    failure_threshold: Option<Spanned<u32>>,
    failure_window: Option<Spanned<Text>>,
    open_duration: Option<Spanned<Text>>,
    half_open_probes: Option<Spanned<u32>>,
    counted_http_statuses: Option<Spanned<Vec<u16>>>,
    count_timeouts: Option<Spanned<bool>>,
    count_connection_errors: Option<Spanned<bool>>,
    count_http_500: Option<Spanned<bool>>,
    key_prefix: Option<Spanned<String>>,
}

impl Table {
    /// The overrides this table names, recording where each was written
    /// under `table.setting` in `places`.
    fn overrides(
        &self,
        table: &str,
        text: &str,
        places: &mut BTreeMap<String, Place>,
    ) -> Overrides {
        let mut at = |setting: &str, span: std::ops::Range<usize>| {
            places.insert(format!("{table}.{setting}"), place(text, span.start));
        };
        macro_rules! take {
            ($field:ident, $map:expr) => {
                self.$field.as_ref().map(|v| {
                    at(stringify!($field), v.span());
                    $map(v.get_ref())
                })
            };
        }
        Overrides {
            failure_threshold: take!(failure_threshold, |v: &u32| *v),
            failure_window: take!(failure_window, |v: &Text| v.0),
            open_duration: take!(open_duration, |v: &Text| v.0),
            half_open_probes: take!(half_open_probes, |v: &u32| *v),
            counted_http_statuses: take!(counted_http_statuses, |v: &Vec<u16>| v.clone()),
            count_timeouts: take!(count_timeouts, |v: &bool| *v),
            count_connection_errors: take!(count_connection_errors, |v: &bool| *v),
            count_http_500: take!(count_http_500, |v: &bool| *v),
            key_prefix: take!(key_prefix, |v: &String| v.clone()),
        }
    }
}

/// The line and column of byte `offset` of `text`.
fn place(text: &str, offset: usize) -> Place {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Place { line, column }
}

impl Settings {
    /// Reads a configuration file (see [`Settings`] for its keys).
    ///
    /// ```no_run
    /// let settings = fuse_breaker::Settings::from_file("fuse.toml")?.with_env()?;
    /// let registry = settings.registry()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<Settings, SettingsError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
            path: path.to_owned(),
            source,
        })?;
        Settings::parse(&text).map_err(|err| match err {
            SettingsError::Parse { message, .. } => SettingsError::Parse {
                path: Some(path.to_owned()),
                message,
            },
            other => other,
        })
    }

    /// Reads a configuration from TOML text.
    ///
    /// ```
    /// let settings = fuse_breaker::Settings::from_toml("failure_window = \"2m\"")?;
    /// assert_eq!(settings.defaults.failure_window, Some(std::time::Duration::from_secs(120)));
    /// # Ok::<(), fuse_breaker::SettingsError>(())
    /// ```
    pub fn from_toml(text: &str) -> Result<Settings, SettingsError> {
        Settings::parse(text)
    }

    fn parse(text: &str) -> Result<Settings, SettingsError> {
        let parse_error = |message: String| SettingsError::Parse {
            path: None,
            message,
        };
        let top: Table = toml::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        let mut places = BTreeMap::new();
        let mut settings = Settings {
            app: top.app.as_ref().map(|app| app.get_ref().clone()),
            defaults: top.overrides("defaults", text, &mut places),
            ..Settings::default()
        };
        if let Some(store) = &top.store {
            settings.store =
                Store::parse(store.get_ref()).ok_or_else(|| SettingsError::UnknownStore {
                    store: store.get_ref().clone(),
                    origin: format!("store, {}", place(text, store.span().start)),
                })?;
        }
        for (name, table) in top.breakers.iter().flat_map(toml::Spanned::get_ref) {
            let misplaced = [
                ("app", table.app.as_ref().map(Spanned::span)),
                ("store", table.store.as_ref().map(Spanned::span)),
                ("breakers", table.breakers.as_ref().map(Spanned::span)),
            ];
            if let Some((key, Some(span))) = misplaced.into_iter().find(|(_, s)| s.is_some()) {
                return Err(parse_error(format!(
                    "`{key}` belongs at the top level, not in [breakers.{name}] ({})",
                    place(text, span.start)
                )));
            }
            let overrides = table.overrides(&format!("breakers.{name}"), text, &mut places);
            settings.breakers.insert(name.clone(), overrides);
        }
        settings.places = places;
        settings.check()?;
        Ok(settings)
    }

    /// These settings with the `FUSE_*` variables of the process
    /// environment applied (see [`with_env_vars`](Self::with_env_vars)).
    ///
    /// ```
    /// let settings = fuse_breaker::Settings::default().with_env()?;
    /// # Ok::<(), fuse_breaker::SettingsError>(())
    /// ```
    pub fn with_env(self) -> Result<Settings, SettingsError> {
        self.with_env_vars(std::env::vars())
    }

    /// These settings with the `FUSE_*` variables among `vars` applied:
    /// they override the file's defaults (never its `[breakers.NAME]`
    /// tables). `FUSE_APP`, `FUSE_STORE`, `FUSE_KEY_PREFIX`,
    /// `FUSE_FAILURE_THRESHOLD`, `FUSE_FAILURE_WINDOW`, `FUSE_OPEN_DURATION`,
    /// `FUSE_HALF_OPEN_PROBES`, `FUSE_COUNTED_HTTP_STATUSES` (comma
    /// separated), `FUSE_COUNT_TIMEOUTS`, `FUSE_COUNT_CONNECTION_ERRORS`,
    /// `FUSE_COUNT_HTTP_500` (`true`/`false`/`1`/`0`). Other variables are
    /// ignored.
    ///
    /// ```
    /// let settings = fuse_breaker::Settings::default()
    ///     .with_env_vars([("FUSE_OPEN_DURATION", "45s"), ("FUSE_APP", "shop")])?;
    /// assert_eq!(settings.app.as_deref(), Some("shop"));
    /// assert_eq!(settings.defaults.open_duration, Some(std::time::Duration::from_secs(45)));
    ///
    /// let err = fuse_breaker::Settings::default()
    ///     .with_env_vars([("FUSE_FAILURE_THRESHOLD", "many")])
    ///     .unwrap_err();
    /// assert!(err.to_string().starts_with("invalid FUSE_FAILURE_THRESHOLD = \"many\""));
    /// # Ok::<(), fuse_breaker::SettingsError>(())
    /// ```
    pub fn with_env_vars<K, V>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Settings, SettingsError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        for (var, value) in vars {
            let (var, value) = (var.as_ref(), value.as_ref());
            let Some(setting) = var.strip_prefix("FUSE_") else {
                continue;
            };
            let env_error = |reason: String| SettingsError::Env {
                var: var.to_owned(),
                value: value.to_owned(),
                reason,
            };
            let d = &mut self.defaults;
            match setting {
                "APP" => self.app = Some(value.to_owned()),
                "STORE" => {
                    self.store =
                        Store::parse(value).ok_or_else(|| SettingsError::UnknownStore {
                            store: value.to_owned(),
                            origin: "FUSE_STORE".to_owned(),
                        })?;
                }
                "KEY_PREFIX" => d.key_prefix = Some(value.to_owned()),
                "FAILURE_THRESHOLD" => {
                    d.failure_threshold = Some(number(value).map_err(env_error)?);
                }
                "HALF_OPEN_PROBES" => d.half_open_probes = Some(number(value).map_err(env_error)?),
                "FAILURE_WINDOW" => d.failure_window = Some(duration(value).map_err(env_error)?),
                "OPEN_DURATION" => d.open_duration = Some(duration(value).map_err(env_error)?),
                "COUNTED_HTTP_STATUSES" => {
                    let statuses = value
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(number)
                        .collect::<Result<Vec<u16>, _>>()
                        .map_err(env_error)?;
                    d.counted_http_statuses = Some(statuses);
                }
                "COUNT_TIMEOUTS" => d.count_timeouts = Some(flag(value).map_err(env_error)?),
                "COUNT_CONNECTION_ERRORS" => {
                    d.count_connection_errors = Some(flag(value).map_err(env_error)?);
                }
                "COUNT_HTTP_500" => d.count_http_500 = Some(flag(value).map_err(env_error)?),
                _ => continue,
            }
            // The value no longer comes from the file.
            self.places
                .remove(&format!("defaults.{}", setting.to_ascii_lowercase()));
        }
        self.check()?;
        Ok(self)
    }

    /// The defaults every circuit starts from.
    ///
    /// ```
    /// let settings = fuse_breaker::Settings::from_toml("failure_threshold = 3")?;
    /// assert_eq!(settings.config()?.failure_threshold(), 3);
    /// # Ok::<(), fuse_breaker::SettingsError>(())
    /// ```
    pub fn config(&self) -> Result<Config, SettingsError> {
        self.defaults
            .apply(&Config::default())
            .map_err(|source| self.invalid("defaults", source))
    }

    /// A registry with these settings.
    ///
    /// ```
    /// let registry = fuse_breaker::Settings::from_toml("app = \"shop\"")?.registry()?;
    /// assert_eq!(registry.get("billing").key(), "fuse:shop:billing");
    /// # Ok::<(), fuse_breaker::SettingsError>(())
    /// ```
    pub fn registry(&self) -> Result<Registry, SettingsError> {
        self.check()?;
        let mut builder = Registry::builder().defaults(self.config()?);
        if let Some(app) = &self.app {
            builder = builder.app(app.clone());
        }
        for (name, overrides) in &self.breakers {
            builder = builder.overrides(name.clone(), overrides.clone());
        }
        // Checked above: an override that fails here fails in `check` first.
        builder
            .build()
            .map_err(|source| self.invalid("breakers", source))
    }

    /// Validates the defaults and every override once, with the crate's
    /// own validation, so that a bad file is refused when it is read.
    fn check(&self) -> Result<(), SettingsError> {
        let defaults = self.config()?;
        for (name, overrides) in &self.breakers {
            overrides
                .apply(&defaults)
                .map_err(|source| self.invalid(&format!("breakers.{name}"), source))?;
        }
        Ok(())
    }

    fn invalid(&self, table: &str, source: ConfigError) -> SettingsError {
        let place = self
            .places
            .get(&format!("{table}.{}", source.setting()))
            .map(ToString::to_string);
        SettingsError::Invalid {
            table: table.to_owned(),
            place,
            source,
        }
    }
}

fn number<T: std::str::FromStr>(value: &str) -> Result<T, String>
where
    T::Err: fmt::Display,
{
    value
        .trim()
        .parse()
        .map_err(|e| format!("not a number: {e}"))
}

fn duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value.trim())
        .map_err(|e| format!("not a duration with a unit (\"30s\", \"1m30s\"): {e}"))
}

fn flag(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err("not a boolean (true/false/1/0)".to_owned()),
    }
}
