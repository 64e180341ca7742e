//! `fuse set`: a running service's settings changed through its admin API
//! (SPEC §12). Settings are each process's own, so the command needs the
//! service's API (`--url`): a store holds no settings.
//!
//! Each `SETTING=VALUE` goes in the request's JSON object as a string, in
//! the text form the `FUSE_*` variables take (`30s`, `0.5`, `rate`,
//! `502,503`, `none`); the service checks the names and the values. The
//! request says who sends it (`X-Fuse-Changed-By: fuse set by USER`), which
//! the service's reconfiguration event records.

use std::io::{self, Write};

use fuse_breaker::admin::SettingsChange;

use crate::text::{json_safe, printable};

/// The refusal of `fuse set` without an admin API.
pub(crate) const NEEDS_URL: &str = "fuse set changes a running service's settings, and those \
     are each process's own (a store holds none): give the service's admin API with --url URL \
     (or FUSE_ADMIN_URL) and its token";

/// The longest `X-Fuse-Changed-By` the admin API takes.
const MAX_CALLER: usize = 64;

/// What `fuse set` changes: one circuit, by key, or the registry's
/// settings of a name (every circuit of the name, and those made later).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target<'a> {
    Circuit(&'a str),
    Name(&'a str),
}

impl Target<'_> {
    /// The API's path to the target's settings, segment by segment (each
    /// escaped as one).
    pub(crate) fn segments(&self) -> [&str; 3] {
        match *self {
            Target::Circuit(key) => ["circuits", key, "settings"],
            Target::Name(name) => ["names", name, "settings"],
        }
    }
}

/// One `SETTING=VALUE` argument (clap's parser): the setting and its text.
pub(crate) fn setting(arg: &str) -> Result<(String, String), String> {
    let Some((setting, value)) = arg.split_once('=') else {
        return Err(format!(
            "{:?} is not SETTING=VALUE (failure_threshold=3, open_duration=30s)",
            printable(arg)
        ));
    };
    let setting = setting.trim();
    if setting.is_empty() {
        return Err(format!("{:?} names no setting before '='", printable(arg)));
    }
    Ok((setting.to_owned(), value.to_owned()))
}

/// The request's body: each setting's text by name. A setting given twice
/// is refused (which one was meant?).
pub(crate) fn body(settings: &[(String, String)]) -> Result<serde_json::Value, String> {
    let mut body = serde_json::Map::new();
    for (setting, value) in settings {
        if body
            .insert(setting.clone(), serde_json::Value::String(value.clone()))
            .is_some()
        {
            return Err(format!(
                "{} is given more than once: give each setting once",
                printable(setting)
            ));
        }
    }
    Ok(serde_json::Value::Object(body))
}

/// Who the change comes from, as `X-Fuse-Changed-By` says it: `fuse set`,
/// and `by USER` with the user's name (`$USER`) made printable ASCII
/// (any other character a `?`) and cut to the API's 64 bytes.
pub(crate) fn changed_by(user: Option<&str>) -> String {
    let mut by = "fuse set".to_owned();
    let user: String = user
        .unwrap_or_default()
        .chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect();
    let user = user.trim();
    if !user.is_empty() {
        let room = MAX_CALLER - by.len() - " by ".len();
        // ASCII only: any byte is a character's end.
        let user = &user[..user.len().min(room)];
        by.push_str(" by ");
        by.push_str(user.trim_end());
    }
    by
}

/// Prints `change`: the API's object as one JSON line, or a table of
/// each changed setting, its value before and now.
pub(crate) fn print(change: &SettingsChange, json: bool) -> io::Result<()> {
    let mut out = io::stdout().lock();
    if json {
        let text = serde_json::to_string(change).map_err(io::Error::other)?;
        writeln!(out, "{}", json_safe(&text))?;
        return out.flush();
    }
    write_table(&mut out, change)?;
    out.flush()
}

/// The table of `change`'s settings; a line saying nothing changed when
/// the settings were already those.
pub(crate) fn write_table(out: &mut impl Write, change: &SettingsChange) -> io::Result<()> {
    if change.changes.is_empty() {
        let what = match &change.key {
            Some(key) => printable(key).into_owned(),
            None => format!("the name {}", printable(&change.name)),
        };
        return writeln!(out, "no setting changed: {what} already had these settings");
    }
    writeln!(out, "{:<24} {:<20} TO", "SETTING", "FROM")?;
    for one in &change.changes {
        writeln!(
            out,
            "{:<24} {:<20} {}",
            printable(&one.setting),
            printable(&one.from),
            printable(&one.to)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
