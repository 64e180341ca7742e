//! §3: verdicts from a past epoch are dropped.

use super::*;

#[test]
fn stale_closed_success_does_not_close_an_opened_circuit() {
    let (fuse, mock) = circuit(config(1, 2));
    let slow_a = closed_permit(&fuse);
    let slow_b = closed_permit(&fuse);
    let slow_c = closed_permit(&fuse);
    set_time(&mock, secs(1));
    trip(&fuse);
    set_time(&mock, secs(2));
    slow_a.success();
    assert_eq!(fuse.snapshot(), open(secs(1)));
    // Nor does a closed permit count as a probe once half-open.
    set_time(&mock, secs(31));
    let p = probe(&fuse);
    slow_b.success();
    assert_eq!(fuse.snapshot(), half_open(secs(1), 0, 1));
    slow_c.failure();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(1), 0, 1),
        "no reopening either"
    );
    p.ignore();
}

#[test]
fn stale_closed_failure_after_force_closed_is_not_counted() {
    let (fuse, mock) = circuit(config(1, 2));
    let slow = closed_permit(&fuse);
    set_time(&mock, secs(1));
    fuse.force_closed();
    set_time(&mock, secs(2));
    slow.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));

    // A permit from before an opening and a forced close is stale too.
    let (fuse, mock) = circuit(config(1, 2));
    let slow = closed_permit(&fuse);
    trip(&fuse);
    set_time(&mock, secs(1));
    fuse.force_closed();
    slow.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn stale_probe_verdicts_after_force_open_change_nothing() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    let p3 = probe(&fuse);
    set_time(&mock, secs(40));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(40)));
    set_time(&mock, secs(45));
    p1.success();
    p2.failure();
    p3.ignore();
    assert_eq!(
        fuse.snapshot(),
        open(secs(40)),
        "the stale failure must not reopen"
    );
    assert_eq!(rejection(&fuse).retry_after(), secs(25));
}

#[test]
fn stale_probe_verdicts_after_reset_change_nothing() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    fuse.reset();
    set_time(&mock, secs(31));
    p1.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    p2.success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn stale_probe_from_an_earlier_half_open_epoch_changes_nothing() {
    let (fuse, mock) = circuit(config(1, 4));
    trip(&fuse);
    set_time(&mock, secs(30));
    let old_a = probe(&fuse);
    let old_b = probe(&fuse);
    let old_c = probe(&fuse);
    set_time(&mock, secs(31));
    probe(&fuse).failure(); // reopens at 31 s
    set_time(&mock, secs(61));
    let current = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(secs(31), 0, 1));
    old_a.ignore();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(31), 0, 1),
        "stale ignore frees nothing"
    );
    old_b.success();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(31), 0, 1),
        "stale success counts nothing"
    );
    old_c.failure();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(31), 0, 1),
        "stale failure reopens nothing"
    );
    current.ignore();
}

/// An owned permit holds its circuit's atomics, not the circuit: once the
/// circuit is dropped, its verdict changes nothing, even though a later
/// circuit now uses the same memory.
#[test]
fn an_owned_permit_of_a_dropped_circuit_is_stale() {
    use fuse_breaker::Verdict;
    for verdict in [Verdict::Failure, Verdict::Success, Verdict::Ignore] {
        let (gone, mock) = circuit(config(1, 1));
        let held = gone.try_acquire_owned().expect("closed");
        set_time(&mock, secs(1));
        gone.force_open();
        set_time(&mock, secs(31));
        let probe = gone.try_acquire_owned().expect("a probe");
        assert!(probe.is_probe());
        drop(gone);
        // Circuits made now take the freed memory (the most recently freed
        // first); each would open at one counted failure or close at one
        // successful probe.
        let later: Vec<(Fuse, _)> = (0..8).map(|_| circuit(config(1, 1))).collect();
        for (fuse, _) in &later {
            assert_eq!(fuse.snapshot(), closed(vec![]), "a new circuit is closed");
        }
        for (fuse, _) in later.iter().skip(4) {
            fuse.force_open();
        }
        held.conclude(verdict);
        probe.conclude(verdict);
        for (fuse, _) in &later[..4] {
            assert_eq!(fuse.snapshot(), closed(vec![]), "{verdict:?}");
        }
        for (fuse, _) in &later[4..] {
            assert_eq!(fuse.snapshot(), open(Duration::ZERO), "{verdict:?}");
        }
        let (fresh, _) = circuit(config(1, 1));
        assert_eq!(fresh.snapshot(), closed(vec![]));
    }
}
