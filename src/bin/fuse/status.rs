//! `fuse status` on a store: one circuit, or every key under a prefix,
//! listed page by page ([`Store::keys`]) and read one by one. A key that
//! holds no circuit (an unreadable payload, a Redis value that is not a
//! string, a key that is not UTF-8, a key under which the store reads no
//! circuit) is listed as `unreadable`, and why is said on standard error;
//! the others are listed all the same.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::config::Factor;
use fuse_breaker::store::{Held, Store, inspect};
use fuse_breaker::{Config, Fuse, Grading, Snapshot, State};

use crate::admission::Admission;
use crate::output::{Output, Quorum, Row, failed, written};
use crate::rate::Window;
use crate::text::{hex, printable, printable_bytes};

/// How many keys one page of the store's listing asks for.
const PAGE: usize = 1000;

/// One circuit: the key, its snapshot at the store's `now`, and what its
/// payload holds besides.
struct Line {
    key: String,
    snapshot: Snapshot,
    held: Held,
    now: Duration,
}

impl Line {
    /// How long this opening lasts (open only; the open duration stands in
    /// should the snapshot not say).
    fn open_for(&self, config: &Config) -> Option<Duration> {
        (self.snapshot.state == State::Open)
            .then(|| self.snapshot.open_for.unwrap_or(config.open_duration()))
    }

    /// When the opening ends and the next call probes, on the store's
    /// time (open only).
    fn retry_at(&self, config: &Config) -> Option<Duration> {
        let opened_at = self.snapshot.opened_at?;
        Some(opened_at.saturating_add(self.open_for(config)?))
    }

    /// How long until the next call probes (open only; 0 once due).
    fn half_open_in(&self, config: &Config) -> Option<Duration> {
        Some(self.retry_at(config)?.saturating_sub(self.now))
    }

    /// The failures the row shows: the window's while closed, those that
    /// opened it while open (milon/fuse keeps its opening's).
    fn failures(&self) -> &[Duration] {
        if self.snapshot.state == State::Open {
            &self.held.opening_failures
        } else {
            &self.snapshot.failures
        }
    }

    fn row(&self, config: &Config) -> Row {
        let rate = Window::of_snapshot(&self.snapshot, config);
        Row {
            key: self.key.clone(),
            state: self.snapshot.state.as_str().to_owned(),
            failures: rate
                .as_ref()
                .map_or(self.failures().len(), |rate| failed(rate.failed)),
            probes: (self.snapshot.half_open_inflight, config.half_open_probes()),
            openings: self.snapshot.openings,
            open_for: self.open_for(config),
            half_open_in: self.half_open_in(config),
            assumed: self.held.open_for_assumed,
            rate,
            quorum: Quorum::of(self.snapshot.reporters, config.min_reporters()),
            admission: Admission::of_snapshot(&self.snapshot),
        }
    }

    /// The circuit as JSON: milon/fuse's fields, its opening (SPEC §10),
    /// the share of calls it admits (SPEC §11), under the `rate` policy its
    /// window and rule beside them, and with a ramp-up or throttling their
    /// settings.
    fn json(&self, config: &Config) -> serde_json::Value {
        let mut json = serde_json::json!({
            "key": self.key,
            "state": self.snapshot.state.as_str(),
            "failures": self.failures().len(),
            "failures_at": self.failures().iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
            "half_open_inflight": self.snapshot.half_open_inflight,
            "half_open_successes": self.snapshot.half_open_successes,
            "half_open_probes": config.half_open_probes(),
            "opened_at": self.snapshot.opened_at.map(|at| at.as_secs_f64()),
            "half_open_in_ms": self.half_open_in(config).map(|left| left.as_millis()),
            "openings": self.snapshot.openings,
            "open_for_ms": self.open_for(config).map(|open_for| open_for.as_millis()),
            "open_for_assumed": self.held.open_for_assumed,
            "retry_at": self.retry_at(config).map(|at| at.as_secs_f64()),
            "policy": config.policy().as_str(),
            "reporters": self.snapshot.reporters,
            "min_reporters": config.min_reporters(),
            "admission": self.snapshot.admission.to_f64(),
            "graded_by": self.snapshot.graded_by.map(Grading::as_str),
            "requests": self.snapshot.requests,
            "accepts": self.snapshot.accepts,
        });
        if let (true, Some(fields)) = (graded(config), json.as_object_mut()) {
            let settings = serde_json::json!({
                "ramp_up_ms": config.ramp_up().map(|ramp| ramp.as_millis()),
                "ramp_up_floor": config.ramp_up_floor(),
                "throttle_k": config.throttle_k().map(Factor::to_f64),
                "max_throttle": config.max_throttle(),
            });
            fields.extend(
                settings
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, value)| (name.clone(), value.clone())),
            );
        }
        if let (Some(rate), Some(fields)) = (
            Window::of_snapshot(&self.snapshot, config),
            json.as_object_mut(),
        ) {
            fields.extend(
                rate.json()
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, value)| (name.clone(), value.clone())),
            );
        }
        json
    }

    fn show(&self, config: &Config, out: &mut Output) -> Result<(), String> {
        out.circuit(&self.row(config), || self.json(config))
            .map_err(|err| written(&err))
    }
}

/// Whether a circuit under `config` grades its admission (SPEC §11).
fn graded(config: &Config) -> bool {
    config.ramp_up().is_some() || config.throttle_k().is_some()
}

/// The circuit under `key`: an absent key is a fresh closed circuit, an
/// unreadable one an error.
pub(crate) async fn one(
    store: &Arc<dyn Store>,
    config: &Config,
    key: String,
    out: &mut Output,
) -> Result<(), String> {
    let now = store.load(&key).await.map_err(|err| err.to_string())?.now;
    let (snapshot, held) = match inspect(&**store, &key, config)
        .await
        .map_err(|err| err.to_string())?
    {
        Some(read) => read,
        // What an absent key reads as: a fresh closed circuit.
        None => (
            Fuse::new("absent", config.clone()).snapshot(),
            Held::default(),
        ),
    };
    Line {
        key,
        snapshot,
        held,
        now,
    }
    .show(config, out)
}

/// Every key under `prefix`, sorted, each circuit read in turn.
pub(crate) async fn all(
    store: &Arc<dyn Store>,
    config: &Config,
    prefix: &str,
    out: &mut Output,
) -> Result<(), String> {
    let mut keys = listed(&**store, prefix).await?;
    keys.sort_unstable();
    keys.dedup();
    let now = store
        .load("fuse-cli:clock")
        .await
        .map_err(|err| err.to_string())?
        .now;
    for key in keys {
        let key = match String::from_utf8(key) {
            Ok(key) => key,
            Err(err) => {
                let bytes = err.into_bytes();
                let shown = printable_bytes(&bytes);
                let json = serde_json::json!({
                    "key": String::from_utf8_lossy(&bytes),
                    "key_hex": hex(&bytes),
                });
                let error = format!(
                    "store {}: the key {shown} is not UTF-8: no circuit has it",
                    printable(store.name())
                );
                out.unreadable(&shown, json, &error)
                    .map_err(|err| written(&err))?;
                continue;
            }
        };
        if key.ends_with(fuse_breaker::store::THROTTLE_SUFFIX) {
            // A circuit's fleet throttle window, not a circuit.
            continue;
        }
        match inspect(&**store, &key, config).await {
            Ok(Some((snapshot, held))) => Line {
                key,
                snapshot,
                held,
                now,
            }
            .show(config, out)?,
            // Expired since it was listed.
            Ok(None) => {}
            // An answer about this key (a payload that is no circuit, a
            // key no circuit can be read under): the others are listed
            // all the same. An outage stops the listing.
            Err(err) if !err.is_unreachable() => {
                let json = serde_json::json!({ "key": key });
                out.unreadable(&printable(&key), json, &printable(&err.to_string()))
                    .map_err(|err| written(&err))?;
            }
            Err(err) => return Err(err.to_string()),
        }
    }
    Ok(())
}

/// The keys under `prefix`, as bytes (not all of them need be UTF-8),
/// every page of them.
async fn listed(store: &dyn Store, prefix: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut keys = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store
            .keys(prefix, after.as_deref(), PAGE)
            .await
            .map_err(|err| err.to_string())?;
        keys.extend(page.keys.into_iter().map(String::into_bytes));
        keys.extend(page.not_utf8);
        match page.next {
            None => return Ok(keys),
            Some(next) if after.as_deref() == Some(next.as_str()) => {
                return Err(format!(
                    "store {}: its key listing gave the cursor {next:?} twice in a row",
                    store.name()
                ));
            }
            Some(next) => after = Some(next),
        }
    }
}
