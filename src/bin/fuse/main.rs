//! `fuse`: see and steer the shared circuits of a store (feature `cli`).
//!
//! ```text
//! fuse (--redis URL | --database-url URL [--table TABLE] | --url URL [--token TOKEN])
//!      [--app APP] [--prefix PREFIX] status [NAME[:OPERATION]] [--json]
//! fuse (--redis URL | --database-url URL [--table TABLE] | --url URL [--token TOKEN])
//!      [--app APP] [--prefix PREFIX] open|close|reset NAME[:OPERATION]
//! ```
//!
//! With `--url` (or `FUSE_ADMIN_URL`) the command talks to a service's
//! admin API (feature `admin`) where the application nested it, with the
//! admin token from `--token` or `FUSE_ADMIN_TOKEN`; `--json` then prints
//! the API's own objects.
//!
//! The circuits' configuration (failure window, probes, open duration) is
//! read from the `FUSE_*` variables, as the services read it; the Redis
//! URL from `--redis` or `FUSE_REDIS_URL`, the database's from
//! `--database-url` or `FUSE_DATABASE_URL` (PostgreSQL or SQLite), its
//! table from `--table` or `FUSE_DATABASE_TABLE`.

mod api;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgGroup, Parser, Subcommand};
use fuse_breaker::admin::CircuitView;
use fuse_breaker::store::{RedisStore, SharedFuse, SqlStore, Store, StoreError, snapshot_of};
use fuse_breaker::{Config, Settings, Snapshot, State};

/// See and steer the circuits a fleet shares in Redis or a database.
#[derive(Debug, Parser)]
#[command(name = "fuse", version)]
#[command(group(ArgGroup::new("store").required(true).args(["redis", "database_url", "url"])))]
struct Cli {
    /// The Redis server.
    #[arg(long = "redis", env = "FUSE_REDIS_URL", value_name = "URL")]
    redis: Option<String>,
    /// The database: `postgres://...` or `sqlite:PATH`.
    #[arg(long, env = "FUSE_DATABASE_URL", value_name = "URL")]
    database_url: Option<String>,
    /// A service's admin API: `http://host:port[/prefix]`.
    #[arg(long, env = "FUSE_ADMIN_URL", value_name = "URL")]
    url: Option<String>,
    /// The admin API's token (open, close and reset need it).
    #[arg(
        long,
        env = "FUSE_ADMIN_TOKEN",
        requires = "url",
        hide_env_values = true
    )]
    token: Option<String>,
    /// The database's table (default `fuse_circuits`).
    #[arg(long, env = "FUSE_DATABASE_TABLE", requires = "database_url")]
    table: Option<String>,
    /// The app piece of the keys.
    #[arg(long, env = "FUSE_APP")]
    app: Option<String>,
    /// The first piece of the keys (default `fuse`).
    #[arg(long, env = "FUSE_KEY_PREFIX")]
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
enum Fleet {
    Redis(Arc<RedisStore>),
    Database(Arc<SqlStore>),
}

impl Fleet {
    fn open(cli: &Cli) -> Result<Self, StoreError> {
        match (&cli.redis, &cli.database_url) {
            (Some(url), _) => Ok(Fleet::Redis(Arc::new(RedisStore::open(url)?))),
            (None, Some(url)) => {
                let mut store = SqlStore::open(url)?;
                if let Some(table) = &cli.table {
                    store = store.with_table(table)?;
                }
                Ok(Fleet::Database(Arc::new(store)))
            }
            (None, None) => Err(StoreError::unreachable(
                "fuse",
                "give --redis, --database-url or --url",
            )),
        }
    }

    fn store(&self) -> Arc<dyn Store> {
        match self {
            Fleet::Redis(store) => store.clone(),
            Fleet::Database(store) => store.clone(),
        }
    }

    async fn keys(&self, pattern: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        match self {
            Fleet::Redis(store) => store.keys(pattern, limit).await,
            Fleet::Database(store) => store.keys(pattern, limit).await,
        }
    }
}

fn circuit(cli: &Cli, store: &Arc<dyn Store>, config: &Config, spec: &str) -> SharedFuse {
    let (name, operation) = spec.split_once(':').unwrap_or((spec, ""));
    let mut builder = SharedFuse::builder(name, store.clone()).config(config.clone());
    if let Some(app) = &cli.app {
        builder = builder.app(app);
    }
    if !operation.is_empty() {
        builder = builder.operation(operation);
    }
    builder.build()
}

/// One line of the status: the key and its snapshot at the store's `now`.
struct Line {
    key: String,
    snapshot: Snapshot,
    now: Duration,
}

impl Line {
    /// How long until the next call probes (open circuits only).
    fn half_open_in(&self, config: &Config) -> Option<Duration> {
        let opened = self.snapshot.opened_at?;
        (self.snapshot.state == State::Open)
            .then(|| (opened + config.open_duration()).saturating_sub(self.now))
    }

    fn json(&self, config: &Config) -> serde_json::Value {
        serde_json::json!({
            "key": self.key,
            "state": self.snapshot.state.as_str(),
            "failures": self.snapshot.failures.len(),
            "failures_at": self.snapshot.failures.iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
            "half_open_inflight": self.snapshot.half_open_inflight,
            "half_open_successes": self.snapshot.half_open_successes,
            "half_open_probes": config.half_open_probes(),
            "opened_at": self.snapshot.opened_at.map(|at| at.as_secs_f64()),
            "half_open_in_ms": self.half_open_in(config).map(|left| left.as_millis()),
        })
    }
}

/// One line of the status table, from a store or from an admin API.
struct Row {
    key: String,
    state: String,
    failures: usize,
    /// In flight, allowed.
    probes: (u32, u32),
    half_open_in: Option<Duration>,
}

impl Row {
    fn of(view: &CircuitView) -> Self {
        Row {
            key: view.key.clone(),
            state: view.state.clone(),
            failures: view.failures,
            probes: (view.probes_in_flight, view.probes_allowed),
            half_open_in: view.half_open_in_ms.map(Duration::from_millis),
        }
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<40} {:<10} {:>8} {:>8} {:>14}",
        "KEY", "STATE", "FAILURES", "PROBES", "HALF-OPEN IN"
    );
    for row in rows {
        let half_open_in = row.half_open_in.map_or_else(
            || "-".to_owned(),
            |left| format!("{:.1}s", left.as_secs_f64()),
        );
        println!(
            "{:<40} {:<10} {:>8} {:>8} {:>14}",
            row.key,
            row.state,
            row.failures,
            format!("{}/{}", row.probes.0, row.probes.1),
            half_open_in
        );
    }
}

/// The key of `NAME[:OPERATION]` under the app and prefix.
fn key_of(cli: &Cli, config: &Config, spec: &str) -> String {
    let (name, operation) = spec.split_once(':').unwrap_or((spec, ""));
    let mut builder = fuse_breaker::Fuse::builder(name).config(config.clone());
    if let Some(app) = &cli.app {
        builder = builder.app(app);
    }
    if !operation.is_empty() {
        builder = builder.operation(operation);
    }
    builder.build().key().to_owned()
}

/// The command against a service's admin API.
async fn through_api(cli: &Cli, url: &str, config: &Config) -> Result<(), String> {
    let api = api::Api::new(url, cli.token.as_deref())?;
    let (views, json) = match &cli.command {
        Command::Status {
            circuit: Some(spec),
            json,
        } => (vec![api.circuit(&key_of(cli, config, spec)).await?], *json),
        Command::Status {
            circuit: None,
            json,
        } => {
            let mut prefix = config.key_prefix().to_owned();
            if let Some(app) = &cli.app {
                prefix.push(':');
                prefix.push_str(app);
            }
            prefix.push(':');
            (api.circuits(&prefix).await?, *json)
        }
        Command::Open { circuit } => (
            vec![api.act(&key_of(cli, config, circuit), "open").await?],
            false,
        ),
        Command::Close { circuit } => (
            vec![api.act(&key_of(cli, config, circuit), "close").await?],
            false,
        ),
        Command::Reset { circuit } => (
            vec![api.act(&key_of(cli, config, circuit), "reset").await?],
            false,
        ),
    };
    if !matches!(cli.command, Command::Status { .. }) {
        return Ok(());
    }
    if json {
        for view in &views {
            println!(
                "{}",
                serde_json::to_string(view).map_err(|err| err.to_string())?
            );
        }
    } else {
        print_table(&views.iter().map(Row::of).collect::<Vec<_>>());
    }
    Ok(())
}

async fn status(
    cli: &Cli,
    fleet: &Fleet,
    config: &Config,
    one: Option<&str>,
    json: bool,
) -> Result<(), StoreError> {
    let store = &fleet.store();
    let keys = if let Some(spec) = one {
        vec![circuit(cli, store, config, spec).key().to_owned()]
    } else {
        let mut pattern = config.key_prefix().to_owned();
        if let Some(app) = &cli.app {
            pattern.push(':');
            pattern.push_str(app);
        }
        fleet.keys(&format!("{pattern}:*"), 10_000).await?
    };
    let now = store.load("fuse-cli:clock").await?.now;
    let mut lines = Vec::new();
    for key in keys {
        if let Some(snapshot) = snapshot_of(&**store, &key, config).await? {
            lines.push(Line { key, snapshot, now });
        } else if one.is_some() {
            // An absent key is a fresh closed circuit.
            let snapshot = SharedFuse::builder("", store.clone())
                .build()
                .local()
                .snapshot();
            lines.push(Line { key, snapshot, now });
        }
    }
    if json {
        for line in &lines {
            println!("{}", line.json(config));
        }
        return Ok(());
    }
    let rows: Vec<Row> = lines
        .iter()
        .map(|line| Row {
            key: line.key.clone(),
            state: line.snapshot.state.as_str().to_owned(),
            failures: line.snapshot.failures.len(),
            probes: (line.snapshot.half_open_inflight, config.half_open_probes()),
            half_open_in: line.half_open_in(config),
        })
        .collect();
    print_table(&rows);
    Ok(())
}

async fn run(cli: &Cli) -> Result<(), String> {
    let config = config(cli.prefix.as_deref())?;
    if let Some(url) = &cli.url {
        return through_api(cli, url, &config).await;
    }
    let fleet = Fleet::open(cli).map_err(|err| err.to_string())?;
    let store = fleet.store();
    let done = match &cli.command {
        Command::Status { circuit, json } => {
            status(cli, &fleet, &config, circuit.as_deref(), *json).await
        }
        Command::Open { circuit: spec } => circuit(cli, &store, &config, spec)
            .force_open()
            .await
            .map(drop),
        Command::Close { circuit: spec } => circuit(cli, &store, &config, spec)
            .force_closed()
            .await
            .map(drop),
        Command::Reset { circuit: spec } => {
            circuit(cli, &store, &config, spec).reset().await.map(drop)
        }
    };
    done.map_err(|err| err.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("fuse: cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("fuse: {err}");
            ExitCode::FAILURE
        }
    }
}
