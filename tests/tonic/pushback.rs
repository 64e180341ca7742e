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
            let body = Full::new(&b"message"[..]).with_trailers(async move { Some(Ok(metadata)) });
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
    use fuse_breaker::store::MemoryStore;
    use fuse_breaker::tower::FuseLayer;

    for place in PLACES {
        let store = Arc::new(MemoryStore::frozen());
        let shared = || {
            fuse_breaker::Fuse::builder("ledger")
                .store(store.clone())
                .config(hinted().0.config().clone())
                .build()
        };
        let (here, there) = (Arc::new(shared()), shared());
        let svc = FuseLayer::new(here)
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
