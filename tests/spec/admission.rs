//! §3: admission.

use super::*;

#[test]
fn admission_closed_grants_a_closed_permit() {
    let (fuse, mock) = circuit(config(3, 2));
    let permit = closed_permit(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![]), "admission records nothing");
    permit.failure();
    set_time(&mock, secs(1));
    let permit = closed_permit(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![Duration::ZERO]));
    permit.ignore();
}

#[test]
fn admission_open_before_cooldown_rejects_with_retry_after() {
    let (fuse, mock) = circuit(config(1, 2));
    set_time(&mock, secs(5));
    trip(&fuse);
    assert_eq!(rejection(&fuse).retry_after(), secs(30));
    set_time(&mock, secs(15) + NS);
    assert_eq!(rejection(&fuse).retry_after(), just_before(secs(20)));
    set_time(&mock, just_before(secs(35)));
    let err = rejection(&fuse);
    assert_eq!(err.retry_after(), NS);
    assert_eq!(err.key(), "fuse:spec");
    assert_eq!(
        fuse.snapshot(),
        open(secs(5)),
        "a rejection changes nothing"
    );
}

/// A clock that steps back (a mock clock, a clock not synchronised across
/// cores) to before the opening: a rejection never asks for more than what
/// is left of the opening's duration, measured from its start.
#[test]
fn admission_open_never_asks_for_more_than_the_opening_after_the_clock_steps_back() {
    let (fuse, mock) = circuit(config(1, 2));
    set_time(&mock, secs(50));
    trip(&fuse);
    mock.decrement(secs(40));
    assert_eq!(rejection(&fuse).retry_after(), secs(30));
    assert_eq!(rejection(&fuse).retry_after(), secs(30), "a second time");
    set_time(&mock, secs(60));
    assert_eq!(rejection(&fuse).retry_after(), secs(20));
    set_time(&mock, secs(80));
    probe(&fuse).failure();
    mock.decrement(secs(80));
    assert_eq!(rejection(&fuse).retry_after(), secs(30), "a reopening too");
}

#[test]
fn admission_open_at_cooldown_moves_to_half_open_with_one_in_flight() {
    let (fuse, mock) = circuit(config(1, 2));
    set_time(&mock, secs(5));
    trip(&fuse);
    set_time(&mock, secs(35));
    let permit = probe(&fuse);
    assert_eq!(fuse.state(), State::HalfOpen);
    assert_eq!(fuse.snapshot(), half_open(secs(5), 0, 1));
    permit.ignore();
}

#[test]
fn admission_open_long_after_cooldown_moves_to_half_open() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(3600));
    let permit = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    permit.ignore();
}

#[test]
fn admission_exactly_one_caller_wins_the_move_to_half_open() {
    // Sequentially: the second caller finds HalfOpen and takes the next slot
    // of the same half-open epoch (the move does not happen twice).
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let first = probe(&fuse);
    let second = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    first.success();
    second.success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 2, 0));

    // Concurrently, with one probe slot: exactly one winner; every other
    // caller sees HalfOpen full (retry_after 0), not Open.
    let (fuse, mock) = circuit(config(1, 1));
    trip(&fuse);
    for round in 0..200 {
        set_time(&mock, Duration::from_nanos(mock.value()) + secs(30));
        let start = Barrier::new(THREADS);
        let done = Barrier::new(THREADS);
        let outcomes: Vec<Result<bool, Duration>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let got = fuse.try_acquire();
                        // Hold every permit until all callers have tried.
                        done.wait();
                        match got {
                            Ok(permit) => {
                                let is_probe = permit.is_probe();
                                permit.ignore();
                                Ok(is_probe)
                            }
                            Err(err) => Err(err.retry_after()),
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes.contains(&Ok(true)),
            "round {round}: the winner probes"
        );
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Ok(true) | Err(Duration::ZERO))),
            "round {round}: losers must see HalfOpen: {outcomes:?}"
        );
        assert_eq!(fuse.snapshot().half_open_inflight, 0);
        // Reopen for the next round with a failed probe.
        probe(&fuse).failure();
        assert_eq!(fuse.state(), State::Open);
    }
}

#[test]
fn admission_half_open_with_a_free_slot_grants_a_probe() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    assert_eq!(fuse.snapshot().half_open_inflight, 1);
    let p2 = probe(&fuse);
    assert_eq!(fuse.snapshot().half_open_inflight, 2);
    let p3 = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 3));
    drop((p1, p2, p3));
}

#[test]
fn admission_half_open_full_rejects_with_zero_retry_after() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    let err = rejection(&fuse);
    assert_eq!(err.retry_after(), Duration::ZERO);
    assert_eq!(err.key(), "fuse:spec");
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    // Still full (and still zero) while the probes are within the probe
    // timeout (SPEC §10; its default, the open duration: 30 s).
    set_time(&mock, secs(59));
    assert_eq!(rejection(&fuse).retry_after(), Duration::ZERO);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    p1.ignore();
    p2.ignore();
}
