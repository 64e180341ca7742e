//! Reading a configuration file: its layout (the top-level keys that are
//! not a circuit's settings), where each value is written, and the
//! [`Settings`] it makes.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::DeTable;

use super::Settings;
use super::error::{SettingsError, choice};
use crate::choice::Choice;
use crate::config::Overrides;

/// Where a setting's value was written: a line and column of the file
/// (both from 1), or the `FUSE_*` variable that set it instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// In the file.
    File { line: usize, column: usize },
    /// In this environment variable.
    Var(String),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::File { line, column } => write!(f, "line {line}, column {column}"),
            Place::Var(var) => write!(f, "from {var}"),
        }
    }
}

/// The keys of the file's top level that are not settings of a circuit.
pub(super) const LAYOUT: [&str; 13] = [
    "app",
    "store",
    "redis_url",
    "database_url",
    "database_table",
    "payload",
    "payload_read",
    "laravel_redis_prefix",
    "laravel_cache_prefix",
    "fallback",
    "max_circuits",
    "metric_names",
    "breakers",
];

/// The top level of the file without its settings (those are read into
/// [`Overrides`] directly).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Layout {
    app: Option<String>,
    store: Option<Spanned<String>>,
    redis_url: Option<String>,
    database_url: Option<String>,
    database_table: Option<String>,
    payload: Option<Spanned<String>>,
    payload_read: Option<Spanned<String>>,
    laravel_redis_prefix: Option<Spanned<String>>,
    laravel_cache_prefix: Option<Spanned<String>>,
    fallback: Option<Spanned<String>>,
    max_circuits: Option<Spanned<usize>>,
    metric_names: Option<Spanned<String>>,
    #[serde(default)]
    breakers: BTreeMap<String, Overrides>,
}

/// Where the value of each setting of the file is written (`defaults.SETTING`,
/// `breakers.NAME.SETTING`), refusing a top-level key inside a breaker's
/// table.
fn places(
    text: &str,
    layout: &DeTable<'_>,
    defaults: &DeTable<'_>,
) -> Result<BTreeMap<String, Place>, SettingsError> {
    let mut places = BTreeMap::new();
    for (key, value) in defaults {
        places.insert(
            format!("defaults.{}", key.get_ref()),
            place(text, value.span().start),
        );
    }
    let breakers = layout
        .iter()
        .filter(|(key, _)| key.get_ref() == "breakers")
        .filter_map(|(_, value)| value.get_ref().as_table());
    for (name, table) in breakers.flatten() {
        for (key, value) in table.get_ref().as_table().into_iter().flatten() {
            let (name, key) = (name.get_ref(), key.get_ref());
            let at = place(text, value.span().start);
            if LAYOUT.contains(&key.as_ref()) {
                return Err(SettingsError::Parse {
                    path: None,
                    message: format!(
                        "`{key}` belongs at the top level, not in [breakers.{name}] ({at})"
                    ),
                });
            }
            places.insert(format!("breakers.{name}.{key}"), at);
        }
    }
    Ok(places)
}

/// The line and column of byte `offset` of `text`.
fn place(text: &str, offset: usize) -> Place {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Place::File { line, column }
}

impl Settings {
    /// Reads a configuration file (see [`Settings`] for its keys).
    ///
    /// ```no_run
    /// let settings = fuse_breaker::settings::Settings::from_file("fuse.toml")?.with_env()?;
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
    /// let settings = fuse_breaker::settings::Settings::from_toml("failure_window = \"2m\"")?;
    /// assert_eq!(settings.defaults.failure_window, Some(std::time::Duration::from_secs(120)));
    /// # Ok::<(), fuse_breaker::settings::SettingsError>(())
    /// ```
    pub fn from_toml(text: &str) -> Result<Settings, SettingsError> {
        Settings::parse(text)
    }

    fn parse(text: &str) -> Result<Settings, SettingsError> {
        // The message quotes the line: a URL on it is shown redacted.
        let parse_error = |mut error: toml::de::Error| {
            error.set_input(Some(text));
            SettingsError::Parse {
                path: None,
                message: crate::redact::text(&error.to_string()).into_owned(),
            }
        };
        let root = DeTable::parse(text).map_err(parse_error)?;
        let span = root.span();
        let (layout, defaults): (DeTable<'_>, DeTable<'_>) = root
            .into_inner()
            .into_iter()
            .partition(|(key, _)| LAYOUT.contains(&key.get_ref().as_ref()));
        let mut places = places(text, &layout, &defaults)?;
        let read = |table| toml::de::Deserializer::from(Spanned::new(span.clone(), table));
        let layout = Layout::deserialize(read(layout)).map_err(parse_error)?;
        if let Some(max) = &layout.max_circuits {
            places.insert(
                "registry.max_circuits".to_owned(),
                place(text, max.span().start),
            );
        }
        if let Some(names) = &layout.metric_names {
            places.insert(
                "registry.metric_names".to_owned(),
                place(text, names.span().start),
            );
        }
        for (setting, value) in [
            ("store", &layout.store),
            ("payload", &layout.payload),
            ("payload_read", &layout.payload_read),
            ("laravel_redis_prefix", &layout.laravel_redis_prefix),
            ("laravel_cache_prefix", &layout.laravel_cache_prefix),
        ] {
            if let Some(value) = value {
                places.insert(format!("store.{setting}"), place(text, value.span().start));
            }
        }
        let mut settings = Settings {
            app: layout.app,
            payload: spanned_choice(text, layout.payload.as_ref())?,
            payload_read: spanned_choice(text, layout.payload_read.as_ref())?,
            laravel_redis_prefix: layout.laravel_redis_prefix.map(Spanned::into_inner),
            laravel_cache_prefix: layout.laravel_cache_prefix.map(Spanned::into_inner),
            redis_url: layout.redis_url,
            database_url: layout.database_url,
            database_table: layout.database_table,
            max_circuits: layout.max_circuits.as_ref().map(|max| *max.get_ref()),
            metric_names: layout.metric_names.map(Spanned::into_inner),
            defaults: Overrides::deserialize(read(defaults)).map_err(parse_error)?,
            breakers: layout.breakers,
            places,
            ..Settings::default()
        };
        if let Some(store) = spanned_choice(text, layout.store.as_ref())? {
            settings.store = store;
        }
        if let Some(fallback) = spanned_choice(text, layout.fallback.as_ref())? {
            settings.fallback = fallback;
        }
        settings.check()?;
        Ok(settings)
    }
}

/// The choice `value` names in the file `text`, if it is given; the error
/// names its setting and its place.
fn spanned_choice<T: Choice>(
    text: &str,
    value: Option<&Spanned<String>>,
) -> Result<Option<T>, SettingsError> {
    value
        .map(|value| {
            let origin = format!("{}, {}", T::SETTING, place(text, value.span().start));
            choice(value.get_ref(), origin)
        })
        .transpose()
}
