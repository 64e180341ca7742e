//! §3: verdicts.

use super::*;

#[test]
fn verdict_closed_success_clears_the_failure_list() {
    let (fuse, mock) = circuit(config(4, 2));
    for t in 1..=3 {
        set_time(&mock, secs(t));
        fail(&fuse);
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(1), secs(2), secs(3)]));
    set_time(&mock, secs(4));
    closed_permit(&fuse).success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    // The cleared failures no longer count towards the threshold.
    for _ in 0..3 {
        fail(&fuse);
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(4); 3]));
}

#[test]
fn verdict_closed_failure_records_now() {
    let (fuse, mock) = circuit(config(8, 2));
    fail(&fuse);
    assert_eq!(
        fuse.snapshot(),
        closed(vec![Duration::ZERO]),
        "0 is a valid time"
    );
    set_time(&mock, secs(7) + NS);
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![Duration::ZERO, secs(7) + NS]));
}

#[test]
fn verdict_closed_failure_uses_the_verdict_time_not_the_admission_time() {
    let (fuse, mock) = circuit(config(8, 2));
    let permit = closed_permit(&fuse);
    set_time(&mock, secs(9));
    permit.failure();
    assert_eq!(fuse.snapshot(), closed(vec![secs(9)]));
}

#[test]
fn verdict_failure_window_edge_is_inclusive() {
    let (fuse, mock) = circuit(config(8, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    set_time(&mock, secs(61));
    assert_eq!(
        fuse.snapshot().failures,
        vec![secs(1)],
        "counted at t + window"
    );
    set_time(&mock, secs(61) + NS);
    assert_eq!(fuse.snapshot().failures, vec![], "not at t + window + 1ns");

    // The same edge decides whether the circuit opens.
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    set_time(&mock, secs(61));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(61)));

    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    set_time(&mock, secs(61) + NS);
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![secs(61) + NS]));
}

#[test]
fn verdict_failure_window_counts_a_failure_at_time_zero() {
    let (fuse, mock) = circuit(config(2, 2));
    fail(&fuse);
    set_time(&mock, secs(60));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(60)));
}

#[test]
fn verdict_threshold_reached_opens_with_opened_at_now() {
    let (fuse, mock) = circuit(config(3, 2));
    for t in 1..=2 {
        set_time(&mock, secs(t));
        fail(&fuse);
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(1), secs(2)]));
    set_time(&mock, secs(3));
    fail(&fuse);
    assert_eq!(
        fuse.snapshot(),
        open(secs(3)),
        "failures cleared on opening"
    );
    assert_eq!(rejection(&fuse).retry_after(), secs(30));
}

#[test]
fn verdict_closed_ignore_changes_nothing() {
    let (fuse, mock) = circuit(config(2, 2));
    closed_permit(&fuse).ignore();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    set_time(&mock, secs(1));
    fail(&fuse);
    for t in 2..10 {
        set_time(&mock, secs(t));
        closed_permit(&fuse).ignore();
    }
    assert_eq!(
        fuse.snapshot(),
        closed(vec![secs(1)]),
        "neither cleared nor counted"
    );
}

#[test]
fn verdict_probe_success_counts_then_closes_with_empty_failures() {
    let (fuse, mock) = circuit(config(3, 2));
    trip(&fuse); // three failures at 0, opened at 0
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    set_time(&mock, secs(31));
    p1.success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 1));
    p2.success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    // The failure list starts empty: the failures that opened the circuit
    // (still inside the window) do not come back.
    set_time(&mock, secs(32));
    fail(&fuse);
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![secs(32), secs(32)]));
}

#[test]
fn verdict_probe_successes_count_across_sequential_probes() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    probe(&fuse).success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 0));
    probe(&fuse).success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    closed_permit(&fuse).success();
}

#[test]
fn verdict_probe_failure_reopens_with_opened_at_now() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    let p3 = probe(&fuse);
    set_time(&mock, secs(31));
    p1.success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 2));
    set_time(&mock, secs(32));
    p2.failure();
    assert_eq!(
        fuse.snapshot(),
        open(secs(32)),
        "counters zeroed, opened now"
    );
    assert_eq!(rejection(&fuse).retry_after(), secs(30));
    // The last probe of the old half-open epoch is stale now.
    p3.success();
    assert_eq!(fuse.snapshot(), open(secs(32)));
    set_time(&mock, just_before(secs(62)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(62));
    probe(&fuse).ignore();
}

#[test]
fn verdict_probe_ignore_releases_the_slot() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    assert_eq!(rejection(&fuse).retry_after(), Duration::ZERO);
    p1.ignore();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    let p3 = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    p2.ignore();
    p3.ignore();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 0));
}
