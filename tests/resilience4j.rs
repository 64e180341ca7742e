//! The `resilience4j` naming scheme of the `metrics` feature: the
//! Prometheus exposition of a circuit's series, diffed against the list
//! of resilience4j's series and labels (`fixtures/resilience4j-series.txt`),
//! and their values as the circuit's calls end, are refused and move it.
//! A test binary of its own: the scheme is the process's.
#![cfg(all(feature = "metrics", feature = "testing"))]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fuse_breaker::config::Policy;
use fuse_breaker::testing::TestFuse;
use fuse_breaker::{Config, MetricNames, State, Verdict};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

/// The fixture's series the scheme does not publish yet, and why: each
/// is checked to be absent, so that this list shrinks when they come.
const NOT_YET: [(&str, &str); 0] = [];

/// One sample of the exposition: its series' name, labels, and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The samples of a text exposition (comments left out).
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a value");
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (key, value) = pair.split_once('=').expect("key=value");
                    (key.to_owned(), value.trim_matches('"').to_owned())
                })
                .collect();
            Sample {
                name: name.to_owned(),
                labels,
                value: value.parse().expect("a number"),
            }
        })
        .collect()
}

/// A recorder of the exposition format and its handle.
fn recorder() -> (PrometheusRecorder, PrometheusHandle) {
    MetricNames::Resilience4j
        .install()
        .expect("no other scheme in this process");
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    (recorder, handle)
}

/// The value of the series `name` of the circuit `key` with the label
/// `kind_or_state` (`None`: a series without one).
fn value(samples: &[Sample], key: &str, name: &str, label: Option<(&str, &str)>) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && s.labels.get("name").map(String::as_str) == Some(key)
                && label.is_none_or(|(k, v)| s.labels.get(k).map(String::as_str) == Some(v))
        })
        .map(|s| s.value)
}

/// A call of `test` that takes `took` on its clock and ends with
/// `verdict`.
fn timed_call(test: &TestFuse, took: Duration, verdict: Verdict) {
    let permit = test.try_acquire().unwrap();
    test.advance(took);
    permit.conclude(verdict);
}

/// A `rate` circuit of `minimum_calls` 10 that opens at 50 % failed.
fn rate_circuit(name: &str) -> TestFuse {
    TestFuse::new(
        name,
        Config::builder()
            .policy(Policy::Rate)
            .minimum_calls(10)
            .failure_rate(50)
            .build()
            .unwrap(),
    )
}

#[test]
fn the_exposition_has_resilience4j_s_series_and_labels() {
    let (recorder, handle) = recorder();
    metrics::with_local_recorder(&recorder, || {
        let test = rate_circuit("listed");
        test.succeed(2);
        test.fail(1);
        drop(test.try_acquire().unwrap());
        test.trip();
        test.assert_rejects();
        test.publish_metrics();
    });
    let samples = samples(&handle.render());
    let ours: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.labels.get("name").map(String::as_str) == Some("fuse:listed"))
        .collect();
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/resilience4j-series.txt"
    ))
    .unwrap();
    let mut listed = BTreeSet::new();
    for line in fixture
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let name = fields[0];
        listed.insert(name);
        let series: Vec<&&Sample> = ours.iter().filter(|s| s.name == name).collect();
        if let Some((_, why)) = NOT_YET.iter().find(|(n, _)| *n == name) {
            assert!(
                series.is_empty(),
                "{name} is published now ({why}): take it off NOT_YET"
            );
            continue;
        }
        assert!(!series.is_empty(), "{name} is missing from the exposition");
        let keys: BTreeSet<&str> = fields[1].split(',').collect();
        for sample in &series {
            let have: BTreeSet<&str> = sample.labels.keys().map(String::as_str).collect();
            assert_eq!(have, keys, "the labels of {name}");
        }
        if let Some(values) = fields.get(2) {
            let (label, values) = values.split_once('=').unwrap();
            let expected: BTreeSet<&str> = values.split(',').collect();
            let have: BTreeSet<&str> = series.iter().map(|s| s.labels[label].as_str()).collect();
            assert_eq!(have, expected, "the values of {name}'s label {label}");
        }
    }
    let extra: BTreeSet<&str> = ours
        .iter()
        .map(|s| s.name.as_str())
        .filter(|name| !listed.contains(name))
        .collect();
    assert!(
        extra.is_empty(),
        "series resilience4j does not have: {extra:?}"
    );
}

#[test]
fn the_values_follow_the_circuit() {
    let (recorder, handle) = recorder();
    let key = "fuse:followed";
    metrics::with_local_recorder(&recorder, || {
        let test = rate_circuit("followed");
        // Before any call: closed, nothing buffered, no rate yet.
        let seen = samples(&handle.render());
        let state = |seen: &[Sample], state| {
            value(
                seen,
                key,
                "resilience4j_circuitbreaker_state",
                Some(("state", state)),
            )
        };
        assert_eq!(state(&seen, "closed"), Some(1.0));
        for other in [
            "open",
            "half_open",
            "forced_open",
            "disabled",
            "metrics_only",
        ] {
            assert_eq!(state(&seen, other), Some(0.0), "{other}");
        }
        let rate =
            |seen: &[Sample]| value(seen, key, "resilience4j_circuitbreaker_failure_rate", None);
        assert_eq!(rate(&seen), Some(-1.0));

        // Six successes (one through an owned permit), two failures, an
        // ignored error: fewer than minimum_calls, no rate.
        test.succeed(5);
        test.try_acquire_owned().unwrap().success();
        test.fail(2);
        test.try_acquire().unwrap().ignore();
        test.publish_metrics();
        let seen = samples(&handle.render());
        let calls = |seen: &[Sample], kind| {
            value(
                seen,
                key,
                "resilience4j_circuitbreaker_calls_seconds_count",
                Some(("kind", kind)),
            )
        };
        assert_eq!(calls(&seen, "successful"), Some(6.0));
        assert_eq!(calls(&seen, "failed"), Some(2.0));
        assert_eq!(calls(&seen, "ignored"), Some(1.0));
        let buffered = |seen: &[Sample], kind| {
            value(
                seen,
                key,
                "resilience4j_circuitbreaker_buffered_calls",
                Some(("kind", kind)),
            )
        };
        assert_eq!(buffered(&seen, "successful"), Some(6.0));
        assert_eq!(buffered(&seen, "failed"), Some(2.0));
        assert_eq!(rate(&seen), Some(-1.0), "8 calls of 10 needed");

        // Ten calls: a rate, in percent.
        test.succeed(2);
        test.publish_metrics();
        let seen = samples(&handle.render());
        assert_eq!(rate(&seen), Some(20.0));
        assert_eq!(
            value(
                &seen,
                key,
                "resilience4j_circuitbreaker_slow_call_rate",
                None
            ),
            Some(-1.0),
            "no slow_call_duration: no slow rate"
        );

        // Opened (8 of 16 calls failed): the state flips, the window
        // empties, refusals count.
        test.fail(6);
        test.assert_state(State::Open);
        assert!(test.try_acquire().is_err());
        assert!(test.try_acquire().is_err());
        let seen = samples(&handle.render());
        assert_eq!(state(&seen, "open"), Some(1.0));
        assert_eq!(state(&seen, "closed"), Some(0.0));
        assert_eq!(rate(&seen), Some(-1.0));
        assert_eq!(
            value(
                &seen,
                key,
                "resilience4j_circuitbreaker_not_permitted_calls_total",
                Some(("kind", "not_permitted"))
            ),
            Some(2.0)
        );
        assert_eq!(calls(&seen, "failed"), Some(8.0));
        assert_eq!(calls(&seen, "successful"), Some(8.0));

        // Half-open, then closed by its probes.
        test.advance(Duration::from_hours(1));
        test.assert_admits();
        let seen = samples(&handle.render());
        assert_eq!(state(&seen, "half_open"), Some(1.0));
        assert_eq!(state(&seen, "open"), Some(0.0));
        test.succeed(10);
        test.assert_state(State::Closed);
        let seen = samples(&handle.render());
        assert_eq!(state(&seen, "closed"), Some(1.0));
        assert_eq!(state(&seen, "half_open"), Some(0.0));
    });
}

#[test]
fn the_longest_call_is_published_and_decays() {
    let (recorder, handle) = recorder();
    let key = "fuse:longest";
    let max = |kind| {
        let seen = samples(&handle.render());
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_calls_seconds_max",
            Some(("kind", kind)),
        )
    };
    metrics::with_local_recorder(&recorder, || {
        let test = rate_circuit("longest");
        assert_eq!(max("successful"), Some(0.0), "present from the start");
        let call = |took, verdict| timed_call(&test, took, verdict);
        call(Duration::from_millis(2_500), Verdict::Success);
        call(Duration::from_millis(250), Verdict::Success);
        call(Duration::from_secs(3), Verdict::Failure);
        test.publish_metrics();
        assert_eq!(max("successful"), Some(2.5));
        assert_eq!(max("failed"), Some(3.0));
        assert_eq!(max("ignored"), Some(0.0));
        // Two minutes without a call: nothing ended in the last periods.
        test.advance(Duration::from_secs(125));
        test.publish_metrics();
        assert_eq!(max("successful"), Some(0.0));
        call(Duration::from_millis(100), Verdict::Success);
        test.publish_metrics();
        assert_eq!(max("successful"), Some(0.1));
    });
}

#[test]
fn slow_calls_are_published_by_verdict() {
    let (recorder, handle) = recorder();
    let key = "fuse:slow";
    metrics::with_local_recorder(&recorder, || {
        let test = TestFuse::new(
            "slow",
            Config::builder()
                .policy(Policy::Rate)
                .minimum_calls(4)
                .failure_rate(100)
                .slow_call_duration(Duration::from_secs(1))
                .slow_call_rate(100)
                .build()
                .unwrap(),
        );
        let call = |took, verdict| timed_call(&test, took, verdict);
        call(Duration::from_secs(2), Verdict::Success);
        call(Duration::from_secs(1), Verdict::Failure);
        call(Duration::from_secs(3), Verdict::Failure);
        call(Duration::from_millis(10), Verdict::Failure);
        call(Duration::from_secs(5), Verdict::Ignore);
        test.publish_metrics();
    });
    let seen = samples(&handle.render());
    let slow = |kind| {
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_slow_calls",
            Some(("kind", kind)),
        )
    };
    assert_eq!((slow("successful"), slow("failed")), (Some(1.0), Some(2.0)));
    assert_eq!(
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_slow_call_rate",
            None
        ),
        Some(75.0),
        "3 slow calls of 4 (the ignored call is not in the window)"
    );
}

#[test]
fn a_restored_open_circuit_is_open_from_the_start() {
    let (recorder, handle) = recorder();
    let saved = fuse_breaker::Fuse::new("restored", Config::default());
    saved.force_open();
    let fuse = metrics::with_local_recorder(&recorder, || {
        fuse_breaker::Fuse::builder("restored")
            .restore(&saved.save())
            .build()
    });
    let state = |seen: &[Sample], state: &str| {
        value(
            seen,
            "fuse:restored",
            "resilience4j_circuitbreaker_state",
            Some(("state", state)),
        )
    };
    let seen = samples(&handle.render());
    assert_eq!(state(&seen, "open"), Some(1.0));
    assert_eq!(state(&seen, "closed"), Some(0.0));
    metrics::with_local_recorder(&recorder, || {
        assert!(fuse.try_acquire().is_err());
        fuse.publish_metrics();
    });
    let seen = samples(&handle.render());
    assert_eq!(state(&seen, "open"), Some(1.0));
    assert_eq!(fuse.state(), State::Open);
}

#[test]
fn a_count_circuit_has_no_rate_and_buffers_its_failures() {
    let (recorder, handle) = recorder();
    metrics::with_local_recorder(&recorder, || {
        let test = TestFuse::new(
            "counted",
            Config::builder().failure_threshold(3).build().unwrap(),
        );
        test.succeed(4);
        test.fail(2);
        test.publish_metrics();
    });
    let seen = samples(&handle.render());
    let key = "fuse:counted";
    assert_eq!(
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_buffered_calls",
            Some(("kind", "failed"))
        ),
        Some(2.0)
    );
    assert_eq!(
        value(&seen, key, "resilience4j_circuitbreaker_failure_rate", None),
        Some(-1.0)
    );
    assert_eq!(
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_calls_seconds_count",
            Some(("kind", "successful"))
        ),
        Some(4.0)
    );
}

#[test]
fn every_call_is_timed_into_resilience4j_s_histogram() {
    let (recorder, handle) = recorder();
    let key = "fuse:timed";
    metrics::with_local_recorder(&recorder, || {
        let test = rate_circuit("timed");
        // 30 ms and 2 s successes, a 7 ms failure, a 0 ms ignore (an
        // owned permit dropped).
        for (took, verdict) in [
            (30, Verdict::Success),
            (2_000, Verdict::Success),
            (7, Verdict::Failure),
        ] {
            let permit = test.try_acquire().unwrap();
            test.advance(Duration::from_millis(took));
            permit.conclude(verdict);
        }
        drop(test.try_acquire_owned().unwrap());
        test.publish_metrics();
    });
    let seen = samples(&handle.render());
    let bucket = |kind, le| {
        seen.iter()
            .find(|s| {
                s.name == "resilience4j_circuitbreaker_calls_seconds_bucket"
                    && s.labels["name"] == key
                    && s.labels["kind"] == kind
                    && s.labels["le"] == le
            })
            .map(|s| s.value)
    };
    assert_eq!(bucket("successful", "0.025"), Some(0.0));
    assert_eq!(bucket("successful", "0.05"), Some(1.0));
    assert_eq!(bucket("successful", "1"), Some(1.0));
    assert_eq!(bucket("successful", "2.5"), Some(2.0));
    assert_eq!(bucket("successful", "+Inf"), Some(2.0));
    assert_eq!(bucket("failed", "0.005"), Some(0.0));
    assert_eq!(bucket("failed", "0.01"), Some(1.0));
    assert_eq!(bucket("ignored", "0.005"), Some(1.0));
    let sum = |kind| {
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_calls_seconds_sum",
            Some(("kind", kind)),
        )
    };
    assert_eq!(sum("successful"), Some(2.03));
    assert_eq!(sum("failed"), Some(0.007));
    assert_eq!(sum("ignored"), Some(0.0));
}

/// A shared circuit has the same series as an in-process one, from the
/// moment it is built, and counts the calls its store decides and those
/// its local circuit decides while the store does not answer as one.
#[cfg(feature = "store")]
#[test]
fn a_shared_circuit_has_the_same_series() {
    use std::sync::Arc;

    use fuse_breaker::store::MemoryStore;

    let (recorder, handle) = recorder();
    let key = "fuse:shared-series";
    metrics::with_local_recorder(&recorder, || {
        futures::executor::block_on(async {
            let fuse = fuse_breaker::Fuse::builder("shared-series")
                .config(Config::builder().failure_threshold(2).build().unwrap())
                .store(Arc::new(MemoryStore::new()))
                .build();
            let seen = samples(&handle.render());
            assert_eq!(
                value(
                    &seen,
                    key,
                    "resilience4j_circuitbreaker_state",
                    Some(("state", "closed"))
                ),
                Some(1.0),
                "present before any call"
            );
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            assert!(fuse.try_acquire().await.is_err(), "open");
            fuse.publish_metrics();
        });
    });
    let seen = samples(&handle.render());
    let calls = |kind| {
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_calls_seconds_count",
            Some(("kind", kind)),
        )
    };
    assert_eq!(calls("successful"), Some(2.0));
    assert_eq!(calls("failed"), Some(2.0));
    assert_eq!(
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_not_permitted_calls_total",
            Some(("kind", "not_permitted"))
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &seen,
            key,
            "resilience4j_circuitbreaker_state",
            Some(("state", "open"))
        ),
        Some(1.0)
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.name == "resilience4j_circuitbreaker_slow_calls"
                && s.labels.get("name").map(String::as_str) == Some(key)),
        "a store keeps slow calls, not their verdicts"
    );
}
