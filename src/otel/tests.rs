use std::time::Duration;

use super::*;
use crate::transition::Reason;

fn opened(key: &str, openings: u32, open_for: Duration) -> Transition<'_> {
    Transition {
        key,
        from: State::Closed,
        to: State::Open,
        reason: Reason::ThresholdReached,
        at: Duration::ZERO,
        openings,
        open_for: Some(open_for),
    }
}

#[test]
fn the_opening_n_is_counted_up_to_eight_then_together() {
    assert_eq!(opening_n(0), "0");
    assert_eq!(opening_n(1), "0");
    assert_eq!(opening_n(9), "8");
    assert_eq!(opening_n(10), "9+");
    assert_eq!(opening_n(u32::MAX), "9+");
}

#[test]
fn calls_are_counted_by_outcome_and_a_refusal_by_why() {
    let otel = Otel::new("fuse:otel-unit");
    otel.admitted();
    otel.admitted();
    otel.succeeded();
    otel.failure();
    otel.ignored();
    otel.refused(5_000_000_000);
    otel.refused(crate::error::shed_wait(crate::grade::Grading::Throttle));
    otel.refused(crate::error::shed_wait(crate::grade::Grading::RampUp));
    let calls = otel.counts.calls();
    assert_eq!(
        calls,
        [
            ("success", 1),
            ("failure", 1),
            ("ignored", 1),
            ("rejected", 1),
            ("throttled", 2)
        ]
    );
    assert_eq!(otel.counts.permits.sum(), 2);
}

#[test]
fn a_transition_leaves_the_state_and_the_opening_it_reads() {
    let otel = Otel::new("fuse:otel-unit-state");
    assert_eq!(otel.counts.state(), State::Closed);
    otel.on_transition(&opened(
        "fuse:otel-unit-state",
        1,
        Duration::from_millis(1500),
    ));
    assert_eq!(otel.counts.state(), State::Open);
    assert_eq!(otel.counts.opening.load(Relaxed), 1_500_000_000);
    otel.on_transition(&Transition {
        from: State::Open,
        to: State::HalfOpen,
        reason: Reason::CooldownEnded,
        openings: 1,
        open_for: None,
        ..opened("fuse:otel-unit-state", 1, Duration::ZERO)
    });
    assert_eq!(otel.counts.state(), State::HalfOpen);
    assert_eq!(otel.counts.opening.load(Relaxed), 0);
}

#[test]
fn a_circuit_is_observed_while_its_sink_lives() {
    let observed = |id: &str| {
        let mut found = 0;
        instruments::each_circuit(|counts| {
            found += usize::from(counts.id.value.as_str() == id);
        });
        found
    };
    let otel = Otel::new("fuse:otel-unit-live");
    assert_eq!(observed("fuse:otel-unit-live"), 1);
    drop(otel);
    assert_eq!(observed("fuse:otel-unit-live"), 0);
}
