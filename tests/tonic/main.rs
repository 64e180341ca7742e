//! gRPC classification of the tower layer (feature `tonic`): statuses as
//! errors, in the headers of trailers-only responses and in the trailers at
//! the end of the body; the rejection as tonic sees it (a call a closed
//! circuit shed in `shed`); per-method circuits.

#![cfg(feature = "tonic")]

use std::convert::Infallible;
use std::error::Error as _;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::tower::grpc::{GrpcClassifier, RETRY_PUSHBACK_MS};
use fuse_breaker::tower::{BoxError, FuseLayer, open_error};
use fuse_breaker::{Config, Fuse, OpenError, Registry, State};
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, Full};
use quanta::{Clock, Mock};
use tonic::{Code, Status};
use tower::{Layer, Service, ServiceExt, service_fn};

#[path = "../common/mod.rs"]
mod common;

type Body = http_body_util::combinators::UnsyncBoxBody<&'static [u8], Infallible>;

fn circuit(threshold: u32) -> (Arc<Fuse>, Arc<Mock>) {
    let (fuse, mock) = common::circuit("ledger", common::config(threshold, 1));
    (Arc::new(fuse), mock)
}

fn request() -> Request<()> {
    Request::builder()
        .uri("/ledger.Ledger/Post")
        .body(())
        .unwrap()
}

/// A response whose body is one message and the trailers `grpc-status: code`.
fn with_trailers(code: Code) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", (code as i32).into());
    let body = Full::new(&b"message"[..]).with_trailers(async move { Some(Ok(trailers)) });
    Response::new(body.boxed_unsync())
}

/// A trailers-only response: `grpc-status: code` in the headers.
fn trailers_only(code: Code) -> Response<Body> {
    Response::builder()
        .header("grpc-status", code as i32)
        .body(Full::new(&b""[..]).boxed_unsync())
        .unwrap()
}

/// A service that answers every request with `answer()`.
fn answering<F>(
    answer: F,
) -> impl Service<Request<()>, Response = Response<Body>, Error = BoxError, Future: Send> + Clone
where
    F: Fn() -> Result<Response<Body>, Status> + Clone + Send + 'static,
{
    service_fn(move |_req: Request<()>| {
        let answer = answer.clone();
        async move { answer().map_err(BoxError::from) }
    })
}

fn run<F: Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

#[test]
fn status_errors_count_by_code() {
    for (status, counted) in [
        (Status::unavailable("draining"), true),
        (Status::deadline_exceeded("slow"), true),
        (Status::not_found("no such account"), false),
        (Status::invalid_argument("bad amount"), false),
        (Status::failed_precondition("frozen"), false),
        (Status::internal("bug"), false),
    ] {
        let (fuse, _mock) = circuit(1);
        let layer = FuseLayer::new(fuse.clone()).classifier(GrpcClassifier::new());
        let code = status.code();
        let svc = layer.layer(answering(move || Err(status.clone())));
        let err = run(svc.oneshot(request())).unwrap_err();
        assert_eq!(err.downcast_ref::<Status>().unwrap().code(), code);
        let expected = if counted { State::Open } else { State::Closed };
        assert_eq!(fuse.state(), expected, "{code:?}");
    }
}

#[test]
fn counted_codes_are_configurable() {
    let classifier = GrpcClassifier::new()
        .count(Code::ResourceExhausted)
        .ignore(Code::DeadlineExceeded);
    for (code, expected) in [
        (Code::ResourceExhausted, State::Open),
        (Code::Unavailable, State::Open),
        (Code::DeadlineExceeded, State::Closed),
    ] {
        let (fuse, _mock) = circuit(1);
        let svc = FuseLayer::new(fuse.clone())
            .classifier(classifier)
            .layer(answering(move || Err(Status::new(code, "x"))));
        run(svc.oneshot(request())).unwrap_err();
        assert_eq!(fuse.state(), expected, "{code:?}");
    }
}

#[test]
fn a_status_wrapped_in_another_error_is_found() {
    #[derive(Debug)]
    struct Wrapped(Status);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("call failed")
        }
    }
    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    let (fuse, _mock) = circuit(1);
    let svc = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(service_fn(|_req: Request<()>| async {
            Err::<Response<Body>, _>(Wrapped(Status::unavailable("down")))
        }));
    run(svc.oneshot(request())).unwrap_err();
    assert_eq!(fuse.state(), State::Open);
}

#[test]
fn transport_errors_are_judged_by_the_config() {
    let (fuse, _mock) = circuit(2);
    let svc = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(service_fn(|_req: Request<()>| async {
            Err::<Response<Body>, _>(io::Error::from(io::ErrorKind::ConnectionRefused))
        }));
    run(svc.clone().oneshot(request())).unwrap_err();
    assert_eq!(fuse.snapshot().failures.len(), 1);

    let business = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(service_fn(|_req: Request<()>| async {
            Err::<Response<Body>, _>(io::Error::other("insufficient funds"))
        }));
    run(business.oneshot(request())).unwrap_err();
    assert_eq!(fuse.snapshot().failures.len(), 1);
    run(svc.oneshot(request())).unwrap_err();
    assert_eq!(fuse.state(), State::Open);
}

#[test]
fn trailers_only_responses_are_judged_at_once() {
    for (code, expected_failures, closed) in [
        (Code::Unavailable, 1, true),
        (Code::NotFound, 0, true),
        (Code::Ok, 0, true),
    ] {
        let (fuse, _mock) = circuit(2);
        let svc = FuseLayer::new(fuse.clone())
            .classifier(GrpcClassifier::new())
            .layer(answering(move || Ok(trailers_only(code))));
        let res = run(svc.oneshot(request())).expect("a response");
        assert!(!res.body().holds_permit());
        assert_eq!(
            fuse.snapshot().failures.len(),
            expected_failures,
            "{code:?}"
        );
        assert_eq!(fuse.state() == State::Closed, closed);
    }
}

#[test]
fn a_status_in_the_trailers_is_judged_at_the_end_of_the_body() {
    let (fuse, _mock) = circuit(1);
    let svc = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(answering(|| Ok(with_trailers(Code::Unavailable))));
    let res = run(svc.clone().oneshot(request())).expect("a response");
    assert!(res.body().holds_permit());
    assert_eq!(
        fuse.state(),
        State::Closed,
        "no verdict before the trailers"
    );
    let body = run(res.into_body().collect()).expect("the body");
    assert_eq!(body.trailers().unwrap()["grpc-status"], "14");
    assert_eq!(fuse.state(), State::Open);

    // OK in the trailers is a success: it clears earlier failures.
    let (fuse, _mock) = circuit(3);
    fuse.try_acquire().unwrap().failure();
    let ok = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(answering(|| Ok(with_trailers(Code::Ok))));
    let res = run(ok.oneshot(request())).expect("a response");
    assert_eq!(fuse.snapshot().failures.len(), 1);
    run(res.into_body().collect()).expect("the body");
    assert!(fuse.snapshot().failures.is_empty());
}

#[test]
fn an_http_error_without_grpc_status_is_mapped_to_a_code() {
    for (status, counted) in [(503, true), (502, true), (429, true), (404, false)] {
        let (fuse, _mock) = circuit(1);
        let svc = FuseLayer::new(fuse.clone())
            .classifier(GrpcClassifier::new())
            .layer(answering(move || {
                Ok(Response::builder()
                    .status(status)
                    .body(Full::new(&b""[..]).boxed_unsync())
                    .unwrap())
            }));
        run(svc.oneshot(request())).expect("a response");
        assert_eq!(fuse.state() == State::Open, counted, "HTTP {status}");
    }
}

#[test]
fn a_body_dropped_before_its_trailers_releases_the_probe() {
    let (fuse, mock) = circuit(1);
    fuse.force_open();
    mock.increment(Duration::from_secs(30));
    let svc = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(answering(|| Ok(with_trailers(Code::Ok))));
    let res = run(svc.clone().oneshot(request())).expect("the probe runs");
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_open_inflight, 1, "the body holds the probe");
    let err = run(svc.clone().oneshot(request())).unwrap_err();
    assert!(open_error(&*err).is_some(), "the only probe slot is taken");

    drop(res);
    let snap = fuse.snapshot();
    assert_eq!(snap.half_open_inflight, 0);
    assert_eq!(snap.state, State::HalfOpen);

    let res = run(svc.oneshot(request())).expect("a new probe");
    run(res.into_body().collect()).expect("the body");
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn the_rejection_is_unavailable_with_pushback_and_the_open_error() {
    let (fuse, mock) = circuit(1);
    fuse.force_open();
    mock.increment(Duration::from_secs(29) + Duration::from_micros(500));
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    let svc = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(service_fn(move |_req: Request<()>| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok::<_, Status>(trailers_only(Code::Ok)) }
        }));
    let err = run(svc.oneshot(request())).unwrap_err();
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);

    // What a tonic client makes of the service's error.
    let status = Status::from_error(err);
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(status.metadata().get(RETRY_PUSHBACK_MS).unwrap(), "1000");
    let open = status
        .source()
        .and_then(|source| source.downcast_ref::<OpenError>())
        .expect("the OpenError");
    assert_eq!(open.key(), "fuse:ledger");
    assert_eq!(open.retry_after(), Duration::from_micros(999_500));
}

#[test]
fn methods_have_circuits_of_their_own() {
    let (clock, _mock) = Clock::mock();
    let registry = Arc::new(
        Registry::builder()
            .defaults(Config::builder().failure_threshold(1).build().unwrap())
            .clock(clock)
            .build()
            .unwrap(),
    );
    let layer = FuseLayer::per_operation(registry.clone(), "ledger", |req: &Request<()>| {
        req.uri().path()
    })
    .classifier(GrpcClassifier::new());
    let svc = layer.layer(service_fn(|req: Request<()>| async move {
        if req.uri().path().ends_with("/Post") {
            Err(Status::unavailable("posting is down"))
        } else {
            Ok(trailers_only(Code::Ok))
        }
    }));
    let call = |method: &str| {
        let req = Request::builder().uri(method).body(()).unwrap();
        run(svc.clone().oneshot(req))
    };
    assert!(open_error(&*call("/ledger.Ledger/Post").unwrap_err()).is_none());
    assert!(open_error(&*call("/ledger.Ledger/Post").unwrap_err()).is_some());
    assert!(call("/ledger.Ledger/Balance").is_ok());
    assert_eq!(
        registry
            .get_operation("ledger", "/ledger.Ledger/Post")
            .state(),
        State::Open
    );
    assert_eq!(
        registry
            .get_operation("ledger", "/ledger.Ledger/Balance")
            .state(),
        State::Closed
    );
}

mod through_a_tonic_client;

#[cfg(feature = "store")]
mod over_a_shared_circuit;

mod pushback;

mod shed;
