//! Changing settings through the admin API (SPEC §12): what a request
//! asks ([`Requested`]: its settings and who sends it) and what the answer
//! says ([`SettingsChange`]).

use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ApiError;
use super::config_view::ConfigView;
use crate::config::{Config, Overrides};

/// The header a caller names itself in, for the reconfiguration's event.
pub(super) const CHANGED_BY: &str = "x-fuse-changed-by";

/// The longest name a caller may give itself.
const MAX_CALLER: usize = 64;

/// A settings change the API made, as `PUT /circuits/{key}/settings` and
/// `PUT /names/{name}/settings` answer it.
///
/// ```
/// let change: fuse_breaker::admin::SettingsChange = serde_json::from_str(
///     r#"{"name": "billing", "key": null, "by": "admin (alice)",
///         "changes": [{"setting": "failure_threshold", "from": "8", "to": "3"}],
///         "from": {"failure_threshold": 8, "failure_window_ms": 60000, "open_duration_ms": 30000,
///                  "half_open_probes": 2},
///         "to": {"failure_threshold": 3, "failure_window_ms": 60000, "open_duration_ms": 30000,
///                "half_open_probes": 2}}"#,
/// )?;
/// assert_eq!((change.to.failure_threshold, change.changes[0].to.as_str()), (3, "3"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SettingsChange {
    /// The circuit's name (a registry's name, for a name's change).
    pub name: String,
    /// The circuit's key; `None` for a name's change.
    pub key: Option<String>,
    /// Who changed them, as the reconfiguration's event says:
    /// `admin`, or `admin (NAME)` with the caller's `X-Fuse-Changed-By`.
    pub by: String,
    /// Each setting that changed, in the order of SPEC §2 (none when the
    /// settings were already those).
    pub changes: Vec<SettingChange>,
    /// The settings before.
    pub from: ConfigView,
    /// The settings now.
    pub to: ConfigView,
}

/// One setting a [`SettingsChange`] changed, its values as Rust writes
/// them (`30s`, `Some(2s)`, `Rate`), as the reconfiguration's event does.
///
/// ```
/// let one: fuse_breaker::admin::SettingChange =
///     serde_json::from_str(r#"{"setting": "open_duration", "from": "30s", "to": "10s"}"#)?;
/// assert_eq!(one.setting, "open_duration");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SettingChange {
    /// The setting's name, as in SPEC §2.
    pub setting: String,
    /// Its value before.
    pub from: String,
    /// Its value now.
    pub to: String,
}

impl SettingsChange {
    /// The answer for settings `from` replaced by `to`.
    pub(super) fn new(name: &str, key: Option<&str>, by: &str, from: &Config, to: &Config) -> Self {
        SettingsChange {
            name: name.to_owned(),
            key: key.map(str::to_owned),
            by: by.to_owned(),
            changes: from
                .changes(to)
                .into_iter()
                .map(|(setting, from, to)| SettingChange {
                    setting: setting.to_owned(),
                    from,
                    to,
                })
                .collect(),
            from: ConfigView::of(from),
            to: ConfigView::of(to),
        }
    }
}

/// What a settings request asks: the settings it names, and who sends it.
#[derive(Debug)]
pub(super) struct Requested {
    pub(super) overrides: Overrides,
    /// `admin`, or `admin (NAME)`.
    pub(super) by: String,
}

impl Requested {
    /// Reads a request's headers and JSON body: an object of settings by
    /// name, each value in the text form of the `FUSE_*` variables
    /// (`"30s"`, `"0.5"`, `"rate"`, `"none"`), or as a JSON number,
    /// boolean, array of numbers, or `null` (none).
    pub(super) fn read(headers: &HeaderMap, body: &Value) -> Result<Self, ApiError> {
        let by = caller(headers)?;
        let Value::Object(settings) = body else {
            return Err(ApiError::bad_request(
                "the body is a JSON object of settings by name, such as {\"failure_threshold\": 3}",
            ));
        };
        if settings.is_empty() {
            return Err(ApiError::bad_request("the body names no setting"));
        }
        let mut overrides = Overrides::default();
        for (name, value) in settings {
            let text = text(name, value)?;
            match overrides.set_text(name, &text) {
                None => {
                    return Err(ApiError::invalid_setting(format!(
                        "no setting is called {name:?}; the settings are {}",
                        Overrides::NAMES.join(", ")
                    )));
                }
                Some(Err(why)) => {
                    return Err(ApiError::invalid_setting(format!(
                        "invalid {name} = {text:?}: {why}"
                    )));
                }
                Some(Ok(())) => {}
            }
        }
        Ok(Requested { overrides, by })
    }
}

/// A setting's value as text, as its `FUSE_*` variable would hold it.
fn text(name: &str, value: &Value) -> Result<String, ApiError> {
    let scalar = |value: &Value| match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(on) => Some(on.to_string()),
        Value::Null => Some("none".to_owned()),
        Value::Array(_) | Value::Object(_) => None,
    };
    let refused = || {
        ApiError::invalid_setting(format!(
            "invalid {name}: a setting is a string, a number, a boolean, null or a list of numbers"
        ))
    };
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Number(number) => Ok(number.to_string()),
                _ => Err(refused()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|items| items.join(",")),
        other => scalar(other).ok_or_else(refused),
    }
}

/// Who the request says it comes from: `admin`, or `admin (NAME)` with
/// `X-Fuse-Changed-By: NAME` (printable ASCII, at most 64 bytes).
fn caller(headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(value) = headers.get(CHANGED_BY) else {
        return Ok("admin".to_owned());
    };
    let name = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|name| {
            !name.is_empty()
                && name.len() <= MAX_CALLER
                && name.bytes().all(|b| (b' '..=b'~').contains(&b))
        })
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "X-Fuse-Changed-By is 1 to {MAX_CALLER} printable ASCII characters"
            ))
        })?;
    Ok(format!("admin ({name})"))
}

#[cfg(test)]
mod tests;
