//! Reading the `FUSE_*` environment variables onto [`Settings`].

use super::Settings;
use super::error::{SettingsError, choice};
use super::file::{LAYOUT, Place};
use crate::config::Overrides;

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

impl Settings {
    /// These settings with the `FUSE_*` variables of the process
    /// environment applied (see [`with_env_vars`](Self::with_env_vars)).
    ///
    /// ```
    /// let settings = fuse_breaker::settings::Settings::default().with_env()?;
    /// # Ok::<(), fuse_breaker::settings::SettingsError>(())
    /// ```
    pub fn with_env(self) -> Result<Settings, SettingsError> {
        self.with_env_vars(std::env::vars())
    }

    /// These settings with the `FUSE_*` variables among `vars` applied:
    /// they override the file's defaults (never its `[breakers.NAME]`
    /// tables). `FUSE_APP`, `FUSE_STORE`, `FUSE_REDIS_URL`,
    /// `FUSE_DATABASE_URL`, `FUSE_DATABASE_TABLE`, `FUSE_PAYLOAD`,
    /// `FUSE_PAYLOAD_READ`, `FUSE_LARAVEL_REDIS_PREFIX`,
    /// `FUSE_LARAVEL_CACHE_PREFIX`, `FUSE_FALLBACK`,
    /// `FUSE_MAX_CIRCUITS`, and for every setting of [`Overrides`] its name
    /// in capitals: `FUSE_FAILURE_THRESHOLD`, `FUSE_OPEN_DURATION`
    /// (`"45s"`), `FUSE_COUNTED_HTTP_STATUSES` (comma separated),
    /// `FUSE_COUNT_TIMEOUTS` (`true`/`false`/`1`/`0`), `FUSE_POLICY`
    /// (`count`/`rate`), `FUSE_SLOW_CALL_DURATION` (`"2s"`, or `none`),
    /// and so on. A value refused once applied names the variable that set
    /// it (`invalid failure_rate = 0: ... (in defaults, from
    /// FUSE_FAILURE_RATE)`).
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
    /// let settings = fuse_breaker::settings::Settings::default()
    ///     .with_env_vars([("FUSE_OPEN_DURATION", "45s"), ("FUSE_APP", "shop")])?;
    /// assert_eq!(settings.app.as_deref(), Some("shop"));
    /// assert_eq!(settings.defaults.open_duration, Some(std::time::Duration::from_secs(45)));
    ///
    /// let err = fuse_breaker::settings::Settings::default()
    ///     .with_env_vars([("FUSE_FAILURE_THRESHOLD", "many")])
    ///     .unwrap_err();
    /// assert!(err.to_string().starts_with("invalid FUSE_FAILURE_THRESHOLD = \"many\""));
    ///
    /// let settings = fuse_breaker::settings::Settings::default()
    ///     .with_env_vars([("FUSE_POLICY", "rate"), ("FUSE_SLOW_CALL_DURATION", "2s")])?;
    /// assert_eq!(settings.config()?.policy(), fuse_breaker::config::Policy::Rate);
    /// let err = fuse_breaker::settings::Settings::default()
    ///     .with_env_vars([("FUSE_FAILURE_RATE", "0")])
    ///     .unwrap_err();
    /// assert!(err.to_string().ends_with("(in defaults, from FUSE_FAILURE_RATE)"), "{err}");
    ///
    /// // A typo is refused, with the setting it meant.
    /// let err = fuse_breaker::settings::Settings::default()
    ///     .with_env_vars([("FUSE_FAILURE_TRESHOLD", "3")])
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("did you mean FUSE_FAILURE_THRESHOLD?"), "{err}");
    /// // Other programs' variables are left alone.
    /// fuse_breaker::settings::Settings::default()
    ///     .with_env_vars([("FUSE_ADMIN_TOKEN", "s3cret"), ("FUSE_TEST_REDIS_URL", "redis://x")])?;
    /// # Ok::<(), fuse_breaker::settings::SettingsError>(())
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
                    self.places.insert(
                        "registry.max_circuits".to_owned(),
                        Place::Var(var.to_owned()),
                    );
                }
                "metric_names" => {
                    self.metric_names = Some(value.to_owned());
                    self.places.insert(
                        "registry.metric_names".to_owned(),
                        Place::Var(var.to_owned()),
                    );
                }
                "store" => {
                    self.places
                        .insert("store.store".to_owned(), Place::Var(var.to_owned()));
                    self.store = choice(value, var)?;
                }
                "redis_url" => self.redis_url = Some(value.to_owned()),
                "database_url" => self.database_url = Some(value.to_owned()),
                "database_table" => self.database_table = Some(value.to_owned()),
                "payload" => {
                    self.payload = Some(choice(value, var)?);
                    self.places
                        .insert("store.payload".to_owned(), Place::Var(var.to_owned()));
                }
                "payload_read" => {
                    self.payload_read = Some(choice(value, var)?);
                    self.places
                        .insert("store.payload_read".to_owned(), Place::Var(var.to_owned()));
                }
                "laravel_redis_prefix" | "laravel_cache_prefix" => {
                    let prefix = Some(value.to_owned());
                    if setting == "laravel_redis_prefix" {
                        self.laravel_redis_prefix = prefix;
                    } else {
                        self.laravel_cache_prefix = prefix;
                    }
                    self.places
                        .insert(format!("store.{setting}"), Place::Var(var.to_owned()));
                }
                "fallback" => {
                    self.fallback = choice(value, var)?;
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
            // The value no longer comes from the file: an error names the
            // variable instead.
            self.places
                .insert(format!("defaults.{setting}"), Place::Var(var.to_owned()));
        }
        self.check()?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests;
