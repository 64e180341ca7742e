use super::*;
use crate::policy::Policy;

#[test]
fn a_rate_circuit_s_window_and_thresholds_are_shown() {
    let config = Config::builder()
        .policy(Policy::Rate)
        .failure_rate(50)
        .minimum_calls(20)
        .slow_call_duration(Duration::from_secs(2))
        .build()
        .unwrap();
    let mut snapshot = crate::Fuse::new("search", config.clone()).snapshot();
    (snapshot.calls, snapshot.failed, snapshot.slow) = (40, 12, 3);
    let view = CircuitView::read(&Reading {
        key: "fuse:search",
        name: "search",
        operation: None,
        shared: false,
        found: Found::Snapshot {
            snapshot: &snapshot,
            opening_failures: &[],
            open_for_assumed: false,
            now: Duration::from_secs(100),
            wall: SystemTime::now(),
        },
        config: &config,
        store_error: None,
    });
    assert_eq!((view.calls, view.failed, view.slow), (40, 12, 3));
    assert_eq!((view.failures, view.state.as_str()), (0, "closed"));
    assert!(view.config.is_rate());
    assert_eq!(view.config.slow_call_duration_ms, Some(2000));
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        (&json["calls"], &json["failed"], &json["slow"]),
        (&40.into(), &12.into(), &3.into())
    );
    assert_eq!(json["config"]["policy"], "rate");
    assert_eq!(serde_json::from_value::<CircuitView>(json).unwrap(), view);
}

/// The view of `snapshot` read at `now` (100 s after the circuit's
/// clock started), which is `wall` on the wall clock.
fn view_at(snapshot: &Snapshot, now: Duration, wall: SystemTime) -> CircuitView {
    CircuitView::read(&Reading {
        key: "fuse:billing",
        name: "billing",
        operation: None,
        shared: false,
        found: Found::Snapshot {
            snapshot,
            opening_failures: &[],
            open_for_assumed: false,
            now,
            wall,
        },
        config: &Config::default(),
        store_error: None,
    })
}

fn opened(at: Duration, open_for: Option<Duration>, openings: u32) -> Snapshot {
    let mut snapshot = crate::Fuse::new("billing", Config::default()).snapshot();
    snapshot.state = State::Open;
    (snapshot.opened_at, snapshot.open_for, snapshot.openings) = (Some(at), open_for, openings);
    snapshot
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn an_opening_shows_its_n_its_duration_and_when_it_ends() {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_hours(500_000);
    // The third opening in a row, of two minutes, 50 s ago.
    let snapshot = opened(100 * SECOND, Some(120 * SECOND), 3);
    let view = view_at(&snapshot, 150 * SECOND, wall);
    assert_eq!(
        (view.openings, view.open_for_ms, view.half_open_in_ms),
        (3, Some(120_000), Some(70_000))
    );
    assert_eq!(view.opened_at.as_deref(), Some("2027-01-15T07:59:10.000Z"));
    assert_eq!(view.retry_at.as_deref(), Some("2027-01-15T08:01:10.000Z"));
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        (&json["openings"], &json["open_for_ms"], &json["retry_at"]),
        (
            &3.into(),
            &120_000.into(),
            &"2027-01-15T08:01:10.000Z".into()
        )
    );
    assert_eq!(serde_json::from_value::<CircuitView>(json).unwrap(), view);

    // Past its end (no call came yet): the countdown stays at 0.
    let view = view_at(&snapshot, 400 * SECOND, wall);
    assert_eq!(view.half_open_in_ms, Some(0));
    assert_eq!(view.retry_at.as_deref(), Some("2027-01-15T07:57:00.000Z"));

    // Half-open: the n stays, the opening's times go.
    let mut half_open = snapshot.clone();
    (half_open.state, half_open.open_for) = (State::HalfOpen, None);
    let view = view_at(&half_open, 400 * SECOND, wall);
    assert_eq!(
        (
            view.openings,
            view.open_for_ms,
            view.half_open_in_ms,
            view.retry_at
        ),
        (3, None, None, None)
    );
}

#[test]
fn odd_times_are_shown_as_far_as_they_go_and_never_panic() {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_hours(500_000);
    // An opening longer than u64 nanoseconds, or than any date.
    let view = view_at(
        &opened(100 * SECOND, Some(Duration::MAX), u32::MAX),
        150 * SECOND,
        wall,
    );
    assert_eq!(
        (view.openings, view.open_for_ms, view.half_open_in_ms),
        (u32::MAX, Some(u64::MAX), Some(u64::MAX))
    );
    assert_eq!(view.retry_at, None, "past any date");
    assert!(view.opened_at.is_some());
    // Opened at the end of time, on a clock read near its start.
    let view = view_at(&opened(Duration::MAX, Some(SECOND), 1), SECOND, wall);
    assert_eq!(
        (view.open_for_ms, view.half_open_in_ms),
        (Some(1000), Some(u64::MAX))
    );
    assert_eq!(view.retry_at, None);
    assert!(view.opened_at.is_some(), "the reading's own time stands in");
    // A wall clock before 1970 or past 9999.
    for wall in [
        SystemTime::UNIX_EPOCH - Duration::from_secs(10),
        SystemTime::UNIX_EPOCH + Duration::from_secs(400_000_000_000),
    ] {
        let view = view_at(&opened(SECOND, Some(SECOND), 1), SECOND, wall);
        assert_eq!((view.opened_at, view.retry_at), (None, None));
        assert_eq!(view.half_open_in_ms, Some(1000));
    }
    // Open without an opening's duration: the open duration stands in.
    let view = view_at(&opened(SECOND, None, 1), SECOND, wall);
    assert_eq!(view.open_for_ms, Some(30_000));
}

#[test]
fn an_older_api_s_circuit_reads_as_a_count_circuit() {
    let old = serde_json::json!({
        "key": "fuse:billing", "name": "billing", "operation": null, "shared": false,
        "state": "closed", "failures": 1, "failure_ages_ms": [20], "probes_in_flight": 0,
        "probes_allowed": 2, "probe_successes": 0, "opened_at": null, "half_open_in_ms": null,
        "config": {"failure_threshold": 8, "failure_window_ms": 60000,
                   "open_duration_ms": 30000, "half_open_probes": 2},
        "store_error": null,
    });
    let view: CircuitView = serde_json::from_value(old).unwrap();
    assert_eq!(
        (view.failures, view.calls, view.failed, view.slow),
        (1, 0, 0, 0)
    );
    assert_eq!(view.config.policy, "count");
    assert_eq!(
        (view.openings, view.open_for_ms, view.retry_at),
        (0, None, None)
    );
    assert_eq!(view.config.max_open_duration_ms, 30_000);
}

/// SPEC §11: a closed circuit that grades its admission shows the share
/// it admits, why, and the throttle's window; an older API's answer,
/// which says none of it, reads as a circuit that admits every call.
#[test]
fn a_graded_circuit_shows_its_admission_and_why() {
    let mut snapshot = crate::Fuse::new("billing", Config::default()).snapshot();
    let view = view_at(&snapshot, 100 * SECOND, SystemTime::now());
    assert_eq!(
        (
            view.admission,
            view.graded_by.as_deref(),
            view.requests,
            view.accepts
        ),
        (Factor::ONE, None, 0, 0)
    );
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        (&json["admission"], &json["graded_by"]),
        (&1.0.into(), &serde_json::Value::Null)
    );

    snapshot.admission = Factor::from_f64(0.35);
    snapshot.graded_by = Some(crate::Grading::Throttle);
    (snapshot.requests, snapshot.accepts) = (120, 39);
    let view = view_at(&snapshot, 100 * SECOND, SystemTime::now());
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        (
            &json["admission"],
            &json["graded_by"],
            &json["requests"],
            &json["accepts"]
        ),
        (&0.35.into(), &"throttle".into(), &120.into(), &39.into())
    );
    assert_eq!(
        serde_json::from_value::<CircuitView>(json.clone()).unwrap(),
        view
    );

    // An older API's answer.
    let mut older = json;
    for field in ["admission", "graded_by", "requests", "accepts"] {
        older.as_object_mut().unwrap().remove(field);
    }
    let read: CircuitView = serde_json::from_value(older).unwrap();
    assert_eq!(
        (read.admission, read.graded_by, read.requests, read.accepts),
        (Factor::ONE, None, 0, 0)
    );
}

/// An in-process circuit in its ramp (SPEC §11), as `CircuitView::of`
/// reads it: the ramp's share at that point, said to be the ramp's.
#[test]
fn a_circuit_in_its_ramp_shows_the_ramp_s_share() {
    let (clock, mock) = quanta::Clock::mock();
    let config = Config::builder()
        .half_open_probes(1)
        .ramp_up(Duration::from_secs(100))
        .build()
        .unwrap();
    let fuse = crate::Fuse::builder("billing")
        .clock(clock)
        .config(config)
        .build();
    fuse.force_open();
    mock.increment(Duration::from_secs(30));
    fuse.try_acquire().unwrap().success();
    mock.increment(Duration::from_secs(40));
    let view = CircuitView::of(&fuse);
    assert_eq!(view.state, "closed");
    assert_eq!(view.graded_by.as_deref(), Some("ramp_up"));
    assert!((view.admission.to_f64() - 0.4).abs() < 1e-5, "{view:?}");
    assert_eq!(view.config.ramp_up_ms, Some(100_000));
}
