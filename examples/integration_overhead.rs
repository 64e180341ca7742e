//! What the integrations add to a call: the tower layer in process, the
//! reqwest middleware over loopback HTTP.
//!
//! Run it in release:
//! `cargo run --release --example integration_overhead --features tower,reqwest`
//! (about five seconds; `FUSE_OVERHEAD_ROUNDS=N` changes the number of
//! rounds, 5 by default).
//!
//! 1. **tower, in process, no network**: a `tower::service_fn` whose
//!    future is ready at once, called (`poll_ready`, `call`, one poll)
//!    with and without `FuseLayer` in front. The difference is the layer:
//!    admission, an `Arc` clone for the owned permit, the classifier and
//!    the verdict on a closed circuit; with `per_operation`, also the
//!    registry lookup. The rejected row is an open circuit's answer (a
//!    boxed `OpenError`, the inner service never called).
//! 2. **reqwest, loopback HTTP/1**: sequential GETs to a local hyper server
//!    (a task on the client's one-thread runtime, so that the figures are
//!    CPU time rather than thread wake-ups) with a plain `reqwest::Client`, the same client
//!    in a `ClientWithMiddleware` without middleware, and with
//!    `FuseMiddleware` (per host, then per operation).
//!
//! Each figure is the median of the rounds (ten shorter rounds per round
//! for the loopback requests), which alternate between the variants and
//! start with a different one each time, so that drifts of the machine hit
//! them all alike.

use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use fuse_breaker::reqwest::{FuseMiddleware, Operation};
use fuse_breaker::tower::FuseLayer;
use fuse_breaker::{Config, Fuse, Registry};
use http::{Request, Response};
use tower::{Layer, Service, service_fn};

/// In-process calls per round.
const CALLS: u32 = 1_000_000;
/// Loopback requests per round.
const REQUESTS: u32 = 2_000;

fn main() {
    let rounds: usize = std::env::var("FUSE_OVERHEAD_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!("fuse-breaker integration overhead ({rounds} rounds, median)\n");
    tower_in_process(rounds);
    println!();
    reqwest_loopback(rounds);
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

// ---------------------------------------------------------------- tower --

type Inner = fn(Request<()>) -> Ready<Result<Response<()>, Infallible>>;

fn inner() -> tower::util::ServiceFn<Inner> {
    service_fn((|_req| ready(Ok(Response::new(())))) as Inner)
}

/// ns per call of `svc`: `poll_ready`, `call`, one poll of the future.
fn time_calls<S>(svc: &mut S, calls: u32) -> f64
where
    S: Service<Request<()>>,
{
    let mut cx = Context::from_waker(Waker::noop());
    let start = Instant::now();
    for _ in 0..calls {
        assert!(svc.poll_ready(&mut cx).is_ready());
        let fut = pin!(svc.call(black_box(Request::new(()))));
        match fut.poll(&mut cx) {
            Poll::Ready(out) => {
                black_box(out.is_ok());
            }
            Poll::Pending => unreachable!("the inner future is ready at once"),
        }
    }
    start.elapsed().as_secs_f64() * 1e9 / f64::from(calls)
}

fn tower_in_process(rounds: usize) {
    let fuse = Arc::new(Fuse::new("bench", Config::default()));
    let registry = Arc::new(Registry::new(Config::default()));
    let open = Arc::new(Fuse::new("open", Config::default()));
    open.force_open();

    let mut bare = inner();
    let mut one = FuseLayer::new(fuse).layer(inner());
    let mut per_op =
        FuseLayer::per_operation(registry, "bench", |req: &Request<()>| req.uri().path())
            .layer(inner());
    let mut rejected = FuseLayer::new(open).layer(inner());

    // Warm up every variant.
    time_calls(&mut bare, CALLS / 10);
    time_calls(&mut one, CALLS / 10);
    time_calls(&mut per_op, CALLS / 10);
    time_calls(&mut rejected, CALLS / 10);

    let mut results: [Vec<f64>; 4] = Default::default();
    for round in 0..rounds {
        // Each round starts with another variant.
        for i in 0..4 {
            let variant = (round + i) % 4;
            results[variant].push(match variant {
                0 => time_calls(&mut bare, CALLS),
                1 => time_calls(&mut one, CALLS),
                2 => time_calls(&mut per_op, CALLS),
                _ => time_calls(&mut rejected, CALLS),
            });
        }
    }
    let [bare, one, per_op, rejected] = results.map(median);

    println!("tower, in process ({CALLS} calls per round)");
    println!("| service | ns/call | added by the layer |");
    println!("| --- | ---: | ---: |");
    println!("| service_fn alone | {bare:.1} | |");
    println!(
        "| FuseLayer::new (one circuit, closed) | {one:.1} | {:+.1} |",
        one - bare
    );
    println!(
        "| FuseLayer::per_operation (registry lookup) | {per_op:.1} | {:+.1} |",
        per_op - bare
    );
    println!(
        "| FuseLayer, circuit open (rejected) | {rejected:.1} | {:+.1} |",
        rejected - bare
    );
}

// -------------------------------------------------------------- reqwest --

/// Starts a hyper server answering `200 ok` as a task of the current
/// runtime (the client's: one thread, so that no request waits for another
/// thread to wake up); returns its address.
async fn start_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.expect("accept");
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_req| async {
                    Ok::<_, Infallible>(Response::new("ok".to_owned()))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// µs per request of `send`, sequential.
async fn time_requests<F, Fut>(requests: u32, mut send: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    for _ in 0..requests {
        assert!(send().await, "a request failed");
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(requests)
}

fn reqwest_loopback(rounds: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let addr = runtime.block_on(start_server());
    let url = format!("http://{addr}/charge");
    let client = || {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("a client")
    };
    let registry = Arc::new(Registry::new(Config::default()));
    let plain = client();
    let wrapped = reqwest_middleware::ClientBuilder::new(client()).build();
    let fused = reqwest_middleware::ClientBuilder::new(client())
        .with(FuseMiddleware::per_host(registry))
        .build();

    let plain_get = || {
        let req = plain.get(&url);
        async move { req.send().await.is_ok_and(|r| r.status() == 200) }
    };
    let wrapped_get = || {
        let req = wrapped.get(&url);
        async move { req.send().await.is_ok_and(|r| r.status() == 200) }
    };
    let fused_get = || {
        let req = fused.get(&url);
        async move { req.send().await.is_ok_and(|r| r.status() == 200) }
    };
    let fused_op_get = || {
        let req = fused.get(&url).with_extension(Operation::new("charge"));
        async move { req.send().await.is_ok_and(|r| r.status() == 200) }
    };

    let mut results: [Vec<f64>; 4] = Default::default();
    runtime.block_on(async {
        // Warm up: connections in the pools, circuits created.
        time_requests(REQUESTS / 10, plain_get).await;
        time_requests(REQUESTS / 10, wrapped_get).await;
        time_requests(REQUESTS / 10, fused_get).await;
        time_requests(REQUESTS / 10, fused_op_get).await;
        // Short rounds, each starting with another variant.
        for round in 0..rounds * 10 {
            for i in 0..4 {
                let variant = (round + i) % 4;
                let requests = REQUESTS / 10;
                results[variant].push(match variant {
                    0 => time_requests(requests, plain_get).await,
                    1 => time_requests(requests, wrapped_get).await,
                    2 => time_requests(requests, fused_get).await,
                    _ => time_requests(requests, fused_op_get).await,
                });
            }
        }
    });
    let [plain, wrapped, fused, fused_op] = results.map(median);

    println!(
        "reqwest, loopback HTTP/1 ({} rounds of {} sequential requests)",
        rounds * 10,
        REQUESTS / 10
    );
    println!("| client | µs/request | vs plain | vs middleware client |");
    println!("| --- | ---: | ---: | ---: |");
    println!("| reqwest::Client | {plain:.2} | | |");
    println!(
        "| ClientWithMiddleware, no middleware | {wrapped:.2} | {:+.2} | |",
        wrapped - plain
    );
    println!(
        "| + FuseMiddleware (per host) | {fused:.2} | {:+.2} | {:+.2} |",
        fused - plain,
        fused - wrapped
    );
    println!(
        "| + FuseMiddleware + Operation extension | {fused_op:.2} | {:+.2} | {:+.2} |",
        fused_op - plain,
        fused_op - wrapped
    );
}
