//! The tower layer: hyper's client behind `FuseLayer`.

use std::io;
use std::sync::Arc;

use fuse_breaker::tower::{BoxError, FuseLayer, open_error, open_response};
use fuse_breaker::{Fuse, Registry, State, classify::classify_error};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt, service_fn};

use crate::common::server::{Mode, TestServer};
use crate::common::{integration_config, mock_registry};
use crate::{Client, Outcome, TIMEOUT};

/// A real HTTP client as a tower service: hyper's legacy client, with a
/// timeout that fails with `io::ErrorKind::TimedOut`.
fn http_client() -> impl Service<
    Request<String>,
    Response = Response<Incoming>,
    Error = BoxError,
    Future = impl Future<Output = Result<Response<Incoming>, BoxError>> + Send,
> + Clone
+ Send {
    let client: Hyper<HttpConnector, String> = Hyper::builder(TokioExecutor::new()).build_http();
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

async fn call<S>(svc: &S, url: &str) -> Result<S::Response, BoxError>
where
    S: Service<Request<String>, Error = BoxError> + Clone,
{
    let req = Request::builder()
        .uri(url)
        .body(String::new())
        .expect("a valid request");
    svc.clone().oneshot(req).await
}

/// What a call through the layer came to.
fn outcome<B>(result: Result<Response<B>, BoxError>) -> Outcome {
    match result {
        Ok(res) => Outcome::Status(res.status().as_u16()),
        Err(err) => match open_error(&*err) {
            Some(open) => Outcome::of(open),
            None => Outcome::Failed(classify_error(&*err)),
        },
    }
}

/// hyper behind `FuseLayer::new(registry.get(name))`.
pub(crate) struct Tower(BoxCloneService<Request<String>, Response<Incoming>, BoxError>);

impl Client for Tower {
    fn new(registry: Arc<Registry>, name: &str) -> Self {
        Tower(BoxCloneService::new(
            FuseLayer::new(registry.get(name)).layer(http_client()),
        ))
    }

    async fn get(&self, url: String) -> Outcome {
        outcome(call(&self.0, &url).await)
    }
}

each_scenario!(Tower);

#[tokio::test(start_paused = true)]
async fn the_open_error_is_an_open_error_in_the_box() {
    let (registry, _mock) = mock_registry(integration_config());
    let fuse = registry.get("billing");
    fuse.force_open();
    let billing = FuseLayer::new(fuse).layer(http_client());
    let err = call(&billing, "http://127.0.0.1:9/").await.unwrap_err();
    assert!(err.downcast_ref::<fuse_breaker::OpenError>().is_some());
}

#[tokio::test(start_paused = true)]
async fn a_business_error_of_the_inner_service_is_returned_unchanged_and_ignored() {
    let fuse = Arc::new(Fuse::new("billing", integration_config()));
    let declines = FuseLayer::new(fuse.clone()).layer(service_fn(|_req: Request<String>| async {
        Err::<Response<String>, _>(io::Error::other("card declined"))
    }));
    for _ in 0..10 {
        let err = call(&declines, "/").await.unwrap_err();
        let inner = err.downcast_ref::<io::Error>().expect("the inner error");
        assert_eq!(inner.to_string(), "card declined");
    }
    assert_eq!(fuse.state(), State::Closed);
    assert!(fuse.snapshot().failures.is_empty());
}

#[tokio::test(start_paused = true)]
async fn operations_have_circuits_of_their_own() {
    let server = TestServer::start().await;
    server.set_path_mode("/charge", Mode::Status(503));
    let (registry, _mock) = mock_registry(integration_config());
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

#[tokio::test(start_paused = true)]
async fn a_server_answers_503_with_retry_after_while_its_downstream_is_open() {
    use axum::response::IntoResponse;

    let downstream = TestServer::start().await;
    downstream.set_mode(Mode::Status(502));
    let (registry, _mock) = mock_registry(integration_config());
    let inventory = FuseLayer::new(registry.get("inventory")).layer(http_client());
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

/// A server in front of a downstream its circuit sheds calls of (SPEC
/// §11, a ramp after recovery): `503` with `Retry-After: 0` and a body
/// that says so, where an open circuit's answer counts its cooldown; the
/// service's error is the `OpenError`, throttled.
#[tokio::test(start_paused = true)]
async fn a_server_answers_503_with_retry_after_0_when_its_downstream_sheds_the_call() {
    use axum::response::IntoResponse;
    use fuse_breaker::Grading;

    let downstream = TestServer::start().await;
    let (registry, mock) = mock_registry(crate::graded::ramping());
    let fuse = registry.get("inventory");
    let inventory = FuseLayer::new(fuse.clone()).layer(http_client());
    let url = downstream.url("/stock");
    crate::graded::recovered(&fuse, &mock, async {
        outcome(call(&inventory, &url).await)
    })
    .await;

    // The service's own error: the rejection, throttled, nothing to wait.
    let err = std::iter::repeat_with(|| fuse.try_acquire())
        .find_map(Result::err)
        .expect("the ramp sheds");
    assert_eq!(err.throttled(), Some(Grading::RampUp));
    let mut through = 1; // the probe
    let err = loop {
        match call(&inventory, &url).await {
            Ok(_) => through += 1,
            Err(err) => break err,
        }
    };
    let open = open_error(&*err).expect("an OpenError");
    assert_eq!(
        (open.throttled(), open.retry_after()),
        (Some(Grading::RampUp), std::time::Duration::ZERO)
    );
    assert!(err.downcast_ref::<fuse_breaker::OpenError>().is_some());

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

    // The front's handler runs on the runtime's thread: seeded above.
    let client = http_client();
    let mut answers = std::collections::BTreeMap::<u16, usize>::new();
    for _ in 0..40 {
        let res = call(&client, &front).await.expect("a response");
        *answers.entry(res.status().as_u16()).or_default() += 1;
        if res.status() == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(res.headers()[http::header::RETRY_AFTER], "0");
            let body = http_body_util::BodyExt::collect(res.into_body())
                .await
                .expect("the body")
                .to_bytes();
            assert_eq!(
                String::from_utf8_lossy(&body),
                "circuit fuse:inventory is closed and shed this call (ramp_up); \
                 it may be retried at once"
            );
        }
    }
    assert!(answers.get(&503) >= Some(&30), "{answers:?}");
    assert_eq!(
        downstream.requests(),
        through + answers.get(&200).copied().unwrap_or(0),
        "{answers:?}"
    );
    assert_eq!(fuse.state(), State::Closed);
    server.abort();
}

#[cfg(feature = "store")]
#[tokio::test(start_paused = true)]
async fn a_shared_circuit_opens_for_the_hint_in_every_process() {
    use fuse_breaker::store::MemoryStore;

    let server = TestServer::start().await;
    let store = Arc::new(MemoryStore::frozen());
    // Two processes' circuits of each dependency, on one store.
    let circuit = |name: &str| {
        Arc::new(
            fuse_breaker::Fuse::builder(name)
                .store(store.clone())
                .config(crate::hints::hinted(1))
                .build(),
        )
    };
    for (name, headers, open_for) in [
        ("billing", crate::hints::IN_120_S, crate::common::secs(120)),
        ("ledger", crate::hints::GARBLED, crate::OPEN),
    ] {
        let (here, there) = (circuit(name), circuit(name));
        server.set_mode(Mode::Headers(503, headers));
        let svc = FuseLayer::new(here).layer(http_client());
        let res = call(&svc, &server.url("/")).await.expect("a response");
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        let snap = there.snapshot().await.expect("the store answers");
        assert_eq!(snap.state, State::Open, "{name}");
        assert_eq!(snap.open_for, Some(open_for), "{name}");
    }
}

/// A request body that fails: hyper reports the caller's own error
/// (`is_user`), which is not the upstream's and is ignored, however often.
#[tokio::test(start_paused = true)]
async fn a_request_body_that_fails_is_the_callers_error_and_ignored() {
    use bytes::Bytes;
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    type Failing = StreamBody<futures::stream::Iter<std::vec::IntoIter<io::Result<Frame<Bytes>>>>>;

    let server = TestServer::start().await;
    let fuse = Arc::new(Fuse::new("billing", integration_config()));
    let client: Hyper<HttpConnector, Failing> = Hyper::builder(TokioExecutor::new()).build_http();
    let upload = FuseLayer::new(fuse.clone()).layer(client);
    for n in 0..10 {
        let body = StreamBody::new(futures::stream::iter(vec![Err(io::Error::other(
            "the caller's file went away",
        ))]));
        let req = Request::post(server.url("/upload"))
            .body(body)
            .expect("a valid request");
        let err = upload.clone().oneshot(req).await.unwrap_err();
        let hyper = err
            .downcast_ref::<hyper_util::client::legacy::Error>()
            .and_then(|e| std::error::Error::source(e)?.downcast_ref::<hyper::Error>())
            .unwrap_or_else(|| panic!("request {n}: not hyper's error: {err:?}"));
        assert!(hyper.is_user(), "request {n}: {hyper:?}");
        assert_eq!(
            classify_error(&*err),
            fuse_breaker::classify::FailureKind::Other,
            "request {n}"
        );
    }
    assert_eq!(fuse.state(), State::Closed);
    assert!(fuse.snapshot().failures.is_empty());
}
