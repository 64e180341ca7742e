//! A service with five circuits and the live dashboard that shows them.
//!
//! Run it with `cargo run --example dashboard --features admin` and open the
//! URL it prints. `-- --seconds N` stops it after N seconds (it runs until
//! interrupted otherwise); `FUSE_DASHBOARD_ADDR` picks the address
//! (default `127.0.0.1:0`, a free loopback port; the dashboard answers to
//! loopback names and to that address) and `FUSE_ADMIN_TOKEN` the admin
//! token (default: a random one, printed; one a bearer header cannot carry
//! stops the example with the error).
//!
//! - `payments:authorize` calls a dependency that goes down for 8 s in
//!   every 25 s (from 5 s after the start) twenty times a second: the
//!   circuit opens at once, probes every 3 s while it is down, and closes
//!   once it is back.
//! - `inventory:reserve` calls one that is down from 2 s to 20 s of every
//!   45 s, once every 1.5 s: its failures pile up in the sparkline (a
//!   success would clear them) until the fifth opens it.
//! - `billing:charge` and `search:query` are healthy, with a blip now and
//!   then (a single failure, cleared by the next success).
//! - `recommendations:list` is a `rate` circuit (40 % of at least 20 calls
//!   in the 10 s window), ten calls a second: one in ten fails, and from
//!   30 s to 38 s of every 40 s three in five do: its bar climbs past the
//!   threshold line and it opens.
//!
//! The router is nested at `/fuse` next to the service's own route,
//! as an application would mount it. Every transition is printed too.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher as _;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuse_breaker::admin::Admin;
use fuse_breaker::{Config, Registry, config::Overrides, config::Policy, events::Transition};

/// A dependency that refuses connections from `down.start` to `down.end`
/// (seconds) of every `period` seconds since `started`.
fn outage(started: Instant, period: u64, down: std::ops::Range<u64>) -> io::Result<()> {
    if down.contains(&(started.elapsed().as_secs() % period)) {
        Err(io::Error::from(io::ErrorKind::ConnectionRefused))
    } else {
        Ok(())
    }
}

/// A healthy dependency that fails once in `one_in` calls (counted).
fn flaky(call: u64, one_in: u64) -> io::Result<()> {
    if call % one_in == one_in - 1 {
        Err(io::Error::from(io::ErrorKind::TimedOut))
    } else {
        Ok(())
    }
}

/// A dependency that fails one call in ten, and three in five from
/// `bad.start` to `bad.end` (seconds) of every `period` seconds.
fn degrading(
    started: Instant,
    call: u64,
    period: u64,
    bad: std::ops::Range<u64>,
) -> io::Result<()> {
    let fails = if bad.contains(&(started.elapsed().as_secs() % period)) {
        call % 5 < 3
    } else {
        call % 10 == 9
    };
    if fails {
        Err(io::Error::from(io::ErrorKind::TimedOut))
    } else {
        Ok(())
    }
}

/// Calls `call` through `name`/`operation` every `every`.
fn traffic(
    registry: &Arc<Registry>,
    name: &'static str,
    operation: &'static str,
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

fn seconds() -> Result<Option<u64>, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => Ok(None),
        (Some("--seconds"), Some(n)) => n
            .parse()
            .map(Some)
            .map_err(|_| format!("--seconds takes a whole number, not {n:?}")),
        _ => Err("usage: dashboard [--seconds N]".to_owned()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds = seconds()?;
    let config = Config::builder()
        .failure_threshold(5)
        .failure_window(Duration::from_secs(10))
        .open_duration(Duration::from_secs(3))
        .half_open_probes(2)
        .build()?;
    let rate = Overrides {
        policy: Some(Policy::Rate),
        failure_rate: Some(40),
        minimum_calls: Some(20),
        ..Overrides::default()
    };
    let registry = Arc::new(
        Registry::builder()
            .app("shop")
            .defaults(config)
            .overrides("recommendations", rate)
            .build()?,
    );
    registry.on_transition(|t: &Transition| {
        println!("{:<28} {} -> {} ({})", t.key, t.from, t.to, t.reason);
    });

    let started = Instant::now();
    traffic(
        &registry,
        "payments",
        "authorize",
        Duration::from_millis(50),
        move |_| outage(started, 25, 5..13),
    );
    traffic(
        &registry,
        "inventory",
        "reserve",
        Duration::from_millis(1500),
        move |_| outage(started, 45, 2..20),
    );
    traffic(
        &registry,
        "billing",
        "charge",
        Duration::from_millis(100),
        |n| flaky(n, 40),
    );
    traffic(
        &registry,
        "search",
        "query",
        Duration::from_millis(80),
        |n| flaky(n, 60),
    );
    traffic(
        &registry,
        "recommendations",
        "list",
        Duration::from_millis(100),
        move |n| degrading(started, n, 40, 30..38),
    );

    let token = std::env::var("FUSE_ADMIN_TOKEN")
        .unwrap_or_else(|_| format!("{:016x}", RandomState::new().hash_one(started)));
    let addr = std::env::var("FUSE_DASHBOARD_ADDR").unwrap_or_else(|_| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    let mut admin = Admin::new().registry(registry.clone()).token(&token);
    // Loopback names are always answered; another address is answered
    // under its own name.
    if !local.ip().is_loopback() {
        admin = admin.allow_host(&local.to_string());
    }
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(|| async { "the shop; its circuits are at /fuse\n" }),
        )
        .nest("/fuse", admin.router()?);
    println!("dashboard: http://{local}/fuse");
    println!("admin token: {token}");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    match seconds {
        Some(n) => tokio::time::sleep(Duration::from_secs(n)).await,
        None => std::future::pending().await,
    }
    server.abort();
    for fuse in registry.circuits() {
        let snapshot = fuse.snapshot();
        let window = match fuse.config().policy() {
            Policy::Rate => format!(
                "{} of {} calls failed in the window",
                snapshot.failed, snapshot.calls
            ),
            _ => format!("{} failures in the window", snapshot.failures.len()),
        };
        println!("{:<32} {:<10} {window}", fuse.key(), snapshot.state);
    }
    Ok(())
}
