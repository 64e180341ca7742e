//! §5: the snapshot.

use super::*;

#[test]
fn snapshot_while_closed_lists_failures_inside_the_window_oldest_first() {
    let (fuse, mock) = circuit(config(8, 2));
    for t in [0, 10, 20, 30] {
        set_time(&mock, secs(t));
        fail(&fuse);
    }
    assert_eq!(
        fuse.snapshot(),
        closed(vec![Duration::ZERO, secs(10), secs(20), secs(30)])
    );
    set_time(&mock, secs(70));
    assert_eq!(fuse.snapshot(), closed(vec![secs(10), secs(20), secs(30)]));
    set_time(&mock, secs(75));
    assert_eq!(fuse.snapshot(), closed(vec![secs(20), secs(30)]));
    set_time(&mock, secs(90));
    assert_eq!(fuse.snapshot(), closed(vec![secs(30)]));
    set_time(&mock, secs(90) + NS);
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn snapshot_failures_stay_oldest_first_over_many_failures() {
    // Threshold 5, window 10 s, one failure every 3 s: at most four are
    // ever inside the window, so the circuit never opens while far more
    // failures than the threshold are recorded in total.
    let config = build(
        Config::builder()
            .failure_threshold(5)
            .failure_window(secs(10)),
    );
    let (fuse, mock) = circuit(config);
    let mut recorded = Vec::new();
    for i in 0..40 {
        let t = secs(3 * i);
        set_time(&mock, t);
        fail(&fuse);
        recorded.push(t);
        let expected: Vec<Duration> = recorded
            .iter()
            .copied()
            .filter(|&at| at + secs(10) >= t)
            .collect();
        assert_eq!(
            fuse.snapshot(),
            closed(expected),
            "after the failure at {t:?}"
        );
    }
}

#[test]
fn snapshot_while_open_has_opened_at_and_no_failures() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(4));
    fail(&fuse);
    set_time(&mock, secs(5));
    fail(&fuse);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::Open);
    assert_eq!(snap.opened_at, Some(secs(5)));
    assert!(snap.failures.is_empty());
    assert_eq!((snap.half_open_successes, snap.half_open_inflight), (0, 0));
}

#[test]
fn snapshot_while_half_open_has_opened_at_and_counters() {
    let (fuse, mock) = circuit(config(1, 3));
    set_time(&mock, secs(5));
    trip(&fuse);
    set_time(&mock, secs(40));
    probe(&fuse).success();
    let held = probe(&fuse);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.opened_at, Some(secs(5)));
    assert!(snap.failures.is_empty());
    assert_eq!(snap.half_open_successes, 1);
    assert_eq!(snap.half_open_inflight, 1);
    held.ignore();
}

#[test]
fn snapshot_after_closing_has_no_opened_at() {
    let (fuse, mock) = circuit(config(1, 1));
    trip(&fuse);
    set_time(&mock, secs(30));
    probe(&fuse).success();
    assert_eq!(fuse.snapshot().opened_at, None);
    assert_eq!(fuse.snapshot(), closed(vec![]));
}
