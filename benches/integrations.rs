//! What the integrations add to a call, in criterion, on one thread and on
//! two threads sharing one circuit. Compare the rows of one group with
//! each other: the difference from the bare row is the integration.
//!
//! ```sh
//! cargo bench --bench integrations --features tower,reqwest
//! ```
//!
//! - `tower/threads=N`: a `tower::service_fn` whose future is ready at
//!   once, called (`poll_ready`, `call`, one poll with a no-op waker) bare
//!   behind a layer that does nothing (`map_response` with the identity:
//!   what any layer costs in moves), and behind `FuseLayer` (one circuit;
//!   `per_operation`, a registry lookup per request). Each thread calls its own clone of the service
//!   (as tower servers do), all of them sharing the circuit.
//! - `reqwest_middleware/threads=N`: a `reqwest_middleware` client whose
//!   last middleware answers `200` at once (no network), bare, behind a
//!   middleware that only passes the request on (what any middleware costs:
//!   `reqwest-middleware` boxes each one's future), and with
//!   `FuseMiddleware` in front (a fixed name; per host). One client shared
//!   by the threads.
//! - `baseline/threads=N`: `fetch_add` on one shared word: at two threads
//!   it costs several times its one-thread figure when the threads really
//!   ran together, which is what makes the two-thread rows trustworthy.
//! - `reqwest_loopback`: sequential GETs to a local hyper server on one
//!   thread, plain and with `FuseMiddleware`: the integration next to a
//!   real request.
//!
//! Each thread times its own calls after a barrier; a row is the slowest
//! thread's time per call.

use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, Criterion, measurement::WallTime};
use fuse_breaker::reqwest::FuseMiddleware;
use fuse_breaker::tower::FuseLayer;
use fuse_breaker::{Config, Fuse, Registry};
use http::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};
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

/// Polls `future` once: every future here is ready at once.
fn poll_once<F: Future>(future: F, cx: &mut Context<'_>) -> F::Output {
    match pin!(future).poll(cx) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("the canned answer is ready at once"),
    }
}

/// Times `iters` calls of `op` on each of `threads` threads at once, each
/// with its own state from `make`; the slowest thread's time.
fn on_threads<S: Send>(
    threads: usize,
    iters: u64,
    make: impl Fn() -> S + Sync,
    op: impl Fn(&mut S, &mut Context<'_>) + Sync,
) -> Duration {
    let barrier = Barrier::new(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut state = make();
                    let mut cx = Context::from_waker(Waker::noop());
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..iters {
                        op(&mut state, &mut cx);
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a bench thread"))
            .max()
            .unwrap_or_default()
    })
}

fn bench_service<S>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, threads: usize, svc: &S)
where
    S: Service<Request<()>> + Clone + Send + Sync,
{
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                || svc.clone(),
                |svc, cx| {
                    black_box(call(svc, cx));
                },
            )
        });
    });
}

fn tower_in_process(c: &mut Criterion, threads: usize) {
    let fuse = Arc::new(Fuse::new("bench", Config::default()));
    let registry = Arc::new(Registry::new(Config::default()));
    let per_operation =
        FuseLayer::per_operation(registry, "bench", |req: &Request<()>| req.uri().path());

    let mut group = c.benchmark_group(format!("tower/threads={threads}"));
    bench_service(&mut group, "service_fn", threads, &inner());
    // A layer that does nothing but wrap the future and the response: what
    // being a layer costs (moving the request, the future and the response
    // through one more type), Fuse or not.
    let passthrough = tower::ServiceBuilder::new()
        .map_response(|response: Response<()>| response)
        .service(inner());
    bench_service(&mut group, "passthrough_layer", threads, &passthrough);
    bench_service(
        &mut group,
        "fuse_layer",
        threads,
        &FuseLayer::new(fuse).layer(inner()),
    );
    bench_service(
        &mut group,
        "fuse_layer_per_operation",
        threads,
        &per_operation.layer(inner()),
    );
    group.finish();
}

/// The last middleware of the chain: answers `200` without the network.
struct Canned;

#[async_trait::async_trait]
impl Middleware for Canned {
    async fn handle(
        &self,
        _request: reqwest::Request,
        _extensions: &mut http::Extensions,
        _next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        Ok(reqwest::Response::from(Response::new("ok")))
    }
}

/// A middleware that passes every request on: what being a middleware
/// costs, Fuse or not.
struct Passthrough;

#[async_trait::async_trait]
impl Middleware for Passthrough {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        next.run(request, extensions).await
    }
}

fn bench_client(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    threads: usize,
    client: &ClientWithMiddleware,
) {
    let url = "http://billing.internal/charge";
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                || (),
                |(), cx| {
                    let response = poll_once(client.get(url).send(), cx);
                    black_box(response.expect("the canned answer"));
                },
            )
        });
    });
}

fn reqwest_in_process(c: &mut Criterion, threads: usize) {
    let canned = |front: Option<Arc<dyn Middleware>>| {
        let builder = ClientBuilder::new(reqwest::Client::new());
        let builder = match front {
            Some(front) => builder.with_arc(front),
            None => builder,
        };
        builder.with(Canned).build()
    };
    let registry = Arc::new(Registry::new(Config::default()));
    let mut group = c.benchmark_group(format!("reqwest_middleware/threads={threads}"));
    bench_client(&mut group, "canned", threads, &canned(None));
    let passthrough = canned(Some(Arc::new(Passthrough)));
    bench_client(&mut group, "passthrough", threads, &passthrough);
    let named = FuseMiddleware::named(registry.clone(), "billing");
    bench_client(
        &mut group,
        "fuse_named",
        threads,
        &canned(Some(Arc::new(named))),
    );
    let per_host = FuseMiddleware::per_host(registry);
    bench_client(
        &mut group,
        "fuse_per_host",
        threads,
        &canned(Some(Arc::new(per_host))),
    );
    group.finish();
}

fn baseline(c: &mut Criterion, threads: usize) {
    let word = AtomicU64::new(0);
    let mut group = c.benchmark_group(format!("baseline/threads={threads}"));
    group.bench_function("fetch_add", |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                || (),
                |(), _| {
                    // Relaxed: a count; the shared write is what is measured.
                    black_box(word.fetch_add(1, Ordering::Relaxed));
                },
            )
        });
    });
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
    let fused = ClientBuilder::new(client())
        .with(FuseMiddleware::per_host(registry))
        .build();

    runtime.block_on(async {
        // Both clients answer 200 before they are timed (pools warmed too).
        let plain = plain.get(&url).send().await.expect("a loopback request");
        let fused = fused.get(&url).send().await.expect("a loopback request");
        for response in [plain, fused] {
            assert_eq!(response.status(), 200);
        }
    });

    let mut group = c.benchmark_group("reqwest_loopback");
    group.sample_size(20);
    group.bench_function("client", |b| {
        b.iter(|| runtime.block_on(async { plain.get(&url).send().await.is_ok() }));
    });
    group.bench_function("fuse_middleware", |b| {
        b.iter(|| runtime.block_on(async { fused.get(&url).send().await.is_ok() }));
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .configure_from_args();
    for threads in [1, 2] {
        baseline(&mut criterion, threads);
        tower_in_process(&mut criterion, threads);
        reqwest_in_process(&mut criterion, threads);
    }
    reqwest_loopback(&mut criterion);
    criterion.final_summary();
}
