use super::*;

fn response(status: u16, retry_after: Option<&str>) -> http::Response<()> {
    let mut builder = http::Response::builder().status(status);
    if let Some(value) = retry_after {
        builder = builder.header(http::header::RETRY_AFTER, value);
    }
    builder.body(()).unwrap()
}

fn classify(res: &http::Response<()>) -> Classification {
    match DefaultClassifier.classify_response(res, &Config::default()) {
        Classified::Ready(c) => c,
    }
}

#[test]
fn the_default_rules_are_the_status_rules() {
    let config = Config::default();
    for status in [200, 204, 301, 304, 400, 404, 429, 500, 501, 502, 503, 504] {
        let c = classify(&response(status, None));
        assert_eq!(
            c.verdict(),
            Verdict::for_status(status, &config),
            "{status}"
        );
        assert_eq!(c.retry_after(), None, "{status}");
    }
}

#[test]
fn the_retry_after_of_a_counted_failure_is_its_hint() {
    let secs = Duration::from_secs;
    for (status, value, hint, malformed) in [
        (503, "120", Some(secs(120)), None),
        (502, "7", Some(secs(7)), None),
        (504, "0", Some(secs(0)), None),
        // A date long past: come back now.
        (503, "Sun, 06 Nov 1994 08:49:37 GMT", Some(secs(0)), None),
        (503, "99999999999999999999999", Some(secs(u64::MAX)), None),
        // Unreadable: no hint, marked.
        (503, "+5", None, Some("retry-after")),
        (503, "1.5", None, Some("retry-after")),
        (503, "", None, Some("retry-after")),
        // Not a counted failure: not read.
        (429, "30", None, None),
        (404, "soon", None, None),
        (200, "30", None, None),
    ] {
        let c = classify(&response(status, Some(value)));
        assert_eq!(c.retry_after(), hint, "{status} {value:?}");
        assert_eq!(c.malformed_hint(), malformed, "{status} {value:?}");
    }
}

#[test]
fn a_date_in_the_future_is_the_time_until_then() {
    let then = std::time::SystemTime::now() + Duration::from_hours(1);
    let date = httpdate::fmt_http_date(then);
    let c = classify(&response(503, Some(date.as_str())));
    let hint = c.retry_after().expect("a hint");
    assert!(
        hint > Duration::from_secs(3590) && hint <= Duration::from_hours(1),
        "{hint:?}"
    );
}

#[test]
fn closures_may_give_a_verdict_or_a_classification() {
    let config = Config::default();
    let plain = classify_fn(|n: &u32, _: &Config| Verdict::success_if(*n > 0));
    assert_eq!(
        plain.classify_response(&0, &config),
        Classified::Ready(Classification::new(Verdict::Failure))
    );
    let hinted = classify_fn(|_: &u32, _: &Config| {
        Classification::new(Verdict::Failure).with_retry_after(Some(Duration::from_secs(9)))
    });
    let Classified::Ready(c) = hinted.classify_response(&1, &config);
    assert_eq!(c.retry_after(), Some(Duration::from_secs(9)));
}
