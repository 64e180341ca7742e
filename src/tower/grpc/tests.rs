use std::time::Duration;

use super::*;

fn with(entries: &[(&'static str, &'static str)]) -> HeaderMap {
    entries
        .iter()
        .map(|(name, value)| {
            (
                http::HeaderName::from_static(name),
                http::HeaderValue::from_static(value),
            )
        })
        .collect()
}

#[test]
fn the_pushback_of_a_failed_call_is_its_hint() {
    let grpc = GrpcClassifier::new();
    let config = Config::default();
    let failed = with(&[("grpc-status", "14"), (RETRY_PUSHBACK_MS, "1500")]);
    let c = grpc.classify_eos(Some(&failed), &config);
    assert_eq!(c.verdict(), Verdict::Failure);
    assert_eq!(c.retry_after(), Some(Duration::from_millis(1500)));

    // In the headers of a trailers-only response too.
    let mut res = http::Response::new(());
    *res.headers_mut() = failed;
    assert_eq!(grpc.classify_response(&res, &config), Classified::Ready(c));

    for (entries, hint, malformed) in [
        // OK and uncounted codes carry no hint; "do not retry" is none.
        (
            &[("grpc-status", "0"), (RETRY_PUSHBACK_MS, "10")][..],
            None,
            None,
        ),
        (
            &[("grpc-status", "5"), (RETRY_PUSHBACK_MS, "20")][..],
            None,
            None,
        ),
        (
            &[("grpc-status", "14"), (RETRY_PUSHBACK_MS, "-1")][..],
            None,
            None,
        ),
        (
            &[
                ("grpc-status", "4"),
                (RETRY_PUSHBACK_MS, "99999999999999999999"),
            ][..],
            Some(Duration::from_millis(u64::MAX)),
            None,
        ),
        // Garbage is none, and marked.
        (
            &[("grpc-status", "14"), (RETRY_PUSHBACK_MS, "soon")][..],
            None,
            Some(RETRY_PUSHBACK_MS),
        ),
        (
            &[("grpc-status", "14"), (RETRY_PUSHBACK_MS, "")][..],
            None,
            Some(RETRY_PUSHBACK_MS),
        ),
        // An HTTP Retry-After beside a gRPC status is not gRPC's hint.
        (
            &[("grpc-status", "14"), ("retry-after", "30")][..],
            None,
            None,
        ),
    ] {
        let c = grpc.classify_eos(Some(&with(entries)), &config);
        assert_eq!(c.retry_after(), hint, "{entries:?}");
        assert_eq!(c.malformed_hint(), malformed, "{entries:?}");
    }
}

#[test]
fn an_http_error_carries_its_pushback_or_its_retry_after() {
    let grpc = GrpcClassifier::new();
    let config = Config::default();
    let classify = |status: u16, entries: &[(&'static str, &'static str)]| {
        let mut res = http::Response::new(());
        *res.status_mut() = StatusCode::from_u16(status).unwrap();
        *res.headers_mut() = with(entries);
        match grpc.classify_response(&res, &config) {
            Classified::Ready(c) => c,
            Classified::RequiresEos(_) => panic!("judged at once"),
        }
    };
    let secs = Duration::from_secs;
    assert_eq!(
        classify(503, &[("retry-after", "30")]).retry_after(),
        Some(secs(30))
    );
    assert_eq!(
        classify(503, &[("retry-after", "30"), (RETRY_PUSHBACK_MS, "500")]).retry_after(),
        Some(Duration::from_millis(500))
    );
    let garbled = classify(429, &[("retry-after", "later")]);
    assert_eq!(garbled.retry_after(), None);
    assert_eq!(garbled.malformed_hint(), Some("retry-after"));
    // 404 is UNIMPLEMENTED: not counted, not read.
    let ignored = classify(404, &[("retry-after", "later")]);
    assert_eq!(ignored.verdict(), Verdict::Ignore);
    assert_eq!(ignored.malformed_hint(), None);
}

#[test]
fn a_status_error_carries_its_pushback() {
    let mut status = Status::unavailable("draining");
    status
        .metadata_mut()
        .insert(RETRY_PUSHBACK_MS, 250u64.into());
    let error: BoxError = Box::new(status);
    let c = ClassifyResponse::<http::Response<()>>::classify_error(
        &GrpcClassifier::new(),
        &error,
        &Config::default(),
    );
    assert_eq!(c.verdict(), Verdict::Failure);
    assert_eq!(c.retry_after(), Some(Duration::from_millis(250)));
}
