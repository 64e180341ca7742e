//! The tower layer over real sockets: hyper's client behind `FuseLayer`,
//! talking to a local server that answers, fails, answers late or resets
//! its connections. Circuits run on a mock clock, except in one test that
//! waits out a real 150 ms cooldown.

#![cfg(feature = "tower")]

use std::io;
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::tower::{BoxError, FuseLayer, FuseService, open_error, open_response};
use fuse_breaker::{Config, FailureKind, Registry, State, classify_error};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use quanta::Mock;
use tower::{Layer, Service, ServiceExt, service_fn};

mod common;
use common::just_before;
use common::server::{Mode, TestServer, closed_port};

/// How long the client waits for an answer.
const TIMEOUT: Duration = Duration::from_millis(150);
const OPEN: Duration = Duration::from_secs(30);

fn config() -> Config {
    common::integration_config()
}

fn registry(config: Config) -> (Arc<Registry>, Arc<Mock>) {
    common::mock_registry(config)
}

/// A real HTTP client as a tower service: hyper's legacy client, with a
/// timeout that fails with `io::ErrorKind::TimedOut`.
fn http_client() -> impl Service<
    Request<String>,
    Response = Response<Incoming>,
    Error = BoxError,
    Future = impl Future<Output = Result<Response<Incoming>, BoxError>> + Send,
> + Clone
+ Send {
    let client: Client<HttpConnector, String> = Client::builder(TokioExecutor::new()).build_http();
    service_fn(move |req: Request<String>| {
        let client = client.clone();
        async move {
            match tokio::time::timeout(TIMEOUT, client.request(req)).await {
                Ok(res) => res.map_err(BoxError::from),
                Err(_) => Err(io::Error::from(io::ErrorKind::TimedOut).into()),
            }
        }
    })
}

fn get(url: &str) -> Request<String> {
    Request::builder()
        .uri(url)
        .body(String::new())
        .expect("a valid request")
}

async fn call<S>(svc: &S, url: &str) -> Result<S::Response, BoxError>
where
    S: Service<Request<String>, Error = BoxError> + Clone,
{
    svc.clone().oneshot(get(url)).await
}

#[tokio::test]
async fn the_circuit_opens_at_the_threshold_and_sends_nothing_while_open() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, _mock) = registry(config());
    let fuse = registry.get("billing");
    let billing = FuseLayer::new(fuse.clone()).layer(http_client());

    for n in 1..=3 {
        assert_eq!(fuse.state(), State::Closed, "open before failure {n}");
        // A counted status is still handed to the caller.
        let res = call(&billing, &server.url("/charge"))
            .await
            .expect("a response");
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(server.requests(), 3);

    for _ in 0..5 {
        let err = call(&billing, &server.url("/charge")).await.unwrap_err();
        let open = open_error(&*err).expect("an OpenError");
        assert_eq!(open.key(), "fuse:billing");
        assert_eq!(open.retry_after(), OPEN);
        assert!(err.downcast_ref::<fuse_breaker::OpenError>().is_some());
    }
    assert_eq!(server.requests(), 3, "no request leaves while open");
}

#[tokio::test]
async fn probes_go_through_after_the_cooldown() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(502));
    let (registry, mock) = registry(config());
    let fuse = registry.get("billing");
    let billing = FuseLayer::new(fuse.clone()).layer(http_client());
    for _ in 0..3 {
        call(&billing, &server.url("/")).await.expect("a response");
    }
    assert_eq!(fuse.state(), State::Open);

    server.set_mode(Mode::Healthy);
    mock.increment(just_before(OPEN));
    assert!(
        call(&billing, &server.url("/")).await.is_err(),
        "still cooling down"
    );
    assert_eq!(server.requests(), 3);

    mock.increment(Duration::from_nanos(1));
    let res = call(&billing, &server.url("/"))
        .await
        .expect("the probe runs");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(fuse.state(), State::HalfOpen);
    call(&billing, &server.url("/"))
        .await
        .expect("the second probe runs");
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(server.requests(), 5);

    // A failed probe opens the circuit again.
    server.set_mode(Mode::Status(503));
    for _ in 0..3 {
        call(&billing, &server.url("/")).await.expect("a response");
    }
    mock.increment(OPEN);
    call(&billing, &server.url("/"))
        .await
        .expect("a probe that fails");
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot().opened_at, Some(OPEN * 2));
}

#[tokio::test]
async fn a_real_cooldown_of_150_ms() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(504));
    let config = Config::builder()
        .failure_threshold(2)
        .open_duration(Duration::from_millis(150))
        .half_open_probes(1)
        .build()
        .expect("a valid configuration");
    let fuse = Arc::new(fuse_breaker::Fuse::new("billing", config));
    let billing = FuseService::new(http_client(), fuse.clone());
    for _ in 0..2 {
        call(&billing, &server.url("/")).await.expect("a response");
    }
    let err = call(&billing, &server.url("/")).await.unwrap_err();
    assert!(open_error(&*err).unwrap().retry_after() <= Duration::from_millis(150));

    server.set_mode(Mode::Healthy);
    tokio::time::sleep(Duration::from_millis(200)).await;
    call(&billing, &server.url("/"))
        .await
        .expect("the probe runs");
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn timeouts_count() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    let (registry, _mock) = registry(config());
    let fuse = registry.get("slow");
    let slow = FuseLayer::new(fuse.clone()).layer(http_client());
    for _ in 0..3 {
        let err = call(&slow, &server.url("/")).await.unwrap_err();
        assert_eq!(classify_error(&*err), FailureKind::Timeout);
    }
    assert_eq!(fuse.state(), State::Open);
    assert!(open_error(&*call(&slow, &server.url("/")).await.unwrap_err()).is_some());
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn refused_connections_count() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (registry, _mock) = registry(config());
    let fuse = registry.get("gone");
    let gone = FuseLayer::new(fuse.clone()).layer(http_client());
    for _ in 0..3 {
        let err = call(&gone, &url).await.unwrap_err();
        assert!(open_error(&*err).is_none());
        assert_eq!(classify_error(&*err), FailureKind::Connection, "{err:?}");
    }
    assert_eq!(fuse.state(), State::Open);
}

#[tokio::test]
async fn reset_connections_count() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Close);
    let (registry, _mock) = registry(config());
    let fuse = registry.get("flaky");
    let flaky = FuseLayer::new(fuse.clone()).layer(http_client());
    for _ in 0..3 {
        let err = call(&flaky, &server.url("/")).await.unwrap_err();
        assert_eq!(classify_error(&*err), FailureKind::Connection, "{err:?}");
    }
    assert_eq!(fuse.state(), State::Open);
    let received = server.requests();
    assert!(open_error(&*call(&flaky, &server.url("/")).await.unwrap_err()).is_some());
    assert_eq!(server.requests(), received);
}

#[tokio::test]
async fn client_errors_and_business_errors_do_not_count() {
    let server = TestServer::start().await;
    let (registry, _mock) = registry(config());
    let fuse = registry.get("billing");
    let billing = FuseLayer::new(fuse.clone()).layer(http_client());

    // Two counted failures, then uncounted answers: they neither count nor
    // clear the failures, as a success would.
    server.set_mode(Mode::Status(503));
    for _ in 0..2 {
        call(&billing, &server.url("/")).await.expect("a response");
    }
    for status in [400, 404, 409, 422, 429, 500, 501] {
        server.set_mode(Mode::Status(status));
        for _ in 0..5 {
            let res = call(&billing, &server.url("/")).await.expect("a response");
            assert_eq!(res.status().as_u16(), status);
        }
    }
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().failures.len(), 2);

    // 500 counts when the configuration says so.
    let strict = Arc::new(fuse_breaker::Fuse::new(
        "strict",
        config().to_builder().count_http_500(true).build().unwrap(),
    ));
    let strict_svc = FuseService::new(http_client(), strict.clone());
    server.set_mode(Mode::Status(500));
    for _ in 0..3 {
        call(&strict_svc, &server.url("/"))
            .await
            .expect("a response");
    }
    assert_eq!(strict.state(), State::Open);

    // A business error of the inner service is returned unchanged and ignored.
    let declines = FuseLayer::new(fuse.clone()).layer(service_fn(|_req: Request<String>| async {
        Err::<Response<String>, _>(io::Error::other("card declined"))
    }));
    for _ in 0..10 {
        let err = call(&declines, "/").await.unwrap_err();
        let inner = err.downcast_ref::<io::Error>().expect("the inner error");
        assert_eq!(inner.to_string(), "card declined");
    }
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().failures.len(), 2);
}

#[tokio::test]
async fn operations_have_circuits_of_their_own() {
    let server = TestServer::start().await;
    server.set_path_mode("/charge", Mode::Status(503));
    let (registry, _mock) = registry(config());
    let layer = FuseLayer::per_operation(registry.clone(), "billing", |req: &Request<String>| {
        req.uri().path()
    });
    let billing = layer.layer(http_client());

    for _ in 0..3 {
        call(&billing, &server.url("/charge"))
            .await
            .expect("a response");
    }
    for _ in 0..5 {
        let err = call(&billing, &server.url("/charge")).await.unwrap_err();
        assert_eq!(open_error(&*err).unwrap().key(), "fuse:billing:/charge");
        let res = call(&billing, &server.url("/refund"))
            .await
            .expect("refunds go on");
        assert_eq!(res.status(), StatusCode::OK);
    }
    assert_eq!(server.requests_to("/charge"), 3);
    assert_eq!(server.requests_to("/refund"), 5);
    assert_eq!(
        registry.get_operation("billing", "/charge").state(),
        State::Open
    );
    assert_eq!(
        registry.get_operation("billing", "/refund").state(),
        State::Closed
    );
}

#[tokio::test]
async fn a_cancelled_probe_releases_its_slot() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, mock) = registry(config());
    let fuse = registry.get("billing");
    let billing = FuseLayer::new(fuse.clone()).layer(http_client());
    for _ in 0..3 {
        call(&billing, &server.url("/")).await.expect("a response");
    }
    assert_eq!(fuse.state(), State::Open);

    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    mock.increment(OPEN);
    let url = server.url("/");
    let mut probe = Box::pin(call(&billing, &url));
    // Poll the probe until the server has its request (it answers in 5 s).
    for _ in 0..100 {
        let pending = tokio::time::timeout(Duration::from_millis(10), &mut probe).await;
        assert!(pending.is_err(), "the probe waits for the slow server");
        if server.requests() == 4 {
            break;
        }
    }
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_open_inflight, 1);
    assert_eq!(server.requests(), 4, "the probe reached the server");

    drop(probe);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(
        snap.half_open_inflight, 0,
        "the dropped probe released its slot"
    );
    assert_eq!(snap.half_open_successes, 0);

    server.set_mode(Mode::Healthy);
    for _ in 0..2 {
        call(&billing, &server.url("/")).await.expect("a probe");
    }
    assert_eq!(fuse.state(), State::Closed);
}

#[tokio::test]
async fn a_server_answers_503_with_retry_after_while_its_downstream_is_open() {
    use axum::response::IntoResponse;

    let downstream = TestServer::start().await;
    downstream.set_mode(Mode::Status(502));
    let (registry, _mock) = registry(config());
    let fuse = registry.get("inventory");
    let inventory = FuseLayer::new(fuse.clone()).layer(http_client());
    let url = downstream.url("/stock");

    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let (inventory, url) = (inventory.clone(), url.clone());
            async move {
                match call(&inventory, &url).await {
                    Ok(res) => res.status().into_response(),
                    Err(err) => match open_error(&*err) {
                        Some(open) => open_response(open).into_response(),
                        None => StatusCode::BAD_GATEWAY.into_response(),
                    },
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = format!("http://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let client = http_client();
    for _ in 0..3 {
        let res = call(&client, &front).await.expect("a response");
        assert_eq!(res.status(), StatusCode::BAD_GATEWAY);
        assert!(res.headers().get(http::header::RETRY_AFTER).is_none());
    }
    let res = call(&client, &front).await.expect("a response");
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(res.headers()[http::header::RETRY_AFTER], "30");
    assert_eq!(downstream.requests(), 3);
    server.abort();
}
