//! `fuse`: see and steer the shared circuits of a store (feature `cli`).
//!
//! ```text
//! fuse (--redis URL [--payload json|php|laravel] [--payload-read written|auto]
//!       [--laravel-redis-prefix PREFIX] [--laravel-cache-prefix PREFIX]
//!       | --database-url URL [--table TABLE] | --url URL [--token TOKEN])
//!      [--app APP] [--prefix PREFIX] status [NAME[:OPERATION]] [--json]
//! fuse (... as above) [--app APP] [--prefix PREFIX] open|close|reset NAME[:OPERATION]
//! fuse --url URL [--token TOKEN] [--app APP] [--prefix PREFIX]
//!      set [--name] NAME[:OPERATION] SETTING=VALUE... [--json]
//! ```
//!
//! With `--url` (or `FUSE_ADMIN_URL`) the command talks to a service's
//! admin API (feature `admin`) where the application nested it, with the
//! admin token from `--token` or `FUSE_ADMIN_TOKEN`; `--json` then prints
//! the API's own objects.
//!
//! `set` changes a running service's settings in place (SPEC §12): one
//! circuit's (`PUT /circuits/{key}/settings`), or with `--name` the
//! registry's settings of a name, every circuit of the name and those
//! made later (`PUT /names/{name}/settings`). Each value is the text a
//! `FUSE_*` variable takes (`failure_threshold=3 open_duration=30s
//! counted_http_statuses=502,503 slow_call_duration=none`); the service
//! checks them and refuses the change whole, naming the setting. It
//! prints each changed setting with its value before and now (`--json`:
//! the API's answer), and tells the service the change comes from `fuse
//! set by $USER`. Settings are each process's own, so `set` needs
//! `--url`: a store holds none.
//!
//! The circuits' configuration (failure window, probes, open duration) is
//! read from the `FUSE_*` variables, as the services read it; the Redis
//! URL from `--redis` or `FUSE_REDIS_URL`, the database's from
//! `--database-url` or `FUSE_DATABASE_URL` (PostgreSQL or SQLite), its
//! table from `--table` or `FUSE_DATABASE_TABLE`. These options may come
//! before the command or after it (`fuse status billing --redis URL`).
//!
//! A fleet that shares circuits with a Laravel application through
//! milon/fuse's default store (Laravel's cache) gives `--payload laravel`
//! (`FUSE_PAYLOAD`) and, when its application's prefixes are not
//! Laravel's defaults, `--laravel-redis-prefix` and
//! `--laravel-cache-prefix` (`FUSE_LARAVEL_REDIS_PREFIX`,
//! `FUSE_LARAVEL_CACHE_PREFIX`), with `--redis` naming Laravel's cache
//! database (`redis://host:6379/1`); `--payload php` keeps PHP's
//! `serialize()` under the circuits' own keys, and `--payload-read auto`
//! (`FUSE_PAYLOAD_READ`) reads JSON and PHP alike. The Redis URL's
//! parameters of the same names (`?payload=laravel&...`) win over them.
//! Every command then works on the circuits' keys (`fuse:billing`), and
//! the store on Laravel's (`laravel_database_laravel_cache_fuse:billing`).
//! With `--url` the service's own settings say all of this, and these
//! options are not used.
//!
//! An open circuit's line says which opening in a row it is (OPENING,
//! `#3`: the third, after two failed probes), how long it lasts (OPEN
//! FOR: with the backoff, the jitter and any hint of the server, as the
//! store or the API holds it) and how much of it is left (HALF-OPEN IN); a
//! half-open circuit's, which opening it follows. `--json` adds
//! `openings`, `open_for_ms` and `retry_at` (Unix seconds on a store, RFC
//! 3339 from an admin API). An open circuit's FAILURES are those that
//! opened it, as its payload keeps them; where the payload does not say
//! when the opening ends (milon/fuse opened it), OPEN FOR and HALF-OPEN IN
//! are this command's `FUSE_OPEN_DURATION`, marked `*` and said below the
//! table (`open_for_assumed` in JSON).
//!
//! Under `FUSE_POLICY=rate` (or a rate circuit an admin API shows), a
//! circuit's line ends with its window and rule, `rate 12/40 failed (30 %,
//! opens at 50 % of >= 20)`, and its FAILURES are the failed calls in the
//! window; `--json` adds `policy`, `calls`, `failed`, `slow` and the rule's
//! thresholds.
//!
//! With `FUSE_MIN_REPORTERS` above 1 (or such a shared circuit an admin API
//! shows), a circuit's line ends with its quorum (SPEC §8), `quorum 1/2`:
//! how many processes reported the failures in its window, of the number
//! it takes to open it; `--json` adds `reporters` and `min_reporters`.
//!
//! A closed circuit that grades its admission (SPEC §11: `FUSE_RAMP_UP`,
//! `FUSE_THROTTLE_K`, or such a circuit an admin API shows) ends its line
//! with the share of calls it admits and why, rounded down to the percent:
//! `admits 35 % (ramp_up)`, or under throttling with the window the share
//! comes from, `admits 10 % (throttle: 0 accepts of 31 requests)`.
//! `--json` adds `admission` (0 to 1), `graded_by`, `requests` and
//! `accepts` for every circuit, and with those settings `ramp_up_ms`,
//! `ramp_up_floor`, `throttle_k` and `max_throttle`.
//!
//! `status` lists every key under the prefix (and app), page by page. A key
//! under which no circuit can be read (an unreadable payload, a Redis value
//! that is not a string, a key that is not UTF-8) is listed as
//! `unreadable` (`"error"` in JSON) and why is said on standard error; the
//! exit status is 0 when the whole listing was read. Control characters in
//! keys, states and errors are printed escaped (`\x1b`; a backslash as
//! `\\`), so nothing a store or an API holds reaches the terminal as a
//! command.

mod admission;
mod api;
mod output;
mod rate;
mod set;
mod status;
mod text;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use fuse_breaker::store::{self, SharedFuse, Store, StoreError, StoreOptions};
use fuse_breaker::{Config, config::PayloadKind, config::PayloadRead, settings::Settings};

use output::{Output, Row, written};

// No `Debug`: its URLs and token hold secrets, and the help shows no value
// of the variables that hold them.
/// See and steer the circuits a fleet shares in Redis or a database.
#[derive(Parser)]
#[command(name = "fuse", version)]
struct Cli {
    /// The Redis server.
    #[arg(
        long = "redis",
        env = "FUSE_REDIS_URL",
        hide_env_values = true,
        value_name = "URL",
        global = true,
        conflicts_with_all = ["database_url", "url"]
    )]
    redis: Option<String>,
    /// The database: `postgres://...` or `sqlite:PATH`.
    #[arg(
        long,
        env = "FUSE_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL",
        global = true,
        conflicts_with = "url"
    )]
    database_url: Option<String>,
    /// A service's admin API: `http://host:port[/prefix]`.
    #[arg(
        long,
        env = "FUSE_ADMIN_URL",
        hide_env_values = true,
        value_name = "URL",
        global = true
    )]
    url: Option<String>,
    /// The admin API's token (open, close, reset and set need it; with `--url`).
    #[arg(long, env = "FUSE_ADMIN_TOKEN", hide_env_values = true, global = true)]
    token: Option<String>,
    /// The database's table (default `fuse_circuits`; with `--database-url`).
    #[arg(long, env = "FUSE_DATABASE_TABLE", global = true)]
    table: Option<String>,
    /// What the Redis store writes, and where: `json` (the default),
    /// `php` (PHP's `serialize()`), or `laravel` (PHP's `serialize()` under
    /// Laravel's cache key, milon/fuse's default store).
    #[arg(
        long,
        env = "FUSE_PAYLOAD",
        global = true,
        value_parser = ["json", "php", "laravel"]
    )]
    payload: Option<String>,
    /// What the Redis store reads: `written` (the default) or `auto`
    /// (JSON and PHP's `serialize()` alike).
    #[arg(
        long,
        env = "FUSE_PAYLOAD_READ",
        global = true,
        value_parser = ["written", "auto"]
    )]
    payload_read: Option<String>,
    /// The Laravel application's Redis prefix (`REDIS_PREFIX`; default
    /// `laravel_database_`; with `--payload laravel`).
    #[arg(
        long,
        env = "FUSE_LARAVEL_REDIS_PREFIX",
        value_name = "PREFIX",
        global = true
    )]
    laravel_redis_prefix: Option<String>,
    /// The Laravel application's cache prefix (`CACHE_PREFIX`; default
    /// `laravel_cache_`; with `--payload laravel`).
    #[arg(
        long,
        env = "FUSE_LARAVEL_CACHE_PREFIX",
        value_name = "PREFIX",
        global = true
    )]
    laravel_cache_prefix: Option<String>,
    /// The app piece of the keys.
    #[arg(long, env = "FUSE_APP", global = true)]
    app: Option<String>,
    /// The first piece of the keys (default `fuse`).
    #[arg(long, env = "FUSE_KEY_PREFIX", global = true)]
    prefix: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The circuits' state: every circuit of the app, or one.
    Status {
        /// `NAME` or `NAME:OPERATION`.
        circuit: Option<String>,
        /// One JSON object per circuit, a line each.
        #[arg(long)]
        json: bool,
    },
    /// Opens a circuit for the whole fleet.
    Open {
        /// `NAME` or `NAME:OPERATION`.
        circuit: String,
    },
    /// Closes a circuit for the whole fleet.
    Close {
        /// `NAME` or `NAME:OPERATION`.
        circuit: String,
    },
    /// Forgets a circuit: a fresh closed one.
    Reset {
        /// `NAME` or `NAME:OPERATION`.
        circuit: String,
    },
    /// Changes a running service's settings through its admin API
    /// (`--url`): one circuit's, or with `--name` a name's.
    Set {
        /// `NAME` or `NAME:OPERATION` (`NAME` with `--name`).
        circuit: String,
        /// Each setting and its value as a `FUSE_*` variable takes it:
        /// `failure_threshold=3`, `open_duration=30s`.
        #[arg(
            value_name = "SETTING=VALUE",
            required = true,
            value_parser = set::setting
        )]
        settings: Vec<(String, String)>,
        /// Changes the registry's settings of the name: every circuit of
        /// it, and those made later.
        #[arg(long)]
        name: bool,
        /// The API's answer as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// The circuits' configuration: the `FUSE_*` variables, and the prefix.
fn config(prefix: Option<&str>) -> Result<Config, String> {
    let settings = Settings::default()
        .with_env()
        .map_err(|err| err.to_string())?;
    let config = settings.config().map_err(|err| err.to_string())?;
    match prefix {
        Some(prefix) => config
            .to_builder()
            .key_prefix(prefix)
            .build()
            .map_err(|err| err.to_string()),
        None => Ok(config),
    }
}

/// The store the circuits are in.
fn open_store(cli: &Cli) -> Result<Arc<dyn Store>, StoreError> {
    let mut options = StoreOptions::default();
    options.payload = cli.payload.as_deref().and_then(PayloadKind::parse);
    options.payload_read = cli.payload_read.as_deref().and_then(PayloadRead::parse);
    options
        .laravel_redis_prefix
        .clone_from(&cli.laravel_redis_prefix);
    options
        .laravel_cache_prefix
        .clone_from(&cli.laravel_cache_prefix);
    match (&cli.redis, &cli.database_url) {
        (Some(url), _) => store::open_with(url, &options),
        (None, Some(url)) => store::open_with(url, &options.with_table(cli.table.as_deref())),
        (None, None) => Err(StoreError::unreachable(
            "fuse",
            "give --redis, --database-url or --url",
        )),
    }
}

fn circuit(cli: &Cli, store: &Arc<dyn Store>, config: &Config, spec: &str) -> SharedFuse {
    let (name, operation) = parts(spec);
    let mut builder = fuse_breaker::Fuse::builder(name)
        .store(store.clone())
        .config(config.clone());
    if let Some(app) = &cli.app {
        builder = builder.app(app);
    }
    if let Some(operation) = operation {
        builder = builder.operation(operation);
    }
    builder.build()
}

/// `NAME[:OPERATION]` as a name and an operation.
fn parts(spec: &str) -> (&str, Option<&str>) {
    let (name, operation) = spec.split_once(':').unwrap_or((spec, ""));
    (
        name,
        Some(operation).filter(|operation| !operation.is_empty()),
    )
}

/// The key of `NAME[:OPERATION]` under the app and prefix.
fn key_of(cli: &Cli, config: &Config, spec: &str) -> String {
    let (name, operation) = parts(spec);
    fuse_breaker::key(config.key_prefix(), cli.app.as_deref(), name, operation)
}

/// What every key of the app starts with: `prefix:app:` (or `prefix:`).
fn prefix_of(cli: &Cli, config: &Config) -> String {
    let mut prefix = fuse_breaker::key(config.key_prefix(), cli.app.as_deref(), "", None);
    prefix.push(':');
    prefix
}

/// The command against a service's admin API.
async fn through_api(cli: &Cli, url: &str, config: &Config) -> Result<usize, String> {
    let api = api::Api::new(url, cli.token.as_deref())?;
    let (key, action) = match &cli.command {
        Command::Status { circuit, json } => {
            let mut out = Output::new(*json);
            let mut show = |view: &fuse_breaker::admin::CircuitView| {
                out.circuit(&Row::of(view), || {
                    serde_json::to_value(view).unwrap_or_default()
                })
                .map_err(|err| written(&err))
            };
            match circuit {
                Some(spec) => show(&api.circuit(&key_of(cli, config, spec)).await?)?,
                None => api.circuits(&prefix_of(cli, config), show).await?,
            }
            return out.finish().map_err(|err| written(&err));
        }
        Command::Open { circuit } => (key_of(cli, config, circuit), "open"),
        Command::Close { circuit } => (key_of(cli, config, circuit), "close"),
        Command::Reset { circuit } => (key_of(cli, config, circuit), "reset"),
        Command::Set {
            circuit,
            settings,
            name,
            json,
        } => {
            let body = set::body(settings)?;
            let key;
            let target = if *name {
                match parts(circuit) {
                    (name, None) if !name.is_empty() => set::Target::Name(name),
                    _ => {
                        return Err(format!(
                            "--name changes the settings of a name, every operation of it: \
                             give NAME, not {:?}",
                            text::printable(circuit)
                        ));
                    }
                }
            } else {
                key = key_of(cli, config, circuit);
                set::Target::Circuit(&key)
            };
            let by = set::changed_by(std::env::var("USER").ok().as_deref());
            let change = api.settings(target, &body, &by).await?;
            set::print(&change, *json).map_err(|err| written(&err))?;
            return Ok(0);
        }
    };
    let view = api.act(&key, action).await?;
    overwrote(&key, view.overwritten.as_deref());
    Ok(0)
}

/// Says on stderr that a change replaced what was not a circuit under
/// `key` (`what` was wrong with it).
fn overwrote(key: &str, what: Option<&str>) {
    if let Some(what) = what {
        let _ = writeln!(
            std::io::stderr(),
            "fuse: {} held no circuit ({}); replaced",
            text::printable(key),
            text::printable(what)
        );
    }
}

/// Runs the command; how many keys it listed as unreadable.
async fn run(cli: &Cli) -> Result<usize, String> {
    let config = config(cli.prefix.as_deref())?;
    if let Some(url) = &cli.url {
        return through_api(cli, url, &config).await;
    }
    if let Command::Set { settings, .. } = &cli.command {
        set::body(settings)?;
        return Err(set::NEEDS_URL.to_owned());
    }
    let store = open_store(cli).map_err(|err| err.to_string())?;
    let done = match &cli.command {
        Command::Status { circuit, json } => {
            let mut out = Output::new(*json);
            match circuit {
                Some(spec) => {
                    let key = key_of(cli, &config, spec);
                    status::one(&store, &config, key, &mut out).await?;
                }
                None => status::all(&store, &config, &prefix_of(cli, &config), &mut out).await?,
            }
            return out.finish().map_err(|err| written(&err));
        }
        Command::Open { circuit: spec } => {
            let fuse = circuit(cli, &store, &config, spec);
            (fuse.force_open().await, fuse)
        }
        Command::Close { circuit: spec } => {
            let fuse = circuit(cli, &store, &config, spec);
            (fuse.force_closed().await, fuse)
        }
        Command::Reset { circuit: spec } => {
            let fuse = circuit(cli, &store, &config, spec);
            (fuse.reset().await, fuse)
        }
        // Refused above, before the store is opened.
        Command::Set { .. } => return Err(set::NEEDS_URL.to_owned()),
    };
    let (change, fuse) = done;
    let change = change.map_err(|err| err.to_string())?;
    let what = change.overwritten().map(ToString::to_string);
    overwrote(fuse.key(), what.as_deref());
    Ok(0)
}

/// `err` with every URL in it redacted, and no run of characters of a
/// password or secret of the URLs given (however a library quoted them).
fn redacted(cli: &Cli, err: &str) -> String {
    let mut err = fuse_breaker::redact::text(err).into_owned();
    for url in [&cli.redis, &cli.database_url, &cli.url]
        .into_iter()
        .flatten()
    {
        err = fuse_breaker::redact::text_about(url, &err).into_owned();
    }
    err
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "fuse: cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(unreadable) => {
            let _ = writeln!(
                std::io::stderr(),
                "fuse: {unreadable} key(s) hold no circuit that can be read (listed as unreadable)"
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            let err = redacted(&cli, &err);
            let _ = writeln!(std::io::stderr(), "fuse: {}", text::printable(&err));
            ExitCode::FAILURE
        }
    }
}
