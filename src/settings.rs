//! [`Settings`]: a registry's configuration from a TOML file and the
//! environment (feature `config-file`).
//!
//! ```toml
//! app = "shop"                 # optional piece of every key
//! store = "memory"             # where circuits live: `memory`, `redis` or `database`
//! # redis_url = "redis://127.0.0.1:6379"   # with store = "redis"
//! # database_url = "postgres://127.0.0.1/shop"   # with store = "database"
//! # database_table = "fuse_circuits"
//! # fallback = "local"                     # while the store does not answer
//! max_circuits = 10000         # the most circuits the registry holds
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

use serde::Deserialize;
use toml::Spanned;
use toml::de::DeTable;

use crate::config::{Config, ConfigError};
use crate::overrides::Overrides;
use crate::registry::Registry;

/// Where a registry keeps its circuits (`store = "..."` in a file,
/// `FUSE_STORE`): in this process ([`Settings::registry`]), or in Redis or
/// a database for every process of a fleet (`Settings::shared_registry`,
/// with `redis_url` and feature `redis`, or `database_url` and feature
/// `sql`).
///
/// ```
/// use fuse_breaker::{Settings, Store};
///
/// assert_eq!(Settings::from_toml(r#"store = "memory""#)?.store, Store::Memory);
/// assert_eq!(Settings::from_toml(r#"store = "redis""#)?.store, Store::Redis);
/// assert_eq!(Settings::from_toml(r#"store = "database""#)?.store, Store::Database);
/// assert!(Settings::from_toml(r#"store = "carrier pigeon""#).is_err());
/// # Ok::<(), fuse_breaker::SettingsError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Store {
    /// In this process, lock-free.
    #[default]
    Memory,
    /// In Redis (or Valkey), shared by every process that uses the keys.
    Redis,
    /// In a table of PostgreSQL or SQLite (milon/fuse's `fuse_circuits`),
    /// shared by every process that uses the rows.
    Database,
}

impl Store {
    fn parse(name: &str) -> Option<Store> {
        match name {
            "memory" => Some(Store::Memory),
            "redis" => Some(Store::Redis),
            "database" => Some(Store::Database),
            _ => None,
        }
    }

    /// The store as a file names it.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Store::Redis.as_str(), "redis");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::Redis => "redis",
            Store::Database => "database",
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
///
/// Its `Debug` output names the store URLs without their secrets
/// ([`redact`](crate::redact)).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The application piece of every key.
    pub app: Option<String>,
    /// Where the circuits live.
    pub store: Store,
    /// The Redis server of `store = "redis"` (`redis_url`,
    /// `FUSE_REDIS_URL`).
    pub redis_url: Option<String>,
    /// The database of `store = "database"` (`database_url`,
    /// `FUSE_DATABASE_URL`): `postgres://...` or `sqlite:...`.
    pub database_url: Option<String>,
    /// The table of `store = "database"` (`database_table`,
    /// `FUSE_DATABASE_TABLE`; default milon/fuse's `fuse_circuits`).
    pub database_table: Option<String>,
    /// What decides for a shared circuit while its store does not answer
    /// (`fallback`, `FUSE_FALLBACK`: `local`, `allow` or `reject`).
    pub fallback: crate::fallback::Fallback,
    /// The most circuits the registry holds (`max_circuits`,
    /// `FUSE_MAX_CIRCUITS`; see
    /// [`RegistryBuilder::max_circuits`](crate::RegistryBuilder::max_circuits)).
    pub max_circuits: Option<usize>,
    /// Changes to [`Config::default`] for every circuit.
    pub defaults: Overrides,
    /// Changes to the defaults for the circuits of one name.
    pub breakers: BTreeMap<String, Overrides>,
    /// Where each setting was written, to point at it in errors.
    places: BTreeMap<String, Place>,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn url(url: Option<&String>) -> Option<std::borrow::Cow<'_, str>> {
            url.map(|url| crate::redact::url(url))
        }
        f.debug_struct("Settings")
            .field("app", &self.app)
            .field("store", &self.store)
            .field("redis_url", &url(self.redis_url.as_ref()))
            .field("database_url", &url(self.database_url.as_ref()))
            .field("database_table", &self.database_table)
            .field("fallback", &self.fallback)
            .field("max_circuits", &self.max_circuits)
            .field("defaults", &self.defaults)
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
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
    /// A `FUSE_*` variable that names no setting but is a near miss of
    /// one's (a typo): see [`Settings::with_env_vars`].
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

/// The keys of the file's top level that are not settings of a circuit.
const LAYOUT: [&str; 8] = [
    "app",
    "store",
    "redis_url",
    "database_url",
    "database_table",
    "fallback",
    "max_circuits",
    "breakers",
];

/// The setting whose name `name` (a variable's, in lower case, that names
/// none) is a near miss of, if any: at most one edit away for a name of up
/// to 4 letters, two up to 10, three beyond (letters added, removed,
/// changed or two swapped), the closest first.
fn closest_setting(name: &str) -> Option<&'static str> {
    let settings = LAYOUT
        .iter()
        .filter(|&&key| key != "breakers")
        .chain(Overrides::NAMES);
    settings
        .map(|&setting| (strsim::damerau_levenshtein(name, setting), setting))
        .filter(|&(edits, setting)| {
            let most = match setting.len() {
                0..=4 => 1,
                5..=10 => 2,
                _ => 3,
            };
            edits <= most
        })
        .min()
        .map(|(_, setting)| setting)
}

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
    fallback: Option<Spanned<String>>,
    max_circuits: Option<Spanned<usize>>,
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
        let parse_error = |mut error: toml::de::Error| {
            error.set_input(Some(text));
            SettingsError::Parse {
                path: None,
                message: error.to_string(),
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
        let mut settings = Settings {
            app: layout.app,
            redis_url: layout.redis_url,
            database_url: layout.database_url,
            database_table: layout.database_table,
            max_circuits: layout.max_circuits.as_ref().map(|max| *max.get_ref()),
            defaults: Overrides::deserialize(read(defaults)).map_err(parse_error)?,
            breakers: layout.breakers,
            places,
            ..Settings::default()
        };
        if let Some(store) = &layout.store {
            settings.store =
                Store::parse(store.get_ref()).ok_or_else(|| SettingsError::UnknownStore {
                    store: store.get_ref().clone(),
                    origin: format!("store, {}", place(text, store.span().start)),
                })?;
        }
        if let Some(fallback) = &layout.fallback {
            settings.fallback =
                crate::fallback::Fallback::parse(fallback.get_ref()).ok_or_else(|| {
                    SettingsError::UnknownFallback {
                        fallback: fallback.get_ref().clone(),
                        origin: format!("fallback, {}", place(text, fallback.span().start)),
                    }
                })?;
        }
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
    /// tables). `FUSE_APP`, `FUSE_STORE`, `FUSE_REDIS_URL`,
    /// `FUSE_DATABASE_URL`, `FUSE_DATABASE_TABLE`, `FUSE_FALLBACK`,
    /// `FUSE_MAX_CIRCUITS`, and for every setting of [`Overrides`] its name
    /// in capitals: `FUSE_FAILURE_THRESHOLD`, `FUSE_OPEN_DURATION`
    /// (`"45s"`), `FUSE_COUNTED_HTTP_STATUSES` (comma separated),
    /// `FUSE_COUNT_TIMEOUTS` (`true`/`false`/`1`/`0`), and so on.
    ///
    /// A misspelt variable is refused as a misspelt key of the file is
    /// ([`SettingsError::UnknownVariable`], naming the setting meant): a
    /// `FUSE_` name in capitals that is no setting's but within a few
    /// edits of one (an edit is a letter added, removed, changed, or two
    /// swapped; one edit for a name of up to 4 letters, two up to 10,
    /// three beyond), such as `FUSE_FAILURE_TRESHOLD`. Every other variable
    /// is ignored, since the environment holds other programs' `FUSE_`
    /// names too: the `fuse` command's `FUSE_ADMIN_URL` and
    /// `FUSE_ADMIN_TOKEN`, a test suite's `FUSE_TEST_*`, and any name far
    /// from every setting's, as are names with a lower-case letter.
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
    ///
    /// // A typo is refused, with the setting it meant.
    /// let err = fuse_breaker::Settings::default()
    ///     .with_env_vars([("FUSE_FAILURE_TRESHOLD", "3")])
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("did you mean FUSE_FAILURE_THRESHOLD?"), "{err}");
    /// // Other programs' variables are left alone.
    /// fuse_breaker::Settings::default()
    ///     .with_env_vars([("FUSE_ADMIN_TOKEN", "s3cret"), ("FUSE_TEST_REDIS_URL", "redis://x")])?;
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
            if setting.bytes().any(|b| b.is_ascii_lowercase()) {
                continue;
            }
            let env_error = |reason: String| SettingsError::Env {
                var: var.to_owned(),
                value: value.to_owned(),
                reason,
            };
            let setting = setting.to_ascii_lowercase();
            match setting.as_str() {
                "app" => self.app = Some(value.to_owned()),
                "max_circuits" => {
                    let max = crate::value::Value::from_text(value).map_err(env_error)?;
                    self.max_circuits = Some(max);
                    self.places.remove("registry.max_circuits");
                }
                "store" => {
                    self.store =
                        Store::parse(value).ok_or_else(|| SettingsError::UnknownStore {
                            store: value.to_owned(),
                            origin: var.to_owned(),
                        })?;
                }
                "redis_url" => self.redis_url = Some(value.to_owned()),
                "database_url" => self.database_url = Some(value.to_owned()),
                "database_table" => self.database_table = Some(value.to_owned()),
                "fallback" => {
                    self.fallback = crate::fallback::Fallback::parse(value).ok_or_else(|| {
                        SettingsError::UnknownFallback {
                            fallback: value.to_owned(),
                            origin: var.to_owned(),
                        }
                    })?;
                }
                _ => match self.defaults.set_text(&setting, value) {
                    None => match closest_setting(&setting) {
                        None => continue,
                        Some(closest) => {
                            return Err(SettingsError::UnknownVariable {
                                var: var.to_owned(),
                                closest: format!("FUSE_{}", closest.to_ascii_uppercase()),
                            });
                        }
                    },
                    Some(set) => set.map_err(env_error)?,
                },
            }
            // The value no longer comes from the file.
            self.places.remove(&format!("defaults.{setting}"));
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
        if self.store != Store::Memory {
            return Err(SettingsError::Store {
                reason: format!(
                    "store = {:?} keeps circuits in a shared store: make them with \
                     Settings::shared_registry (features config-file and redis or sql)",
                    self.store.as_str()
                ),
            });
        }
        let mut builder = Registry::builder().defaults(self.config()?);
        if let Some(app) = &self.app {
            builder = builder.app(app.clone());
        }
        if let Some(max) = self.max_circuits {
            builder = builder.max_circuits(max);
        }
        for (name, overrides) in &self.breakers {
            builder = builder.overrides(name.clone(), overrides.clone());
        }
        // Checked above: an override that fails here fails in `check` first;
        // what is left is the registry's own setting.
        builder
            .build()
            .map_err(|source| self.invalid("registry", source))
    }

    /// Validates the defaults and every override once, with the crate's
    /// own validation, so that a bad file is refused when it is read.
    pub(crate) fn check(&self) -> Result<(), SettingsError> {
        // Pieces of keys: no control character (see `Config::key_prefix`).
        let pieces = self.app.iter().map(|app| ("app", "defaults", app.as_str()));
        let names = self
            .breakers
            .keys()
            .map(|name| ("name", "breakers", name.as_str()));
        if let Some((setting, table, piece)) = pieces
            .chain(names)
            .find(|(_, _, piece)| piece.chars().any(char::is_control))
        {
            let source = ConfigError::new(
                setting,
                format!("{piece:?}"),
                "must not contain control characters (a piece of the circuits' keys)".to_owned(),
            );
            return Err(self.invalid(table, source));
        }
        if let Some(max) = self.max_circuits {
            crate::registry::check_max_circuits(max)
                .map_err(|source| self.invalid("registry", source))?;
        }
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
