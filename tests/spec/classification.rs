//! §4: classification.

use super::*;

#[test]
fn classify_timeout_is_a_counted_failure() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(3));
    let out: Result<(), _> = fuse.run(|| Err(io_err(ErrorKind::TimedOut)));
    match out {
        Err(Error::Inner(err)) => assert_eq!(err.kind(), ErrorKind::TimedOut),
        other => panic!("expected the inner error, got {other:?}"),
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(3)]));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert_eq!(fuse.snapshot(), open(secs(3)));
}

#[test]
fn classify_connection_refused_is_a_counted_failure() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(3));
    let out: Result<(), _> = fuse.run(|| Err(io_err(ErrorKind::ConnectionRefused)));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::ConnectionRefused));
    assert_eq!(fuse.snapshot(), closed(vec![secs(3)]));
}

#[test]
fn classify_other_error_is_ignored_and_returned_unchanged() {
    let (fuse, mock) = circuit(config(1, 2));
    set_time(&mock, secs(2));
    let out: Result<(), _> = fuse.run(|| Err(io::Error::new(ErrorKind::NotFound, "no such card")));
    match out {
        Err(Error::Inner(err)) => {
            assert_eq!(err.kind(), ErrorKind::NotFound);
            assert_eq!(err.to_string(), "no such card");
        }
        other => panic!("expected the inner error unchanged, got {other:?}"),
    }
    assert_eq!(fuse.snapshot(), closed(vec![]), "not counted");

    // And an ignored error does not clear earlier failures either.
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::NotFound)));
    assert_eq!(fuse.snapshot(), closed(vec![secs(1)]));
}

#[test]
fn classify_count_timeouts_false_ignores_timeouts() {
    let config = build(Config::builder().failure_threshold(1).count_timeouts(false));
    let (fuse, _mock) = circuit(config);
    let out = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::TimedOut));
    assert_eq!(fuse.snapshot(), closed(vec![]));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::ConnectionRefused)));
    assert_eq!(fuse.state(), State::Open, "connection errors still count");
}

#[test]
fn classify_count_connection_errors_false_ignores_connection_errors() {
    let config = build(
        Config::builder()
            .failure_threshold(1)
            .count_connection_errors(false),
    );
    let (fuse, _mock) = circuit(config);
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::ConnectionRefused)));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::ConnectionReset)));
    assert_eq!(fuse.snapshot(), closed(vec![]));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert_eq!(fuse.state(), State::Open, "timeouts still count");
}

#[test]
fn classify_http_statuses_follow_the_configuration() {
    let run_status = |fuse: &Fuse, status: u16| {
        let out = fuse.run(|| Err::<(), _>(FailureKind::HttpStatus(status)));
        assert_eq!(out, Err(Error::Inner(FailureKind::HttpStatus(status))));
    };
    let (fuse, _mock) = circuit(config(8, 2));
    for status in [100, 400, 404, 418, 429, 500, 501, 599] {
        run_status(&fuse, status);
    }
    assert_eq!(
        fuse.snapshot(),
        closed(vec![]),
        "none of these count by default"
    );
    for status in [502, 503, 504] {
        run_status(&fuse, status);
    }
    assert_eq!(fuse.snapshot().failures.len(), 3);

    let (fuse, _mock) = circuit(build(Config::builder().count_http_500(true)));
    run_status(&fuse, 500);
    assert_eq!(fuse.snapshot().failures.len(), 1);

    let (fuse, _mock) = circuit(build(Config::builder().counted_http_statuses([429])));
    run_status(&fuse, 503);
    assert_eq!(fuse.snapshot().failures.len(), 0);
    run_status(&fuse, 429);
    assert_eq!(fuse.snapshot().failures.len(), 1);

    let (fuse, _mock) = circuit(config(8, 2));
    let _ = fuse.run(|| Err::<(), _>(FailureKind::Other));
    assert_eq!(fuse.snapshot().failures.len(), 0);
}

#[test]
fn run_ok_is_a_success() {
    let (fuse, mock) = circuit(config(8, 2));
    fail(&fuse);
    set_time(&mock, secs(1));
    let calls = Cell::new(0);
    let out = fuse.run(|| {
        calls.set(calls.get() + 1);
        Ok::<_, io::Error>("charged")
    });
    assert_eq!(out.ok(), Some("charged"));
    assert_eq!(calls.get(), 1);
    assert_eq!(
        fuse.snapshot(),
        closed(vec![]),
        "the success cleared the list"
    );
}

#[test]
fn run_on_an_open_circuit_does_not_call() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(12));
    let calls = Cell::new(0);
    let out = fuse.run(|| {
        calls.set(calls.get() + 1);
        Ok::<_, io::Error>(())
    });
    match out {
        Err(Error::Open(err)) => {
            assert_eq!(err.retry_after(), secs(18));
            assert_eq!(err.key(), "fuse:spec");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(calls.get(), 0);
}

#[test]
fn run_with_is_failure_overrides_the_classification() {
    let (fuse, _mock) = circuit(config(8, 2));
    let out = fuse.run_with(
        || Err::<(), _>(io_err(ErrorKind::NotFound)),
        |_| true,
        |()| true,
    );
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::NotFound));
    assert_eq!(
        fuse.snapshot().failures.len(),
        1,
        "NotFound counted on request"
    );
    let out = fuse.run_with(
        || Err::<(), _>(io_err(ErrorKind::TimedOut)),
        |_| false,
        |()| true,
    );
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::TimedOut));
    assert_eq!(
        fuse.snapshot().failures.len(),
        1,
        "timeout ignored on request"
    );
    // The predicate sees the error itself.
    let _ = fuse.run_with(
        || Err::<(), _>("HTTP 503"),
        |e: &&str| e.ends_with("503"),
        |()| true,
    );
    let _ = fuse.run_with(
        || Err::<(), _>("HTTP 404"),
        |e: &&str| e.ends_with("503"),
        |()| true,
    );
    assert_eq!(fuse.snapshot().failures.len(), 2);
}

#[test]
fn run_with_is_success_false_returns_the_value_and_counts_a_failure() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(4));
    let out = fuse.run_with(
        || Ok::<Vec<u32>, io::Error>(vec![]),
        |_| true,
        |hits| !hits.is_empty(),
    );
    assert_eq!(out.ok(), Some(vec![]));
    assert_eq!(fuse.snapshot(), closed(vec![secs(4)]));
    let out = fuse.run_with(
        || Ok::<Vec<u32>, io::Error>(vec![7]),
        |_| true,
        |hits| !hits.is_empty(),
    );
    assert_eq!(out.ok(), Some(vec![7]));
    assert_eq!(
        fuse.snapshot(),
        closed(vec![]),
        "a true is_success is a success"
    );
    for _ in 0..2 {
        let _ = fuse.run_with(|| Ok::<u8, io::Error>(0), |_| true, |v| *v != 0);
    }
    assert_eq!(fuse.snapshot(), open(secs(4)));
}

#[test]
fn ignored_error_during_a_probe_releases_the_slot() {
    let (fuse, mock) = circuit(config(1, 1));
    trip(&fuse);
    set_time(&mock, secs(30));
    let out = fuse.run(|| Err::<(), _>(io_err(ErrorKind::NotFound)));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::NotFound));
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 0));
    let p = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    p.success();
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn counted_error_during_a_probe_reopens() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let out = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert!(matches!(out, Err(Error::Inner(_))));
    assert_eq!(fuse.snapshot(), open(secs(30)));
}

#[test]
fn run_async_classifies_like_run() {
    use futures::executor::block_on;
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    let out = block_on(fuse.run_async(async { Err::<(), _>(io_err(ErrorKind::TimedOut)) }));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::TimedOut));
    let out = block_on(fuse.run_async(async { Err::<(), _>(io_err(ErrorKind::NotFound)) }));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::NotFound));
    assert_eq!(fuse.snapshot(), closed(vec![secs(1)]));
    let out = block_on(fuse.run_async(async { Ok::<_, io::Error>(5) }));
    assert_eq!(out.ok(), Some(5));
    assert_eq!(fuse.snapshot(), closed(vec![]));
    let out = block_on(fuse.run_async_with(async { Ok::<_, io::Error>(0) }, |_| true, |v| *v > 0));
    assert_eq!(out.ok(), Some(0));
    assert_eq!(fuse.snapshot(), closed(vec![secs(1)]));
    let out = block_on(fuse.run_async_with(
        async { Err::<(), _>(io_err(ErrorKind::NotFound)) },
        |_| true,
        |()| true,
    ));
    assert!(out.is_err());
    assert_eq!(fuse.snapshot(), open(secs(1)));
}
