//! gRPC classification of the tower layer (feature `tonic`): statuses as
//! errors, in the headers of trailers-only responses and in the trailers at
//! the end of the body; the rejection as tonic sees it; per-method circuits.

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

mod through_a_tonic_client {
    //! tonic's own client (`tonic::client::Grpc`) over the layer, with a
    //! codec of raw bytes and a service that frames gRPC answers by hand.

    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::{Buf, BufMut, Bytes};
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

    use super::*;

    #[derive(Clone, Copy, Default)]
    struct Raw;

    impl Encoder for Raw {
        type Item = Bytes;
        type Error = Status;
        fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
            dst.put(item);
            Ok(())
        }
    }

    impl Decoder for Raw {
        type Item = Bytes;
        type Error = Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
            Ok(Some(src.copy_to_bytes(src.remaining())))
        }
    }

    impl Codec for Raw {
        type Encode = Bytes;
        type Decode = Bytes;
        type Encoder = Raw;
        type Decoder = Raw;
        fn encoder(&mut self) -> Raw {
            Raw
        }
        fn decoder(&mut self) -> Raw {
            Raw
        }
    }

    /// A unary answer: one framed message, then `grpc-status: code`.
    fn answer(
        code: Code,
    ) -> Response<http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>> {
        let mut frame = vec![0u8];
        frame.extend_from_slice(&4u32.to_be_bytes());
        frame.extend_from_slice(b"pong");
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", (code as i32).into());
        let body = Full::new(Bytes::from(frame)).with_trailers(async move { Some(Ok(trailers)) });
        Response::builder()
            .header("content-type", "application/grpc")
            .body(body.boxed_unsync())
            .unwrap()
    }

    fn call<S>(grpc: &mut tonic::client::Grpc<S>) -> Result<Bytes, Status>
    where
        S: tonic::client::GrpcService<tonic::body::Body>,
        S::ResponseBody: http_body::Body<Data = Bytes> + Send + 'static,
        <S::ResponseBody as http_body::Body>::Error: Into<BoxError> + Send,
    {
        let path = http::uri::PathAndQuery::from_static("/ledger.Ledger/Post");
        run(async {
            grpc.ready()
                .await
                .map_err(|e| Status::from_error(e.into()))?;
            grpc.unary(tonic::Request::new(Bytes::from_static(b"ping")), path, Raw)
                .await
                .map(tonic::Response::into_inner)
        })
    }

    #[test]
    fn statuses_in_trailers_and_rejections_reach_the_client() {
        let (fuse, _mock) = circuit(1);
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let code = Arc::new(std::sync::Mutex::new(Code::Ok));
        let answering = code.clone();
        let svc = FuseLayer::new(fuse.clone())
            .classifier(GrpcClassifier::new())
            .layer(service_fn(move |_req: Request<tonic::body::Body>| {
                seen.fetch_add(1, Ordering::SeqCst);
                let code = *answering.lock().unwrap();
                async move { Ok::<_, Infallible>(answer(code)) }
            }));
        let mut grpc = tonic::client::Grpc::new(svc);

        assert_eq!(call(&mut grpc).unwrap(), "pong");
        assert_eq!(fuse.state(), State::Closed);

        *code.lock().unwrap() = Code::Unavailable;
        let status = call(&mut grpc).unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(fuse.state(), State::Open, "the trailers opened the circuit");
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        let status = call(&mut grpc).unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert!(status.metadata().get(RETRY_PUSHBACK_MS).is_some());
        let open = status.source().and_then(|s| s.downcast_ref::<OpenError>());
        assert_eq!(open.map(OpenError::key), Some("fuse:ledger"));
        assert_eq!(calls.load(Ordering::SeqCst), 2, "nothing sent while open");
    }
}

#[cfg(feature = "store")]
mod over_a_shared_circuit {
    //! The same classifier over a circuit a fleet shares (`SharedFuseLayer`
    //! on a `MemoryStore`): statuses as errors, in the headers and in the
    //! trailers, and the refusal as tonic sees it. A second `SharedFuse` on
    //! the same store is another process reading the circuit.

    use std::sync::atomic::{AtomicUsize, Ordering};

    use fuse_breaker::Fallback;
    use fuse_breaker::store::{MemoryStore, Refusal, SharedFuse, StoreError};
    use fuse_breaker::tower::SharedFuseLayer;

    use super::*;

    struct Fleet {
        store: Arc<MemoryStore>,
        here: Arc<SharedFuse>,
        there: SharedFuse,
    }

    fn new_fleet(threshold: u32) -> Fleet {
        let store = Arc::new(MemoryStore::frozen());
        let shared = |store: &Arc<MemoryStore>| {
            SharedFuse::builder("ledger", store.clone())
                .config(common::config(threshold, 1))
                .build()
        };
        Fleet {
            here: Arc::new(shared(&store)),
            there: shared(&store),
            store,
        }
    }

    impl Fleet {
        fn state(&self) -> State {
            run(self.there.state()).expect("the store answers")
        }

        fn failures(&self) -> usize {
            run(self.there.snapshot())
                .expect("the store answers")
                .failures
                .len()
        }
    }

    #[test]
    fn status_errors_count_by_code() {
        for (status, counted) in [
            (Status::unavailable("draining"), true),
            (Status::deadline_exceeded("slow"), true),
            (Status::not_found("no such account"), false),
            (Status::internal("bug"), false),
        ] {
            let fleet = new_fleet(1);
            let code = status.code();
            let svc = SharedFuseLayer::new(fleet.here.clone())
                .classifier(GrpcClassifier::new())
                .layer(answering(move || Err(status.clone())));
            let err = run(svc.oneshot(request())).unwrap_err();
            assert_eq!(err.downcast_ref::<Status>().unwrap().code(), code);
            let expected = if counted { State::Open } else { State::Closed };
            assert_eq!(fleet.state(), expected, "{code:?}");
        }
    }

    #[test]
    fn a_status_in_the_trailers_is_judged_at_the_end_of_the_body() {
        let fleet = new_fleet(1);
        let svc = SharedFuseLayer::new(fleet.here.clone())
            .classifier(GrpcClassifier::new())
            .layer(answering(|| Ok(with_trailers(Code::Unavailable))));
        let res = run(svc.clone().oneshot(request())).expect("a response");
        assert!(res.body().holds_permit());
        assert_eq!(
            fleet.state(),
            State::Closed,
            "no verdict before the trailers"
        );
        let body = run(res.into_body().collect()).expect("the body");
        assert_eq!(body.trailers().unwrap()["grpc-status"], "14");
        assert_eq!(
            fleet.state(),
            State::Open,
            "the trailers opened it for the fleet"
        );

        // OK in the trailers is a success: it clears earlier failures.
        let tolerant = new_fleet(3);
        run(async {
            let permit = tolerant.there.try_acquire().await.expect("a permit");
            permit.failure().await.expect("a recorded failure");
        });
        let ok = SharedFuseLayer::new(tolerant.here.clone())
            .classifier(GrpcClassifier::new())
            .layer(answering(|| Ok(with_trailers(Code::Ok))));
        let res = run(ok.oneshot(request())).expect("a response");
        assert_eq!(tolerant.failures(), 1);
        run(res.into_body().collect()).expect("the body");
        assert_eq!(tolerant.failures(), 0);
    }

    #[test]
    fn trailers_only_responses_and_http_errors_are_judged_at_once() {
        for (response, failures) in [
            (trailers_only(Code::Unavailable), 1),
            (trailers_only(Code::NotFound), 0),
            (trailers_only(Code::Ok), 0),
            (
                Response::builder()
                    .status(503)
                    .body(Full::new(&b""[..]).boxed_unsync())
                    .unwrap(),
                1,
            ),
        ] {
            let fleet = new_fleet(2);
            let answer = Arc::new(std::sync::Mutex::new(Some(response)));
            let svc = SharedFuseLayer::new(fleet.here.clone())
                .classifier(GrpcClassifier::new())
                .layer(service_fn(move |_req: Request<()>| {
                    let res = answer.lock().unwrap().take().expect("one call");
                    async move { Ok::<_, Status>(res) }
                }));
            let res = run(svc.oneshot(request())).expect("a response");
            assert!(!res.body().holds_permit());
            assert_eq!(fleet.failures(), failures);
        }
    }

    /// A store whose every round trip is pending once before it answers:
    /// a store over the network, as the futures see it.
    #[derive(Debug)]
    struct Slow(MemoryStore);

    async fn pending_once() {
        let mut yielded = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut yielded, true) {
                std::task::Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await;
    }

    #[async_trait::async_trait]
    impl fuse_breaker::store::Store for Slow {
        fn name(&self) -> &'static str {
            "slow"
        }

        async fn load(&self, key: &str) -> Result<fuse_breaker::store::Loaded, StoreError> {
            pending_once().await;
            self.0.load(key).await
        }

        async fn swap(
            &self,
            key: &str,
            expected: Option<&[u8]>,
            new: &[u8],
            ttl: Duration,
            announce: bool,
        ) -> Result<fuse_breaker::store::Swap, StoreError> {
            pending_once().await;
            self.0.swap(key, expected, new, ttl, announce).await
        }

        async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
            pending_once().await;
            self.0.delete(key, announce).await
        }
    }

    #[test]
    fn the_trailers_wait_for_the_store_to_record_their_verdict() {
        let store = Arc::new(Slow(MemoryStore::frozen()));
        let shared = || {
            SharedFuse::builder("ledger", store.clone())
                .config(common::config(1, 1))
                .build()
        };
        let (here, there) = (Arc::new(shared()), shared());
        let svc = SharedFuseLayer::new(here)
            .classifier(GrpcClassifier::new())
            .layer(answering(|| Ok(with_trailers(Code::Unavailable))));
        let res = run(svc.clone().oneshot(request())).expect("a response");
        assert!(res.body().holds_permit());

        let mut body = std::pin::pin!(res.into_body());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut polls = 0;
        let trailers = loop {
            polls += 1;
            match http_body::Body::poll_frame(body.as_mut(), &mut cx) {
                std::task::Poll::Ready(Some(Ok(frame))) if frame.is_trailers() => break frame,
                std::task::Poll::Ready(Some(Ok(_))) => {}
                std::task::Poll::Ready(other) => panic!("no trailers: {other:?}"),
                std::task::Poll::Pending => {
                    assert!(body.holds_permit(), "the verdict is being recorded");
                }
            }
            assert!(polls < 100, "the round trip ends");
        };
        assert!(polls > 2, "the store was pending: {polls} polls");
        assert!(!body.holds_permit());
        assert_eq!(trailers.into_trailers().unwrap()["grpc-status"], "14");
        assert_eq!(
            run(there.state()).unwrap(),
            State::Open,
            "recorded before the trailers"
        );
        let err = run(svc.oneshot(request())).unwrap_err();
        assert!(open_error(&*err).is_some());
    }

    #[test]
    fn a_body_dropped_before_its_trailers_records_nothing() {
        let fleet = new_fleet(1);
        let svc = SharedFuseLayer::new(fleet.here.clone())
            .classifier(GrpcClassifier::new())
            .layer(answering(|| Ok(with_trailers(Code::Unavailable))));
        let res = run(svc.oneshot(request())).expect("a response");
        drop(res);
        assert_eq!(fleet.state(), State::Closed);
        assert_eq!(fleet.failures(), 0);
    }

    #[test]
    fn the_refusal_is_unavailable_with_pushback_and_the_open_error() {
        let fleet = new_fleet(1);
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let svc = SharedFuseLayer::new(fleet.here.clone())
            .classifier(GrpcClassifier::new())
            .layer(service_fn(move |_req: Request<()>| {
                seen.fetch_add(1, Ordering::SeqCst);
                async { Err::<Response<Body>, _>(Status::unavailable("down")) }
            }));
        run(svc.clone().oneshot(request())).unwrap_err();
        assert_eq!(fleet.state(), State::Open);
        fleet.store.advance(Duration::from_secs(29));

        let err = run(svc.oneshot(request())).unwrap_err();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "nothing sent while open");
        let status = Status::from_error(err);
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.metadata().get(RETRY_PUSHBACK_MS).unwrap(), "1000");
        let refusal = status
            .source()
            .and_then(|source| source.downcast_ref::<Refusal>())
            .expect("the refusal");
        let open = refusal.open_error().expect("the OpenError");
        assert_eq!(open.key(), "fuse:ledger");
        assert_eq!(open.retry_after(), Duration::from_secs(1));
    }

    #[test]
    fn a_store_that_cannot_decide_is_unavailable_too() {
        let store = Arc::new(MemoryStore::frozen());
        let fuse = SharedFuse::builder("ledger", store.clone())
            .fallback(Fallback::Reject)
            .build();
        let svc = SharedFuseLayer::new(Arc::new(fuse))
            .classifier(GrpcClassifier::new())
            .layer(answering(|| Ok(trailers_only(Code::Ok))));
        store.set_unreachable(true);
        let err = run(svc.oneshot(request())).unwrap_err();
        let status = err.downcast_ref::<Status>().expect("a status");
        assert_eq!(status.code(), Code::Unavailable);
        assert!(status.metadata().get(RETRY_PUSHBACK_MS).is_none());
        let refusal = status.source().and_then(|s| s.downcast_ref::<Refusal>());
        assert!(refusal.is_some_and(|refusal| refusal.open_error().is_none()));
        assert!(open_error(&*err).is_none());
    }
}

mod pushback {
    //! The server's hint of when to come back (SPEC §10): the
    //! `grpc-retry-pushback-ms` beside a counted status, wherever the
    //! status is (trailers, headers, a `tonic::Status`), keeps the circuit
    //! it opens open that long, capped at `max_open_duration`; a negative
    //! one ("do not retry") is no hint, a malformed one is ignored and
    //! counted.

    use super::*;

    /// The most an opening lasts under [`hinted`].
    const MAX: Duration = Duration::from_mins(10);

    /// Threshold 1, open 30 s, at most [`MAX`].
    fn hinted() -> (Arc<Fuse>, Arc<Mock>) {
        let config = Config::builder()
            .failure_threshold(1)
            .open_duration(Duration::from_secs(30))
            .max_open_duration(MAX)
            .build()
            .unwrap();
        let (fuse, mock) = common::circuit("ledger", config);
        (Arc::new(fuse), mock)
    }

    fn metadata(code: Code, pushback: &'static str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert("grpc-status", (code as i32).into());
        map.insert(RETRY_PUSHBACK_MS, http::HeaderValue::from_static(pushback));
        map
    }

    /// Where a status and its pushback travel.
    #[derive(Clone, Copy, Debug)]
    enum Place {
        /// In the trailers at the end of the body.
        Trailers,
        /// In the headers of a trailers-only response.
        Headers,
        /// In a `tonic::Status` error.
        Error,
    }

    const PLACES: [Place; 3] = [Place::Trailers, Place::Headers, Place::Error];

    /// An answer that ends with `code` and `pushback` in `place`.
    fn answer(place: Place, code: Code, pushback: &'static str) -> Result<Response<Body>, Status> {
        let metadata = metadata(code, pushback);
        match place {
            Place::Trailers => {
                let body =
                    Full::new(&b"message"[..]).with_trailers(async move { Some(Ok(metadata)) });
                Ok(Response::new(body.boxed_unsync()))
            }
            Place::Headers => {
                let mut res = Response::new(Full::new(&b""[..]).boxed_unsync());
                *res.headers_mut() = metadata;
                Ok(res)
            }
            Place::Error => Err(Status::from_header_map(&metadata).expect("a status in the map")),
        }
    }

    /// A call through a fresh circuit that ends with `code` and `pushback`
    /// in `place`, the body read to its end; the circuit.
    fn ended(place: Place, code: Code, pushback: &'static str) -> Arc<Fuse> {
        let (fuse, _mock) = hinted();
        let svc = FuseLayer::new(fuse.clone())
            .classifier(GrpcClassifier::new())
            .layer(answering(move || answer(place, code, pushback)));
        if let Ok(res) = run(svc.oneshot(request())) {
            run(res.into_body().collect()).expect("the body");
        }
        fuse
    }

    #[test]
    fn the_pushback_of_a_counted_status_keeps_the_circuit_open_that_long() {
        for place in PLACES {
            let fuse = ended(place, Code::Unavailable, "120000");
            let snap = fuse.snapshot();
            assert_eq!(snap.state, State::Open, "{place:?}");
            assert_eq!(snap.open_for, Some(Duration::from_mins(2)), "{place:?}");
            let err = fuse.try_acquire().unwrap_err();
            assert_eq!(err.retry_after(), Duration::from_mins(2), "{place:?}");

            // Less than the configured duration: the configured duration.
            let fuse = ended(place, Code::DeadlineExceeded, "1500");
            assert_eq!(fuse.snapshot().open_for, Some(Duration::from_secs(30)));
            // Beyond max_open_duration, however large: capped.
            let fuse = ended(place, Code::Unavailable, "99999999999999999999999");
            assert_eq!(fuse.snapshot().open_for, Some(MAX), "{place:?}");
        }
    }

    #[test]
    fn the_pushback_of_an_uncounted_status_is_not_read() {
        for place in PLACES {
            let fuse = ended(place, Code::NotFound, "soon");
            assert_eq!(fuse.state(), State::Closed, "{place:?}");
            assert!(fuse.snapshot().failures.is_empty());
        }
    }

    #[test]
    fn do_not_retry_is_no_hint_and_garbage_is_ignored_and_counted() {
        #[cfg(feature = "metrics")]
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        #[cfg(feature = "metrics")]
        let snapshotter = recorder.snapshotter();
        #[cfg(feature = "metrics")]
        let _local = metrics::set_default_local_recorder(&recorder);
        for place in PLACES {
            for pushback in ["-1", "soon", "", "1.5"] {
                let fuse = ended(place, Code::Unavailable, pushback);
                let open_for = fuse.snapshot().open_for;
                assert_eq!(
                    open_for,
                    Some(Duration::from_secs(30)),
                    "{place:?} {pushback:?}"
                );
            }
        }
        #[cfg(feature = "metrics")]
        {
            let counted: u64 = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .filter_map(|(key, _, _, value)| {
                    let key = key.key();
                    let label = |name: &str, value: &str| {
                        key.labels().any(|l| l.key() == name && l.value() == value)
                    };
                    let ours = key.name() == "fuse_hints_malformed_total"
                        && label("key", "fuse:ledger")
                        && label("header", RETRY_PUSHBACK_MS);
                    match value {
                        metrics_util::debugging::DebugValue::Counter(n) if ours => Some(n),
                        _ => None,
                    }
                })
                .sum();
            // Three malformed values in each of three places; "-1" is not one.
            assert_eq!(counted, 9);
        }
    }

    #[test]
    fn a_proxy_error_without_grpc_status_carries_its_retry_after() {
        for (headers, open_for) in [
            (&[("retry-after", "120")][..], Duration::from_mins(2)),
            // The pushback wins over an HTTP Retry-After.
            (
                &[("retry-after", "120"), (RETRY_PUSHBACK_MS, "240000")],
                Duration::from_mins(4),
            ),
        ] {
            let (fuse, _mock) = hinted();
            let svc = FuseLayer::new(fuse.clone())
                .classifier(GrpcClassifier::new())
                .layer(answering(move || {
                    let mut res = Response::builder().status(503);
                    for (name, value) in headers {
                        res = res.header(*name, *value);
                    }
                    Ok(res.body(Full::new(&b""[..]).boxed_unsync()).unwrap())
                }));
            run(svc.oneshot(request())).expect("a response");
            assert_eq!(fuse.snapshot().open_for, Some(open_for), "{headers:?}");
        }
    }

    #[cfg(feature = "store")]
    #[test]
    fn a_shared_circuit_opens_for_the_pushback_in_every_process() {
        use fuse_breaker::store::{MemoryStore, SharedFuse};
        use fuse_breaker::tower::SharedFuseLayer;

        for place in PLACES {
            let store = Arc::new(MemoryStore::frozen());
            let shared = || {
                SharedFuse::builder("ledger", store.clone())
                    .config(hinted().0.config().clone())
                    .build()
            };
            let (here, there) = (Arc::new(shared()), shared());
            let svc = SharedFuseLayer::new(here)
                .classifier(GrpcClassifier::new())
                .layer(answering(move || {
                    answer(place, Code::Unavailable, "120000")
                }));
            if let Ok(res) = run(svc.oneshot(request())) {
                run(res.into_body().collect()).expect("the body");
            }
            let snap = run(there.snapshot()).expect("the store answers");
            assert_eq!(snap.state, State::Open, "{place:?}");
            assert_eq!(snap.open_for, Some(Duration::from_mins(2)), "{place:?}");
        }
    }
}
