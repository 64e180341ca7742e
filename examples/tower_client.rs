//! A hyper client behind `FuseLayer`, one circuit per operation.
//!
//! Run it with `cargo run --example tower_client --features tower`. It
//! starts a local "billing" server on 127.0.0.1 and takes well under a
//! second:
//!
//! 1. `/charge` and `/refund` answer 200;
//! 2. `/charge` starts answering 503: the third 503 opens the `charge`
//!    circuit, and the next charges are rejected without a request, while
//!    refunds (a circuit of their own) go on;
//! 3. `/charge` recovers; after the 300 ms cooldown two probes close the
//!    circuit again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::tower::{BoxError, FuseLayer, open_error};
use fuse_breaker::{Config, Registry};
use http::{Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{ServiceBuilder, ServiceExt, service_fn};

/// The billing server: `/charge` fails with 503 while `down` is set; every
/// request is counted.
struct Billing {
    down: AtomicBool,
    requests: AtomicUsize,
}

async fn start_billing(billing: Arc<Billing>) -> String {
    let app = axum::Router::new()
        .route(
            "/charge",
            axum::routing::post({
                let billing = billing.clone();
                move || async move {
                    billing.requests.fetch_add(1, Ordering::SeqCst);
                    if billing.down.load(Ordering::SeqCst) {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    }
                }
            }),
        )
        .route(
            "/refund",
            axum::routing::post(move || async move {
                billing.requests.fetch_add(1, Ordering::SeqCst);
                StatusCode::OK
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let billing = Arc::new(Billing {
        down: AtomicBool::new(false),
        requests: AtomicUsize::new(0),
    });
    let base = start_billing(billing.clone()).await;

    let config = Config::builder()
        .failure_threshold(3)
        .open_duration(Duration::from_millis(300))
        .build()?;
    let registry = Arc::new(Registry::builder().app("shop").defaults(config).build()?);

    // hyper's client as a tower service, with a 1 s timeout, behind a
    // circuit per operation: the path without its slash.
    let hyper = Client::builder(TokioExecutor::new()).build_http::<String>();
    let client = ServiceBuilder::new()
        .layer(FuseLayer::per_operation(
            registry.clone(),
            "billing",
            |req: &Request<String>| req.uri().path().trim_start_matches('/'),
        ))
        .service(service_fn(move |req: Request<String>| {
            let hyper = hyper.clone();
            async move {
                match tokio::time::timeout(Duration::from_secs(1), hyper.request(req)).await {
                    Ok(res) => res.map_err(BoxError::from),
                    Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
                }
            }
        }));

    let start = Instant::now();
    let call = |operation: &'static str| {
        let req = Request::post(format!("{base}/{operation}"))
            .body(String::new())
            .unwrap();
        let (client, registry) = (client.clone(), registry.clone());
        async move {
            let outcome = client.oneshot(req).await;
            let what = match &outcome {
                Ok(res) => format!("HTTP {}", res.status()),
                Err(err) => match open_error(&**err) {
                    Some(open) => format!("rejected, retry in {:?}", open.retry_after()),
                    None => format!("error: {err}"),
                },
            };
            let state = registry.get_operation("billing", operation).state();
            println!(
                "{:>8.1?}  {operation:<6}  {what:<40} circuit {state}",
                start.elapsed()
            );
        }
    };

    println!("-- billing is healthy");
    call("charge").await;
    call("refund").await;

    println!("-- /charge answers 503");
    billing.down.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        call("charge").await;
    }
    let sent = billing.requests.load(Ordering::SeqCst);
    for _ in 0..3 {
        call("charge").await;
    }
    call("refund").await;
    let rejected_sent = billing.requests.load(Ordering::SeqCst) - sent;
    println!("   requests sent while charge was open: {rejected_sent} (the refund)");

    println!("-- /charge recovers; waiting out the cooldown");
    billing.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(320)).await;
    call("charge").await;
    call("charge").await;
    call("charge").await;

    for circuit in registry.circuits() {
        println!("{:<28} {}", circuit.key(), circuit.state());
    }
    assert_eq!(rejected_sent, 1);
    assert_eq!(
        registry.get_operation("billing", "charge").state(),
        fuse_breaker::State::Closed
    );
    Ok(())
}
