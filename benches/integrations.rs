//! What the integrations add to a call, in criterion: the tower layer in
//! process, the reqwest middleware over loopback HTTP. Compare the rows of
//! one group with each other (the bare service, the bare client): the
//! difference is the integration.
//!
//! ```sh
//! cargo bench --bench integrations --features tower,reqwest
//! ```
//!
//! - `tower`: a `tower::service_fn` whose future is ready at once, called
//!   (`poll_ready`, `call`, one poll with a no-op waker) bare and behind
//!   `FuseLayer` (one circuit; `per_operation` with its registry lookup; an
//!   open circuit's rejection, the inner service never called).
//! - `reqwest`: sequential GETs to a local hyper server, a task on the
//!   client's one-thread runtime (so that the figures are CPU time rather
//!   than thread wake-ups), with a plain `reqwest::Client`, the same client
//!   in a `ClientWithMiddleware` without middleware, and with
//!   `FuseMiddleware` (per host, then per operation).

use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, measurement::WallTime};
use fuse_breaker::reqwest::{FuseMiddleware, Operation};
use fuse_breaker::tower::FuseLayer;
use fuse_breaker::{Config, Fuse, Registry};
use http::{Request, Response};
use tower::{Layer, Service, service_fn};

type Inner = fn(Request<()>) -> Ready<Result<Response<()>, Infallible>>;

fn inner() -> tower::util::ServiceFn<Inner> {
    service_fn((|_req| ready(Ok(Response::new(())))) as Inner)
}

/// One call of `svc`: `poll_ready`, `call`, one poll of the future.
fn call<S: Service<Request<()>>>(svc: &mut S, cx: &mut Context<'_>) -> bool {
    assert!(svc.poll_ready(cx).is_ready());
    let fut = pin!(svc.call(black_box(Request::new(()))));
    match fut.poll(cx) {
        Poll::Ready(out) => out.is_ok(),
        Poll::Pending => unreachable!("the inner future is ready at once"),
    }
}

fn bench_service<S: Service<Request<()>>>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut svc: S,
) {
    let mut cx = Context::from_waker(Waker::noop());
    group.bench_function(id, |b| b.iter(|| black_box(call(&mut svc, &mut cx))));
}

fn tower_in_process(c: &mut Criterion) {
    let fuse = Arc::new(Fuse::new("bench", Config::default()));
    let registry = Arc::new(Registry::new(Config::default()));
    let open = Arc::new(Fuse::new("open", Config::default()));
    open.force_open();

    let mut group = c.benchmark_group("tower");
    bench_service(&mut group, "service_fn", inner());
    bench_service(
        &mut group,
        "fuse_layer",
        FuseLayer::new(fuse).layer(inner()),
    );
    let per_operation =
        FuseLayer::per_operation(registry, "bench", |req: &Request<()>| req.uri().path());
    bench_service(
        &mut group,
        "fuse_layer_per_operation",
        per_operation.layer(inner()),
    );
    bench_service(
        &mut group,
        "fuse_layer_rejected",
        FuseLayer::new(open).layer(inner()),
    );
    group.finish();
}

/// Starts a hyper server answering `200 ok` as a task of the current
/// runtime; returns its address.
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

fn reqwest_loopback(c: &mut Criterion) {
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

    runtime.block_on(async {
        // Every client answers 200 before it is timed (pools warmed too).
        let plain = plain.get(&url).send().await.expect("a loopback request");
        let wrapped = wrapped.get(&url).send().await.expect("a loopback request");
        let fused = fused.get(&url).send().await.expect("a loopback request");
        for response in [plain, wrapped, fused] {
            assert_eq!(response.status(), 200);
        }
    });

    let mut group = c.benchmark_group("reqwest");
    group.sample_size(20);
    group.bench_function("client", |b| {
        b.iter(|| runtime.block_on(async { plain.get(&url).send().await.is_ok() }));
    });
    group.bench_function("client_with_middleware", |b| {
        b.iter(|| runtime.block_on(async { wrapped.get(&url).send().await.is_ok() }));
    });
    group.bench_function("fuse_middleware", |b| {
        b.iter(|| runtime.block_on(async { fused.get(&url).send().await.is_ok() }));
    });
    group.bench_function("fuse_middleware_operation", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let request = fused.get(&url).with_extension(Operation::new("charge"));
                request.send().await.is_ok()
            })
        });
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .configure_from_args();
    tower_in_process(&mut criterion);
    reqwest_loopback(&mut criterion);
    criterion.final_summary();
}
