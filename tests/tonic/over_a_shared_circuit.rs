//! The same classifier over a circuit a fleet shares (`FuseLayer`
//! on a `MemoryStore`): statuses as errors, in the headers and in the
//! trailers, and the refusal as tonic sees it. A second `SharedFuse` on
//! the same store is another process reading the circuit.

use std::sync::atomic::{AtomicUsize, Ordering};

use fuse_breaker::config::Fallback;
use fuse_breaker::store::{MemoryStore, Refusal, SharedFuse, StoreError};
use fuse_breaker::tower::FuseLayer;

use super::*;

struct Fleet {
    store: Arc<MemoryStore>,
    here: Arc<SharedFuse>,
    there: SharedFuse,
}

fn new_fleet(threshold: u32) -> Fleet {
    let store = Arc::new(MemoryStore::frozen());
    let shared = |store: &Arc<MemoryStore>| {
        fuse_breaker::Fuse::builder("ledger")
            .store(store.clone())
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
        let svc = FuseLayer::new(fleet.here.clone())
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
    let svc = FuseLayer::new(fleet.here.clone())
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
    let ok = FuseLayer::new(tolerant.here.clone())
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
        let svc = FuseLayer::new(fleet.here.clone())
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
        fuse_breaker::Fuse::builder("ledger")
            .store(store.clone())
            .config(common::config(1, 1))
            .build()
    };
    let (here, there) = (Arc::new(shared()), shared());
    let svc = FuseLayer::new(here)
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
    let svc = FuseLayer::new(fleet.here.clone())
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
    let svc = FuseLayer::new(fleet.here.clone())
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
    let fuse = fuse_breaker::Fuse::builder("ledger")
        .store(store.clone())
        .fallback(Fallback::Reject)
        .build();
    let svc = FuseLayer::new(Arc::new(fuse))
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
