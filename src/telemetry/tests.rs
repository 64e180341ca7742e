use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

use super::*;
use crate::config::Policy;

/// The gauges of `fuse:search` now, by name (a snapshot of the
/// debugging recorder sets every gauge back to zero: take one).
fn gauges(snapshotter: &Snapshotter) -> std::collections::HashMap<String, f64> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let key = key.key();
            let ours = key
                .labels()
                .any(|l| l.key() == "key" && l.value() == "fuse:search");
            match value {
                DebugValue::Gauge(value) if ours => {
                    Some((key.name().to_owned(), value.into_inner()))
                }
                _ => None,
            }
        })
        .collect()
}

const WINDOW: [&str; 3] = [
    "fuse_window_calls",
    "fuse_window_failed_calls",
    "fuse_window_slow_calls",
];

#[test]
fn a_rate_window_is_published_as_gauges_and_emptied_by_a_transition() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let telemetry = Telemetry::new("fuse:search");
        let mut snapshot = crate::Fuse::new("search", crate::Config::default()).snapshot();
        (snapshot.calls, snapshot.failed, snapshot.slow) = (40, 12, 3);
        let rate = crate::Config::builder()
            .policy(Policy::Rate)
            .build()
            .unwrap();
        telemetry.window(&snapshot, &rate);
        let seen = gauges(&snapshotter);
        let window = WINDOW.map(|name| seen.get(name).copied());
        assert_eq!(window, [Some(40.0), Some(12.0), Some(3.0)], "{seen:?}");
        telemetry.window(&snapshot, &rate);
        telemetry.on_transition(&Transition {
            key: "fuse:search",
            from: State::Closed,
            to: State::Open,
            reason: crate::events::Reason::ThresholdReached,
            at: std::time::Duration::ZERO,
            openings: 1,
            open_for: Some(std::time::Duration::from_secs(30)),
        });
        let seen = gauges(&snapshotter);
        let window = WINDOW.map(|name| seen.get(name).copied());
        assert_eq!(window, [Some(0.0); 3], "{seen:?}");
        assert_eq!(seen.get("fuse_state"), Some(&1.0), "{seen:?}");
        assert_eq!(seen.get("fuse_opening_seconds"), Some(&30.0), "{seen:?}");
    });
}

#[test]
fn the_label_n_of_an_opening_is_bounded() {
    assert_eq!(opening_n(1), "0");
    assert_eq!(opening_n(2), "1");
    assert_eq!(opening_n(9), "8");
    assert_eq!(opening_n(10), "9+");
    assert_eq!(opening_n(u32::MAX), "9+");
    // Not an opening's count (0 is a closed circuit's): read as the first.
    assert_eq!(opening_n(0), "0");
}

#[test]
fn a_count_circuit_publishes_no_window() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let fuse = crate::Fuse::new("search", crate::Config::default());
        fuse.try_acquire().unwrap().failure();
        fuse.publish_metrics();
        fuse.force_open();
    });
    let seen = gauges(&snapshotter);
    assert_eq!(seen.get("fuse_state"), Some(&1.0), "{seen:?}");
    for name in WINDOW {
        assert!(!seen.contains_key(name), "{name}: {seen:?}");
    }
}

#[test]
fn a_rate_circuit_publishes_its_window_with_its_admissions() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let rate = crate::Config::builder()
            .policy(Policy::Rate)
            .build()
            .unwrap();
        let fuse = crate::Fuse::new("search", rate);
        fuse.publish_metrics();
    });
    // A new circuit's window is empty.
    let seen = gauges(&snapshotter);
    let window = WINDOW.map(|name| seen.get(name).copied());
    assert_eq!(window, [Some(0.0); 3], "{seen:?}");
}

/// A transition of `fuse:search` from `from` to `to` for `reason`.
fn transition(from: State, to: State, reason: crate::events::Reason) -> Transition<'static> {
    Transition {
        key: "fuse:search",
        from,
        to,
        reason,
        at: std::time::Duration::ZERO,
        openings: u32::from(to == State::Open),
        open_for: None,
    }
}

#[test]
fn sheds_are_counted_by_reason_and_the_admitted_share_follows_transitions() {
    use crate::events::Reason;

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let config = crate::Config::builder()
        .ramp_up(std::time::Duration::from_mins(1))
        .ramp_up_floor(20)
        .throttle_k(2.0)
        .build()
        .unwrap();
    let telemetry = Telemetry::new("fuse:search");
    let mut snapshot = crate::Fuse::new("search", config.clone()).snapshot();
    let admission = |snapshotter: &Snapshotter| gauges(snapshotter).get("fuse_admission").copied();
    metrics::with_local_recorder(&recorder, || {
        let shed = |why| crate::error::shed_wait(why);
        telemetry.refused(shed(crate::grade::Grading::Throttle));
        telemetry.refused(shed(crate::grade::Grading::Throttle));
        telemetry.refused(shed(crate::grade::Grading::RampUp));
        // No gauge before it is published.
        telemetry.on_transition(&transition(State::Closed, State::Open, Reason::Forced));
    });
    let counted: std::collections::HashMap<String, u64> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let key = key.key();
            let reason = key
                .labels()
                .find(|l| l.key() == "reason")?
                .value()
                .to_owned();
            match value {
                DebugValue::Counter(n) if key.name() == "fuse_calls_throttled_total" => {
                    Some((reason, n))
                }
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        counted,
        [("ramp_up".to_owned(), 1), ("throttle".to_owned(), 2)].into()
    );

    let at = |snapshotter: &Snapshotter, change: &dyn Fn()| {
        metrics::with_local_recorder(&recorder, change);
        admission(snapshotter)
    };
    assert!(telemetry.publishes_admission(&config));
    assert!(!telemetry.publishes_admission(&crate::Config::default()));
    snapshot.admission = crate::config::Factor::from_f64(0.35);
    assert_eq!(
        at(&snapshotter, &|| telemetry.admission(&snapshot, &config)),
        Some(0.35)
    );
    // Once made, it is published whatever the configuration says now.
    assert!(telemetry.publishes_admission(&crate::Config::default()));
    let half_open = transition(State::Open, State::HalfOpen, Reason::CooldownEnded);
    assert_eq!(
        at(&snapshotter, &|| telemetry.on_transition(&half_open)),
        Some(1.0)
    );
    let closed = transition(State::HalfOpen, State::Closed, Reason::ProbesPassed);
    assert_eq!(
        at(&snapshotter, &|| telemetry.on_transition(&closed)),
        Some(0.2)
    );
    let forced = transition(State::HalfOpen, State::Closed, Reason::Forced);
    assert_eq!(
        at(&snapshotter, &|| telemetry.on_transition(&forced)),
        Some(1.0)
    );
    // Without a ramp, a probe that closes the circuit admits every call.
    snapshot.admission = crate::config::Factor::ONE;
    let throttled = crate::Config::builder().throttle_k(2.0).build().unwrap();
    telemetry.admission(&snapshot, &throttled);
    assert_eq!(
        at(&snapshotter, &|| telemetry.on_transition(&closed)),
        Some(1.0)
    );
}

#[test]
fn a_restored_circuit_shows_its_state_before_any_call() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let saved = crate::Fuse::new("search", crate::Config::default());
    saved.force_open();
    let open_for = saved.snapshot().open_for.expect("open").as_secs_f64();
    metrics::with_local_recorder(&recorder, || {
        crate::Fuse::builder("search")
            .restore(&saved.save())
            .build()
    });
    let seen = gauges(&snapshotter);
    assert_eq!(seen.get("fuse_state"), Some(&1.0), "{seen:?}");
    assert_eq!(
        seen.get("fuse_opening_seconds"),
        Some(&open_for),
        "{seen:?}"
    );
    // A rejection then leaves it open (it set it back to closed when the
    // series were made at the first call).
    metrics::with_local_recorder(&recorder, || {
        let fuse = crate::Fuse::builder("search")
            .restore(&saved.save())
            .build();
        assert!(fuse.try_acquire().is_err());
    });
    let seen = gauges(&snapshotter);
    assert_eq!(seen.get("fuse_state"), Some(&1.0), "{seen:?}");
}

/// A process that joins a fleet whose shared circuit is open hears of no
/// transition: its first round trip shows the state the store holds.
#[cfg(feature = "store")]
#[test]
fn a_shared_circuit_shows_the_state_its_store_holds() {
    use futures::executor::block_on;
    let store = std::sync::Arc::new(crate::store::MemoryStore::new());
    let fleet = crate::Fuse::builder("search").store(store.clone()).build();
    block_on(fleet.force_open()).unwrap();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let joining = crate::Fuse::builder("search").store(store.clone()).build();
        assert!(block_on(joining.try_acquire()).is_err());
    });
    let seen = gauges(&snapshotter);
    assert_eq!(seen.get("fuse_state"), Some(&1.0), "{seen:?}");
    let opening = seen.get("fuse_opening_seconds").copied().unwrap_or(0.0);
    assert!(opening > 0.0, "{seen:?}");
    metrics::with_local_recorder(&recorder, || {
        let joining = crate::Fuse::builder("search").store(store.clone()).build();
        block_on(fleet.force_closed()).unwrap();
        drop(block_on(joining.try_acquire()).unwrap());
    });
    let seen = gauges(&snapshotter);
    assert_eq!(seen.get("fuse_state"), Some(&0.0), "{seen:?}");
}
