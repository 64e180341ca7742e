//! A service whose circuits' settings change while it runs (SPEC §12).
//!
//! ```sh
//! FUSE_ADMIN_TOKEN=s3cret cargo run --example live_settings \
//!     --features admin,config-file -- examples/fuse.toml [--port N] [--watch] [--seconds N]
//! ```
//!
//! It reads the settings file (and the `FUSE_*` variables, which override
//! its top-level keys) into a [`Registry`], runs three circuits with
//! traffic (`billing:charge`, `inventory:reserve`, `search:query`), and
//! serves the admin API on `127.0.0.1` (port 0, a free one, unless
//! `--port`), nested at `/fuse`. Its first line of output is the API's
//! URL, the second its process id; with `FUSE_ADMIN_TOKEN` set, the API
//! takes changes with that token, and without it the API is read-only.
//!
//! - `fuse --url URL --token TOKEN set billing:charge failure_threshold=3`
//!   changes one circuit, `set --name billing ...` a name
//!   (`cargo run --features cli --bin fuse -- ...`).
//! - `kill -HUP PID` reloads the file ([`Settings::reload`]); with
//!   `--watch` so does every change of the file (its modified time and
//!   length, polled every 250 ms, reloaded once they hold still for a
//!   poll). A file that cannot be read or is refused is said, naming it,
//!   and the settings in force are kept.
//!
//! Every transition and every change of a circuit's settings is printed
//! (who changed what: `admin (fuse set by alice)`, `reload`), and each
//! reload's result. `--seconds N` stops it after N seconds and prints each
//! circuit's state and settings; it runs until interrupted otherwise.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use fuse_breaker::Registry;
use fuse_breaker::admin::Admin;
use fuse_breaker::events::{Listener, Reconfiguration, Transition};
use fuse_breaker::settings::{Settings, SettingsError};

/// How often `--watch` looks at the file.
const POLL: Duration = Duration::from_millis(250);

/// What the command line asks.
struct Args {
    path: PathBuf,
    port: u16,
    watch: bool,
    seconds: Option<u64>,
}

const USAGE: &str = "usage: live_settings SETTINGS.toml [--port N] [--watch] [--seconds N]";

fn args() -> Result<Args, String> {
    let mut path = None;
    let mut port = 0;
    let mut watch = false;
    let mut seconds = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--watch" => watch = true,
            "--port" | "--seconds" => {
                let value = args.next().ok_or_else(|| format!("{arg} takes a number"))?;
                let bad = || format!("{arg} takes a whole number, not {value:?}");
                if arg == "--port" {
                    port = value.parse().map_err(|_| bad())?;
                } else {
                    seconds = Some(value.parse().map_err(|_| bad())?);
                }
            }
            _ if arg.starts_with('-') || path.is_some() => return Err(USAGE.to_owned()),
            _ => path = Some(PathBuf::from(arg)),
        }
    }
    let path = path.ok_or_else(|| USAGE.to_owned())?;
    Ok(Args {
        path,
        port,
        watch,
        seconds,
    })
}

/// The settings the file and the `FUSE_*` variables say.
fn read(path: &Path) -> Result<Settings, SettingsError> {
    Settings::from_file(path).and_then(Settings::with_env)
}

/// Puts the file's settings in force, saying what came of it.
fn reload(registry: &Registry, path: &Path, why: &str) {
    match read(path).and_then(|settings| settings.reload(registry)) {
        Ok(()) => println!("reload ({why}): {} in force", path.display()),
        Err(err) => eprintln!(
            "reload ({why}): {} refused, the settings in force are kept: {err}",
            path.display()
        ),
    }
}

/// Prints every transition and every change of settings.
struct Log;

impl Listener for Log {
    fn on_transition(&self, t: &Transition) {
        println!("{:<28} {} -> {} ({})", t.key, t.from, t.to, t.reason);
    }

    fn on_reconfigure(&self, event: &Reconfiguration<'_>) {
        let changes: Vec<String> = event
            .changes()
            .iter()
            .map(|c| format!("{} {} -> {}", c.setting, c.from, c.to))
            .collect();
        println!(
            "{:<28} reconfigured by {}: {}",
            event.key,
            event.by,
            changes.join(", ")
        );
    }
}

/// Calls `call` through `name`/`operation` every `every`.
fn traffic(
    registry: &Registry,
    name: &str,
    operation: &str,
    every: Duration,
    call: impl Fn(u64) -> io::Result<()> + Send + 'static,
) {
    let fuse = registry.get_operation(name, operation);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        for n in 0.. {
            tick.tick().await;
            // A rejection while open is the circuit doing its job.
            let _ = fuse.run(|| call(n));
        }
    });
}

/// A dependency that refuses connections for `down` of every `period`
/// since `started`.
fn outage(started: Instant, period: Duration, down: Duration) -> io::Result<()> {
    let into = started.elapsed().as_millis() % period.as_millis();
    if into < down.as_millis() {
        Err(io::Error::from(io::ErrorKind::ConnectionRefused))
    } else {
        Ok(())
    }
}

/// A healthy dependency that times out once in `one_in` calls.
fn flaky(call: u64, one_in: u64) -> io::Result<()> {
    if call % one_in == one_in - 1 {
        Err(io::Error::from(io::ErrorKind::TimedOut))
    } else {
        Ok(())
    }
}

/// What `--watch` compares: the file's modified time and length (`None`
/// while it cannot be read).
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// SIGHUP, where there is one.
struct Hangups {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Hangups {
    fn new() -> io::Result<Self> {
        Ok(Hangups {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?,
        })
    }

    /// The next SIGHUP (never, without signals).
    async fn next(&mut self) {
        #[cfg(unix)]
        if self.signal.recv().await.is_some() {
            return;
        }
        std::future::pending::<()>().await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let settings = read(&args.path).map_err(|err| format!("{}: {err}", args.path.display()))?;
    let registry = Arc::new(settings.registry()?);
    registry.on_transition(Log);

    let started = Instant::now();
    traffic(
        &registry,
        "billing",
        "charge",
        Duration::from_millis(100),
        |n| flaky(n, 50),
    );
    traffic(
        &registry,
        "inventory",
        "reserve",
        Duration::from_millis(50),
        move |_| outage(started, Duration::from_secs(10), Duration::from_secs(2)),
    );
    traffic(
        &registry,
        "search",
        "query",
        Duration::from_millis(80),
        |n| flaky(n, 200),
    );

    let mut admin = Admin::new().registry(registry.clone());
    match std::env::var("FUSE_ADMIN_TOKEN") {
        Ok(token) if !token.is_empty() => admin = admin.token(token),
        _ => eprintln!("FUSE_ADMIN_TOKEN is not set: the admin API is read-only"),
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let local = listener.local_addr()?;
    let app = axum::Router::new().nest("/fuse", admin.router()?);
    println!("http://{local}/fuse");
    println!(
        "pid {}: kill -HUP {0} reloads {}{}",
        std::process::id(),
        args.path.display(),
        if args.watch {
            ", as does a change of it"
        } else {
            ""
        }
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let mut hangups = Hangups::new()?;
    let mut poll = tokio::time::interval(POLL);
    // The file's stamp as last reloaded (or read at the start), and at
    // the poll before.
    let (mut loaded, mut before) = (stamp(&args.path), stamp(&args.path));
    let end = async {
        match args.seconds {
            Some(n) => tokio::time::sleep(Duration::from_secs(n)).await,
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    tokio::pin!(end);
    loop {
        tokio::select! {
            () = &mut end => break,
            () = hangups.next() => {
                loaded = stamp(&args.path);
                reload(&registry, &args.path, "SIGHUP");
            }
            _ = poll.tick(), if args.watch => {
                let now = stamp(&args.path);
                // Reloaded once the file holds still for a poll, so that a
                // file being written is not read half way.
                if now != loaded && now == before {
                    loaded = now;
                    reload(&registry, &args.path, "changed");
                }
                before = now;
            }
        }
    }
    server.abort();

    for fuse in registry.circuits() {
        let config = fuse.config();
        println!(
            "{:<28} {:<10} failure_threshold {} open_duration {:?} half_open_probes {}",
            fuse.key(),
            fuse.state(),
            config.failure_threshold(),
            config.open_duration(),
            config.half_open_probes(),
        );
    }
    Ok(())
}
