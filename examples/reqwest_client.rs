//! A reqwest client with `FuseMiddleware`: one circuit per host, and one
//! per operation where a request says which.
//!
//! Run it with `cargo run --example reqwest_client --features reqwest`. It
//! starts a local "inventory" server on 127.0.0.1 and takes well under a
//! second:
//!
//! 1. the inventory answers; a host nobody listens on refuses connections
//!    and its circuit opens after three attempts, while the inventory's
//!    circuit stays closed;
//! 2. the inventory's `reserve` operation answers 503 and opens its own
//!    circuit; the next reservations are rejected without a request and the
//!    `OpenError` is recovered from `reqwest_middleware::Error`, while
//!    `lookup` requests go on;
//! 3. `reserve` recovers; after the 300 ms cooldown a probe closes its
//!    circuit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::reqwest::{FuseMiddleware, Operation, open_error};
use fuse_breaker::{Config, Registry, State};
use http::StatusCode;
use reqwest_middleware::ClientBuilder;

/// The inventory server: `/reserve` fails with 503 while `down` is set.
struct Inventory {
    down: AtomicBool,
    requests: AtomicUsize,
}

async fn start_inventory(inventory: Arc<Inventory>) -> String {
    let app = axum::Router::new()
        .route(
            "/reserve",
            axum::routing::post({
                let inventory = inventory.clone();
                move || async move {
                    inventory.requests.fetch_add(1, Ordering::SeqCst);
                    if inventory.down.load(Ordering::SeqCst) {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    }
                }
            }),
        )
        .route(
            "/lookup",
            axum::routing::get(move || async move {
                inventory.requests.fetch_add(1, Ordering::SeqCst);
                "12 in stock"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn send(start: Instant, label: &str, request: reqwest_middleware::RequestBuilder) {
    let what = match request.send().await {
        Ok(res) => format!("HTTP {}", res.status()),
        Err(err) => match open_error(&err) {
            Some(open) => format!(
                "rejected by {}, retry in {:?}",
                open.key(),
                open.retry_after()
            ),
            None if err.is_connect() => "connection refused".to_owned(),
            None => format!("error: {err}"),
        },
    };
    println!("{:>8.1?}  {label:<16} {what}", start.elapsed());
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let inventory = Arc::new(Inventory {
        down: AtomicBool::new(false),
        requests: AtomicUsize::new(0),
    });
    let base = start_inventory(inventory.clone()).await;
    let gone = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        format!("http://{}", listener.local_addr()?)
    };

    let config = Config::builder()
        .failure_threshold(3)
        .open_duration(Duration::from_millis(300))
        .half_open_probes(1)
        .build()?;
    let registry = Arc::new(Registry::new(config));
    let client = ClientBuilder::new(
        reqwest::Client::builder()
            .timeout(Duration::from_secs(1))
            .build()?,
    )
    .with(FuseMiddleware::per_host(registry.clone()))
    .build();
    let start = Instant::now();

    println!("-- a host that refuses connections");
    for _ in 0..4 {
        send(start, "gone /", client.get(format!("{gone}/"))).await;
    }
    send(
        start,
        "inventory lookup",
        client.get(format!("{base}/lookup")),
    )
    .await;

    println!("-- reserve answers 503");
    inventory.down.store(true, Ordering::SeqCst);
    let reserve = || {
        client
            .post(format!("{base}/reserve"))
            .with_extension(Operation::new("reserve"))
    };
    for _ in 0..3 {
        send(start, "reserve", reserve()).await;
    }
    let before = inventory.requests.load(Ordering::SeqCst);
    for _ in 0..3 {
        send(start, "reserve", reserve()).await;
    }
    send(
        start,
        "inventory lookup",
        client.get(format!("{base}/lookup")),
    )
    .await;
    let sent = inventory.requests.load(Ordering::SeqCst) - before;
    println!("   requests sent while reserve was open: {sent} (the lookup)");

    println!("-- reserve recovers; waiting out the cooldown");
    inventory.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(320)).await;
    send(start, "reserve", reserve()).await;

    for circuit in registry.circuits() {
        println!("{:<34} {}", circuit.key(), circuit.state());
    }
    assert_eq!(sent, 1);
    let host = base.trim_start_matches("http://");
    assert_eq!(
        registry.get_operation(host, "reserve").state(),
        State::Closed
    );
    assert_eq!(
        registry.get(gone.trim_start_matches("http://")).state(),
        State::Open
    );
    Ok(())
}
