//! §3: manual control.

use super::*;

#[test]
fn force_open_opens_now_and_probes_after_open_duration() {
    let (fuse, mock) = circuit(config(8, 2));
    set_time(&mock, secs(5));
    fail(&fuse);
    set_time(&mock, secs(10));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(10)), "failures cleared");
    set_time(&mock, just_before(secs(40)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(40));
    let p = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(secs(10), 0, 1));
    p.success();
}

/// Every instant, the last included, is a valid time: an opening whose
/// end is past the clock's last instant lasts to the end of time, and one
/// that ends at the last instant admits a probe then.
#[test]
fn force_open_at_the_last_instants_of_the_clock_lasts_to_the_end_of_time() {
    let last = Duration::from_nanos(u64::MAX);
    let (fuse, mock) = circuit(config(1, 1));
    set_time(&mock, last);
    fuse.force_open();
    assert_eq!(rejection(&fuse).retry_after(), NS, "the one instant left");
    let (fuse, mock) = circuit(config(1, 1));
    set_time(&mock, last.saturating_sub(secs(10)));
    fuse.force_open();
    assert_eq!(rejection(&fuse).retry_after(), secs(10) + NS);
    set_time(&mock, last);
    assert_eq!(rejection(&fuse).retry_after(), NS);
    let (fuse, mock) = circuit(config(1, 1));
    set_time(&mock, last.saturating_sub(secs(30)));
    fuse.force_open();
    set_time(&mock, just_before(last));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, last);
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn force_open_while_open_restarts_the_cooldown() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(20));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(20)));
    set_time(&mock, secs(30));
    assert_eq!(rejection(&fuse).retry_after(), secs(20));
}

#[test]
fn force_open_from_half_open_clears_the_counters() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    probe(&fuse).success();
    let held = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 1));
    set_time(&mock, secs(33));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(33)));
    drop(held);
    assert_eq!(fuse.snapshot(), open(secs(33)));
}

#[test]
fn force_closed_closes_and_clears_failures() {
    let (fuse, mock) = circuit(config(3, 2));
    fail(&fuse);
    fail(&fuse);
    fuse.force_closed();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    // The cleared failures no longer count: two more do not open it.
    fail(&fuse);
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed);

    fail(&fuse);
    assert_eq!(fuse.state(), State::Open);
    fuse.force_closed();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    closed_permit(&fuse).success();

    trip(&fuse);
    set_time(&mock, secs(30));
    let p = probe(&fuse);
    fuse.force_closed();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    p.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn reset_gives_a_fresh_closed_circuit() {
    let fresh = circuit(config(2, 2)).0.snapshot();
    assert_eq!(fresh, closed(vec![]));

    let (fuse, mock) = circuit(config(2, 2));
    fail(&fuse);
    fuse.reset();
    assert_eq!(fuse.snapshot(), fresh);

    trip(&fuse);
    fuse.reset();
    assert_eq!(fuse.snapshot(), fresh);
    closed_permit(&fuse).success();

    trip(&fuse);
    set_time(&mock, secs(30));
    let p = probe(&fuse);
    fuse.reset();
    assert_eq!(fuse.snapshot(), fresh);
    assert_eq!(fuse.state(), State::Closed);
    drop(p);
    assert_eq!(fuse.snapshot(), fresh);
    // It behaves as fresh: the threshold is needed again.
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed);
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open);
}

#[test]
fn reset_makes_earlier_permits_stale() {
    // A permit of the very first epoch: reset must not bring that epoch back.
    let (fuse, _mock) = circuit(config(1, 2));
    let first = closed_permit(&fuse);
    fuse.reset();
    first.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));

    let (fuse, _mock) = circuit(config(1, 2));
    let first = closed_permit(&fuse);
    fuse.force_open();
    fuse.reset();
    fuse.reset();
    first.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}
