//! An axum server that answers `503 Service Unavailable` with
//! `Retry-After` while the circuit of its downstream is open.
//!
//! Run it with `cargo run --example axum_server --features tower`. It
//! starts two local servers on 127.0.0.1, "billing" (the downstream) and
//! "shop" (the axum server whose `/checkout` calls billing through a
//! `FuseLayer`), then plays a client of the shop, in about half a second:
//!
//! 1. billing answers: checkouts succeed;
//! 2. billing answers 503: the shop answers 502 three times, which opens
//!    the circuit; from then on the shop answers 503 with `Retry-After`
//!    at once, without calling billing;
//! 3. billing recovers; after the 400 ms cooldown the next checkout probes
//!    billing and succeeds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use fuse_breaker::tower::{BoxError, FuseLayer, open_error, open_response};
use fuse_breaker::{Config, Fuse};
use http::{Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, ServiceExt};

/// The downstream: answers 503 while `down` is set; counts its requests.
struct Billing {
    down: AtomicBool,
    requests: AtomicUsize,
}

async fn serve(app: axum::Router) -> String {
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
    let billing_url = serve(axum::Router::new().route(
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
    ))
    .await;

    // The shop's client of billing: hyper's, behind a circuit.
    let config = Config::builder()
        .failure_threshold(3)
        .open_duration(Duration::from_millis(400))
        .build()?;
    let fuse = Arc::new(Fuse::new("billing", config));
    let to_billing = FuseLayer::new(fuse.clone())
        .layer(Client::builder(TokioExecutor::new()).build_http::<String>());

    let shop_url = serve(axum::Router::new().route(
        "/checkout",
        axum::routing::post(move || {
            let (to_billing, url) = (to_billing.clone(), format!("{billing_url}/charge"));
            async move {
                let charge = Request::post(url).body(String::new()).unwrap();
                match to_billing.oneshot(charge).await {
                    Ok(res) if res.status().is_success() => "paid".into_response(),
                    Ok(_) => StatusCode::BAD_GATEWAY.into_response(),
                    Err(err) => match open_error(&*err) {
                        // 503 + Retry-After: the shop's clients back off.
                        Some(open) => open_response(open).into_response(),
                        None => StatusCode::BAD_GATEWAY.into_response(),
                    },
                }
            }
        }),
    ))
    .await;

    // A client of the shop.
    let client = Client::builder(TokioExecutor::new()).build_http::<String>();
    let start = Instant::now();
    let checkout = || async {
        let req = Request::post(format!("{shop_url}/checkout"))
            .body(String::new())
            .unwrap();
        let res: Response<_> = client.request(req).await.expect("the shop answers");
        let retry_after = res
            .headers()
            .get(http::header::RETRY_AFTER)
            .map_or(String::new(), |v| {
                format!("Retry-After: {}", v.to_str().unwrap())
            });
        println!(
            "{:>8.1?}  POST /checkout -> {:<28} {retry_after:<16} billing circuit {}",
            start.elapsed(),
            res.status().to_string(),
            fuse.state()
        );
        res.status()
    };

    println!("-- billing is healthy");
    assert_eq!(checkout().await, StatusCode::OK);

    println!("-- billing answers 503");
    billing.down.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        assert_eq!(checkout().await, StatusCode::BAD_GATEWAY);
    }
    let sent = billing.requests.load(Ordering::SeqCst);
    for _ in 0..3 {
        assert_eq!(checkout().await, StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(billing.requests.load(Ordering::SeqCst), sent);
    println!("   billing received no request while its circuit was open");

    println!("-- billing recovers; waiting out the cooldown");
    billing.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(420)).await;
    for _ in 0..2 {
        assert_eq!(checkout().await, StatusCode::OK);
    }
    assert_eq!(fuse.state(), fuse_breaker::State::Closed);
    Ok(())
}
