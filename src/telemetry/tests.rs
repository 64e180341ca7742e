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
        telemetry.window(&snapshot);
        let seen = gauges(&snapshotter);
        let window = WINDOW.map(|name| seen.get(name).copied());
        assert_eq!(window, [Some(40.0), Some(12.0), Some(3.0)], "{seen:?}");
        telemetry.window(&snapshot);
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
