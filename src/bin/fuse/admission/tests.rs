use super::*;

fn admission(share: f64, why: &str, requests: u64, accepts: u64) -> Admission {
    Admission {
        share: Factor::from_f64(share),
        why: why.to_owned(),
        requests,
        accepts,
    }
}

#[test]
fn a_graded_circuit_is_described_with_its_share_and_why() {
    assert_eq!(
        admission(0.35, "ramp_up", 0, 0).to_string(),
        "admits 35 % (ramp_up)"
    );
    assert_eq!(
        admission(0.1, "throttle", 31, 0).to_string(),
        "admits 10 % (throttle: 0 accepts of 31 requests)"
    );
    // Rounded down: a share shown never exceeds the one in use.
    assert_eq!(
        admission(0.999_999, "ramp_up", 0, 0).to_string(),
        "admits 99 % (ramp_up)"
    );
    // A reason from an API is made printable.
    assert_eq!(
        admission(0.5, "\u{1b}]0;owned\u{7}", 0, 0).to_string(),
        "admits 50 % (\\x1b]0;owned\\x07)"
    );
}

#[test]
fn only_a_closed_circuit_that_grades_its_admission_has_one() {
    let fuse = fuse_breaker::Fuse::new("billing", fuse_breaker::Config::default());
    let mut snapshot = fuse.snapshot();
    assert_eq!(Admission::of_snapshot(&snapshot), None);
    snapshot.admission = Factor::from_f64(0.25);
    snapshot.graded_by = Some(Grading::RampUp);
    assert_eq!(
        Admission::of_snapshot(&snapshot).map(|shown| shown.to_string()),
        Some("admits 25 % (ramp_up)".to_owned())
    );
    snapshot.state = State::Open;
    assert_eq!(Admission::of_snapshot(&snapshot), None);

    let mut view = CircuitView::of(&fuse);
    assert_eq!(Admission::of_view(&view), None);
    view.admission = Factor::from_f64(0.2);
    view.graded_by = Some("throttle".to_owned());
    (view.requests, view.accepts) = (50, 8);
    assert_eq!(
        Admission::of_view(&view).map(|shown| shown.to_string()),
        Some("admits 20 % (throttle: 8 accepts of 50 requests)".to_owned())
    );
    view.state = "half_open".to_owned();
    assert_eq!(Admission::of_view(&view), None);
}
