//! Circuits under load, their metrics served to Prometheus at `/metrics`.
//!
//! The `metrics` feature publishes each circuit's series through the
//! `metrics` facade; this example pairs it with the recorder of
//! `metrics-exporter-prometheus` and serves its text exposition on a
//! loopback port, under the crate's own names or resilience4j's:
//!
//! ```sh
//! cargo run --example metrics_server --features metrics -- --names resilience4j
//! curl http://127.0.0.1:PORT/metrics
//! ```
//!
//! The first line it prints is the address it listens on
//! (`listening on 127.0.0.1:PORT`), then one line per transition.
//!
//! - `--names fuse|resilience4j`: the naming scheme (default `fuse`, the
//!   series of `docs/grafana/fuse-dashboard.json`; `resilience4j` gives the
//!   series resilience4j's Grafana dashboard reads).
//! - `--listen ADDR`: where to listen (default `127.0.0.1:0`, a free port).
//! - `--seconds N`: stop after N seconds (default, and 0: run until
//!   interrupted).
//!
//! One simulated dependency is down for 4 s in every 12 s (from 3 s to
//! 7 s of each cycle), and three circuits call it, about 230 calls a
//! second in all, inside this process:
//!
//! - `payments:charge` (`count` policy, 50 calls a second): 5 failures
//!   open it; each failed probe doubles the next opening (1 s, 2 s, then
//!   4 s at most), so the openings' n grows; once two probes pass it closes
//!   and ramps its traffic back up over 3 s (calls shed by the ramp). One
//!   call in 20 ends in an error of the caller's own, ignored.
//! - `search:query` (`rate` policy, 80 calls a second, 8 at a time): 50 %
//!   of at least 20 calls in a 5 s window open it; calls take 5 ms, one in
//!   eight 60 ms (slow: over its 40 ms `slow_call_duration`), and time out
//!   after 50 ms while the dependency is down. One in 30 is ignored.
//! - `inventory:reserve` (`rate` policy, 100 calls a second) is overloaded
//!   rather than down: 70 % of its calls fail during the outage, under its
//!   90 % threshold, so it stays closed and adaptive throttling
//!   (`throttle_k` 1.5) sheds what the dependency cannot take.
//!
//! Before each answer to `/metrics`, every circuit publishes the counts it
//! keeps per thread (admissions, successes, the window's gauges).

use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use fuse_breaker::config::Policy;
use fuse_breaker::{Config, MetricNames, Registry, events::Transition};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// The dependency's cycle: down from `DOWN.start` to `DOWN.end` seconds
/// of every `PERIOD` seconds since the start.
const PERIOD: u64 = 12;
const DOWN: Range<u64> = 3..7;

/// The command line.
struct Args {
    names: MetricNames,
    listen: String,
    seconds: u64,
}

const USAGE: &str =
    "usage: metrics_server [--names fuse|resilience4j] [--listen ADDR] [--seconds N]";

fn args() -> Result<Args, String> {
    let mut parsed = Args {
        names: MetricNames::Fuse,
        listen: "127.0.0.1:0".to_owned(),
        seconds: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} takes a value\n{USAGE}"))?;
        match flag.as_str() {
            "--names" => parsed.names = value.parse()?,
            "--listen" => parsed.listen = value,
            "--seconds" => {
                parsed.seconds = value
                    .parse()
                    .map_err(|_| format!("--seconds takes a whole number, not {value:?}"))?;
            }
            _ => return Err(format!("unknown flag {flag:?}\n{USAGE}")),
        }
    }
    Ok(parsed)
}

/// Whether the dependency is down now.
fn down(started: Instant) -> bool {
    DOWN.contains(&(started.elapsed().as_secs() % PERIOD))
}

/// An error of the caller's own (the circuit ignores it).
fn rejected_order() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "order refused")
}

/// A circuit of the example: its name, operation and settings.
type Circuit = (&'static str, &'static str, Config);

/// The three circuits' settings.
fn configs() -> Result<[Circuit; 3], Box<dyn std::error::Error>> {
    let payments = Config::builder()
        .failure_threshold(5)
        .failure_window(Duration::from_secs(10))
        .open_duration(Duration::from_secs(1))
        .open_backoff(2.0)
        .max_open_duration(Duration::from_secs(4))
        .half_open_probes(2)
        .ramp_up(Duration::from_secs(3))
        .ramp_up_floor(20)
        .build()?;
    let search = Config::builder()
        .policy(Policy::Rate)
        .failure_rate(50)
        .minimum_calls(20)
        .failure_window(Duration::from_secs(5))
        .window_buckets(5)
        .slow_call_duration(Duration::from_millis(40))
        .slow_call_rate(80)
        .open_duration(Duration::from_secs(2))
        .half_open_probes(3)
        .build()?;
    let inventory = Config::builder()
        .policy(Policy::Rate)
        .failure_rate(90)
        .minimum_calls(20)
        .failure_window(Duration::from_secs(6))
        .window_buckets(6)
        .throttle_k(1.5)
        .open_duration(Duration::from_secs(2))
        .build()?;
    Ok([
        ("payments", "charge", payments),
        ("search", "query", search),
        ("inventory", "reserve", inventory),
    ])
}

/// Runs `call` every `every`, forever (a missed tick is not made up).
async fn every(every: Duration, mut call: impl FnMut(u64)) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 0.. {
        tick.tick().await;
        call(n);
    }
}

fn load(registry: &Registry, started: Instant) {
    let payments = registry.get_operation("payments", "charge");
    tokio::spawn(every(Duration::from_millis(20), move |n| {
        // A rejected or shed call is the circuit doing its job.
        let _ = payments.run(|| {
            if down(started) {
                Err(io::Error::from(io::ErrorKind::ConnectionRefused))
            } else if n % 20 == 19 {
                Err(rejected_order())
            } else {
                Ok(())
            }
        });
    }));

    let inventory = registry.get_operation("inventory", "reserve");
    tokio::spawn(every(Duration::from_millis(10), move |n| {
        let _ = inventory.run(|| {
            let fails = if down(started) {
                n % 10 < 7
            } else {
                n % 50 == 49
            };
            if fails {
                Err(io::Error::from(io::ErrorKind::TimedOut))
            } else {
                Ok(())
            }
        });
    }));

    for task in 0..8_u64 {
        let search = registry.get_operation("search", "query");
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for n in (task..).step_by(8) {
                tick.tick().await;
                let _ = search
                    .run_async(async {
                        if down(started) {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            return Err(io::Error::from(io::ErrorKind::TimedOut));
                        }
                        let took = if (n / 8) % 8 == 7 { 60 } else { 5 };
                        tokio::time::sleep(Duration::from_millis(took)).await;
                        if n % 30 == 29 {
                            Err(rejected_order())
                        } else {
                            Ok(())
                        }
                    })
                    .await;
            }
        });
    }
}

/// What the server needs to answer `/metrics`.
#[derive(Clone)]
struct Exposition {
    registry: Arc<Registry>,
    handle: PrometheusHandle,
}

async fn metrics(State(exposition): State<Exposition>) -> impl IntoResponse {
    // The counts each circuit keeps per thread reach the recorder when
    // published.
    for fuse in exposition.registry.circuits() {
        fuse.publish_metrics();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        exposition.handle.render(),
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    // The scheme and the recorder come before the first circuit.
    args.names
        .install()
        .map_err(|used| format!("the metric names are already {used}"))?;
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|err| err.to_string())?;

    let registry = Arc::new(Registry::builder().build()?);
    for (name, operation, config) in configs()? {
        registry.get_with_config(name, operation, config);
    }
    let started = Instant::now();
    registry.on_transition(move |t: &Transition| {
        let opening = t
            .open_for
            .map(|open_for| format!(", opening {} for {open_for:.1?}", t.openings))
            .unwrap_or_default();
        println!(
            "{:>8.3}s  {:<24} {} -> {} ({}{opening})",
            started.elapsed().as_secs_f64(),
            t.key,
            t.from,
            t.to,
            t.reason
        );
    });

    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    println!("listening on {}", listener.local_addr()?);
    println!("metric names: {}", args.names);
    load(&registry, started);
    let app = axum::Router::new()
        .route("/metrics", axum::routing::get(metrics))
        .with_state(Exposition { registry, handle });
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    if args.seconds == 0 {
        server.await??;
    } else {
        tokio::time::sleep(Duration::from_secs(args.seconds)).await;
        server.abort();
    }
    Ok(())
}
