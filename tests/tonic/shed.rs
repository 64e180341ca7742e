//! A call a closed circuit shed (SPEC §11: here a ramp after recovery) as
//! gRPC sees it: `UNAVAILABLE`, a message that says it was shed, no retry
//! pushback, the `OpenError` its source; the inner service never called.

use std::sync::atomic::{AtomicUsize, Ordering};

use fuse_breaker::Grading;

use super::*;

/// A circuit that just recovered: its ramp admits 1 % of calls.
fn recovered() -> Arc<Fuse> {
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .ramp_up(Duration::from_secs(100))
        .ramp_up_floor(1)
        .build()
        .unwrap();
    let (fuse, mock) = common::circuit("ledger", config);
    fuse.force_open();
    mock.increment(Duration::from_secs(30));
    fuse.try_acquire().expect("the probe").success();
    assert_eq!(fuse.state(), State::Closed);
    Arc::new(fuse)
}

#[test]
fn a_shed_call_is_unavailable_without_pushback_and_with_the_open_error() {
    fastrand::seed(0x9_2c);
    let fuse = recovered();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let svc = FuseLayer::new(fuse.clone())
        .classifier(GrpcClassifier::new())
        .layer(service_fn(move |_req: Request<()>| {
            seen.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Status>(trailers_only(Code::Ok)) }
        }));
    let mut shed = 0;
    for _ in 0..50 {
        let Err(err) = run(svc.clone().oneshot(request())) else {
            continue;
        };
        shed += 1;
        // What a tonic client makes of the service's error.
        let status = Status::from_error(err);
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(
            status.message(),
            "circuit fuse:ledger is closed and shed this call (ramp_up); it may be retried at once"
        );
        assert!(
            status.metadata().get(RETRY_PUSHBACK_MS).is_none(),
            "no pushback: {:?}",
            status.metadata()
        );
        let open = status
            .source()
            .and_then(|source| source.downcast_ref::<OpenError>())
            .expect("the OpenError");
        assert_eq!(
            (open.throttled(), open.retry_after()),
            (Some(Grading::RampUp), Duration::ZERO)
        );
    }
    assert!(shed >= 45, "1 % admitted, yet {shed} of 50 shed");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        50 - shed,
        "shed calls never reach it"
    );
    assert_eq!(fuse.state(), State::Closed);

    // An open circuit's rejection keeps its pushback.
    fuse.force_open();
    let err = run(svc.oneshot(request())).unwrap_err();
    let status = Status::from_error(err);
    assert_eq!(status.metadata().get(RETRY_PUSHBACK_MS).unwrap(), "30000");
}
