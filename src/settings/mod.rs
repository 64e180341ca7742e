//! [`Settings`]: a registry's configuration from a TOML file and the
//! environment (feature `config-file`).
//!
//! ```toml
//! app = "shop"                 # optional piece of every key
//! store = "memory"             # where circuits live: `memory`, `redis` or `database`
//! # redis_url = "redis://127.0.0.1:6379"   # with store = "redis"; or a cluster,
//! #   "redis+cluster://10.0.0.1:6379,10.0.0.2:6379", or Sentinel's primary,
//! #   "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/name"
//! # database_url = "postgres://127.0.0.1/shop"   # with store = "database"
//! # database_table = "fuse_circuits"
//! # payload = "laravel"      # with store = "redis": `json` (default), `php`, or
//! #   `laravel` (milon/fuse's default store: PHP's serialize() under Laravel's
//! #   cache key; redis_url names Laravel's cache database, "redis://host:6379/1")
//! # payload_read = "auto"    # `written` (default), or `auto`: JSON and PHP alike
//! # laravel_redis_prefix = "laravel_database_"   # REDIS_PREFIX of the Laravel app
//! # laravel_cache_prefix = "laravel_cache_"      # CACHE_PREFIX of the Laravel app
//! # fallback = "local"                     # while the store does not answer
//! max_circuits = 10000         # the most circuits the registry holds
//! # metric_names = "resilience4j"   # feature metrics: the series' names, `fuse` (default)
//! #   or `resilience4j`; the process's, installed when the registry is built
//! key_prefix = "fuse"
//! failure_threshold = 8
//! failure_window = "60s"       # durations with a unit: "500ms", "1m30s", "2h"
//! open_duration = "30s"
//! half_open_probes = 2
//! counted_http_statuses = [502, 503, 504]
//! count_timeouts = true
//! count_connection_errors = true
//! count_http_500 = false
//! policy = "count"             # what opens a closed circuit: `count` or `rate`
//! failure_rate = 50            # rate: percent of failed calls that opens, 1..=100
//! minimum_calls = 20           # rate: calls in the window before a rate is judged
//! window_buckets = 10          # rate: buckets the window is kept in, 1..=60
//! slow_call_duration = "none"  # rate: a call this long is slow ("2s"), or "none"
//! slow_call_rate = 100         # rate: percent of slow calls that opens, 1..=100
//! min_reporters = 1            # shared: processes whose failures it takes to open, 1..=64
//!
//! [breakers.billing]           # overrides for the circuits named `billing`
//! failure_threshold = 3
//! open_duration = "15s"
//! ```

use std::collections::BTreeMap;
use std::fmt;

use crate::backing::Backing;
use crate::config::Overrides;
use crate::config::{Config, ConfigError};
use crate::registry::Registry;

mod env;
mod error;
mod file;
mod kind;

pub use error::SettingsError;
use file::Place;
#[allow(deprecated)]
pub use kind::Store;
pub use kind::StoreKind;

/// The configuration of a [`Registry`]: defaults, app, store and per-name
/// overrides, read from a TOML file and overridden by `FUSE_*` environment
/// variables.
///
/// ```
/// use fuse_breaker::settings::Settings;
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
    pub store: StoreKind,
    /// The Redis server of `store = "redis"` (`redis_url`,
    /// `FUSE_REDIS_URL`): one server, a cluster or the primary Sentinel
    /// watches (the forms of
    /// [`RedisStore::open`](crate::store::RedisStore::open)).
    pub redis_url: Option<String>,
    /// The database of `store = "database"` (`database_url`,
    /// `FUSE_DATABASE_URL`): `postgres://...` or `sqlite:...`.
    pub database_url: Option<String>,
    /// The table of `store = "database"` (`database_table`,
    /// `FUSE_DATABASE_TABLE`; default milon/fuse's `fuse_circuits`).
    pub database_table: Option<String>,
    /// What `store = "redis"` writes, and where (`payload`,
    /// `FUSE_PAYLOAD`: `json`, the default; `php`; `laravel`, Laravel's
    /// cache, milon/fuse's default store). A database keeps JSON, as
    /// milon/fuse's `DatabaseStore` writes it: anything else with
    /// `store = "database"` is an error. The Redis URL's `?payload=`
    /// wins over it.
    pub payload: Option<crate::config::PayloadKind>,
    /// What `store = "redis"` reads (`payload_read`, `FUSE_PAYLOAD_READ`:
    /// `written`, the default, or `auto`: JSON and PHP alike). The Redis
    /// URL's `?payload_read=` wins over it.
    pub payload_read: Option<crate::config::PayloadRead>,
    /// The Redis connection's prefix of Laravel's cache keys, with
    /// `payload = "laravel"` (`laravel_redis_prefix`,
    /// `FUSE_LARAVEL_REDIS_PREFIX`; default `laravel_database_`). The
    /// Redis URL's `?laravel_redis_prefix=` wins over it.
    pub laravel_redis_prefix: Option<String>,
    /// The cache's prefix of Laravel's cache keys, with
    /// `payload = "laravel"` (`laravel_cache_prefix`,
    /// `FUSE_LARAVEL_CACHE_PREFIX`; default `laravel_cache_`). The Redis
    /// URL's `?laravel_cache_prefix=` wins over it.
    pub laravel_cache_prefix: Option<String>,
    /// What decides for a shared circuit while its store does not answer
    /// (`fallback`, `FUSE_FALLBACK`: `local`, `allow` or `reject`).
    pub fallback: crate::fallback::Fallback,
    /// The most circuits the registry holds (`max_circuits`,
    /// `FUSE_MAX_CIRCUITS`; see
    /// [`RegistryBuilder::max_circuits`](crate::RegistryBuilder::max_circuits)).
    pub max_circuits: Option<usize>,
    /// The names the `metrics` feature gives its series (`metric_names`,
    /// `FUSE_METRIC_NAMES`: `fuse` or `resilience4j`; see
    /// `MetricNames`): the process's, installed when a registry is built
    /// from these settings, which fails, naming the setting, if the
    /// process already uses the other names. Without the `metrics`
    /// feature, a file or variable that sets it is refused.
    pub metric_names: Option<String>,
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
            .field("payload", &self.payload)
            .field("payload_read", &self.payload_read)
            .field("laravel_redis_prefix", &self.laravel_redis_prefix)
            .field("laravel_cache_prefix", &self.laravel_cache_prefix)
            .field("fallback", &self.fallback)
            .field("max_circuits", &self.max_circuits)
            .field("metric_names", &self.metric_names)
            .field("defaults", &self.defaults)
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// The defaults every circuit starts from.
    ///
    /// ```
    /// let settings = fuse_breaker::settings::Settings::from_toml("failure_threshold = 3")?;
    /// assert_eq!(settings.config()?.failure_threshold(), 3);
    /// # Ok::<(), fuse_breaker::settings::SettingsError>(())
    /// ```
    pub fn config(&self) -> Result<Config, SettingsError> {
        self.defaults
            .apply(&Config::default())
            .map_err(|source| self.invalid("defaults", source))
    }

    /// A registry with these settings.
    ///
    /// ```
    /// let registry = fuse_breaker::settings::Settings::from_toml("app = \"shop\"")?.registry()?;
    /// assert_eq!(registry.get("billing").key(), "fuse:shop:billing");
    /// # Ok::<(), fuse_breaker::settings::SettingsError>(())
    /// ```
    pub fn registry(&self) -> Result<Registry, SettingsError> {
        self.check()?;
        if self.store != StoreKind::Memory {
            return Err(SettingsError::Store {
                reason: format!(
                    "store = {:?} keeps circuits in a shared store: make them with \
                     Settings::shared_registry (features config-file and redis or sql)",
                    self.store.as_str()
                ),
            });
        }
        // Checked above: an override that fails here fails in `check` first;
        // what is left is the registry's own setting.
        self.registry_builder()?
            .build()
            .map_err(|source| self.invalid("registry", source))
    }

    /// Puts these settings in force in `registry`, which runs (a reload,
    /// SPEC §12): its defaults and per-name overrides are replaced as
    /// [`Registry::reload`] does, its circuits keeping their state. The
    /// settings that name circuits or size the registry (`app`,
    /// `max_circuits`, `store`), and the process's `metric_names`, cannot
    /// change on a running registry: a file
    /// that changes them is refused, naming the setting, and nothing
    /// changes.
    ///
    /// A registry of shared circuits
    /// (`Settings::shared_registry`, features `redis` or `sql`) reloads
    /// too, in this process alone (nothing is written to the store): its
    /// file keeps a shared `store` and the registry's `fallback` (changed,
    /// either is refused by name). The store's connection (`redis_url`,
    /// `database_url`, `database_table`, the payload and Laravel's
    /// prefixes) is made once, when the registry is built: a reload does
    /// not read it again.
    ///
    /// ```
    /// use fuse_breaker::settings::Settings;
    ///
    /// let registry = Settings::from_toml("failure_threshold = 3")?.registry()?;
    /// let billing = registry.get("billing");
    /// Settings::from_toml("failure_threshold = 5\n[breakers.billing]\nopen_duration = \"1m\"")?
    ///     .reload(&registry)?;
    /// assert_eq!(billing.config().failure_threshold(), 5);
    /// assert_eq!(billing.config().open_duration().as_secs(), 60);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reload<B: Backing>(&self, registry: &Registry<B>) -> Result<(), SettingsError> {
        self.check()?;
        let fixed = |setting: &'static str, value: String| {
            let rule = "cannot change on a running registry (restart to change it)".to_owned();
            Err(self.invalid("defaults", ConfigError::new(setting, value, rule)))
        };
        if self.app.as_deref() != registry.app() {
            return fixed("app", format!("{:?}", self.app));
        }
        if let Some(max) = self.max_circuits
            && max != registry.capacity()
        {
            return fixed("max_circuits", max.to_string());
        }
        #[cfg(feature = "metrics")]
        if let Some(names) = self.metric_names()?
            && names != crate::MetricNames::current()
        {
            return fixed("metric_names", names.to_string());
        }
        match registry.store_fallback() {
            None if self.store != StoreKind::Memory => {
                return fixed("store", self.store.as_str().to_owned());
            }
            Some(_) if self.store == StoreKind::Memory => {
                return fixed("store", self.store.as_str().to_owned());
            }
            Some(fallback) if fallback != self.fallback => {
                return fixed("fallback", self.fallback.as_str().to_owned());
            }
            _ => {}
        }
        let overrides: Vec<(String, Overrides)> = self
            .breakers
            .iter()
            .map(|(name, overrides)| (name.clone(), overrides.clone()))
            .collect();
        registry
            .reload(self.config()?, &overrides)
            .map_err(|source| self.invalid("breakers", source))
    }

    pub(crate) fn registry_builder(&self) -> Result<crate::RegistryBuilder, SettingsError> {
        #[cfg(feature = "metrics")]
        if let Some(names) = self.metric_names()? {
            names.install().map_err(|installed| {
                let rule = format!(
                    "this process already names its metrics {installed:?} (one scheme per \
                     process, chosen before its first circuit)"
                );
                self.invalid(
                    "registry",
                    ConfigError::new("metric_names", names.to_string(), rule),
                )
            })?;
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
        Ok(builder)
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
        self.check_payload()?;
        #[cfg(feature = "metrics")]
        self.metric_names()?;
        #[cfg(not(feature = "metrics"))]
        if let Some(names) = &self.metric_names {
            let rule = "needs the `metrics` feature".to_owned();
            return Err(self.invalid(
                "registry",
                ConfigError::new("metric_names", names.clone(), rule),
            ));
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

    /// The payload settings: Laravel's prefixes with no control
    /// character, and nothing but JSON for a database.
    fn check_payload(&self) -> Result<(), SettingsError> {
        for (setting, prefix) in [
            ("laravel_redis_prefix", &self.laravel_redis_prefix),
            ("laravel_cache_prefix", &self.laravel_cache_prefix),
        ] {
            if let Some(prefix) = prefix.as_ref().filter(|p| p.chars().any(char::is_control)) {
                let source = ConfigError::new(
                    setting,
                    format!("{prefix:?}"),
                    "must not contain control characters (a piece of Laravel's cache keys)"
                        .to_owned(),
                );
                return Err(self.invalid("store", source));
            }
        }
        if self.store != StoreKind::Database {
            return Ok(());
        }
        let payload = self
            .payload
            .filter(|&payload| payload != crate::config::PayloadKind::Json)
            .map(|payload| format!("payload = {:?}", payload.as_str()));
        let read = (self.payload_read == Some(crate::config::PayloadRead::Auto))
            .then(|| "payload_read = \"auto\"".to_owned());
        let prefix = [
            ("laravel_redis_prefix", &self.laravel_redis_prefix),
            ("laravel_cache_prefix", &self.laravel_cache_prefix),
        ]
        .into_iter()
        .find_map(|(setting, value)| value.as_ref().map(|_| setting.to_owned()));
        let Some(refused) = payload.or(read).or(prefix) else {
            return Ok(());
        };
        let at = |setting: &str| {
            let name = setting.split([' ', '=']).next().unwrap_or(setting);
            self.places
                .get(&format!("store.{name}"))
                .map_or_else(String::new, |place| format!(" ({place})"))
        };
        Err(SettingsError::Store {
            reason: format!(
                "{refused}{} needs store = \"redis\", and the store is \"database\"{}: a \
                 database keeps JSON, as milon/fuse's DatabaseStore writes it (PHP payloads \
                 and Laravel's cache keys live on Redis)",
                at(&refused),
                at("store"),
            ),
        })
    }

    /// `source`, refused in `table`, with where the file wrote it.
    /// The naming scheme `metric_names` names, if it is set; the error
    /// names the setting and its value.
    #[cfg(feature = "metrics")]
    fn metric_names(&self) -> Result<Option<crate::MetricNames>, SettingsError> {
        self.metric_names
            .as_deref()
            .map(|text| {
                text.parse().map_err(|reason| {
                    let source = ConfigError::new("metric_names", text.to_owned(), reason);
                    self.invalid("registry", source)
                })
            })
            .transpose()
    }

    pub(crate) fn invalid(&self, table: &str, source: ConfigError) -> SettingsError {
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
