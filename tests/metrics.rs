//! The `metrics` feature: counters and the state gauge, labelled by key;
//! openings counted by their n, and the current opening's duration; calls
//! a closed circuit shed, and the share it admits (SPEC §11).
#![cfg(all(feature = "metrics", feature = "testing"))]

mod metrics {
    use fuse_breaker::testing::TestFuse;
    use fuse_breaker::{Config, State};
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    fn value<'a>(
        snapshot: &'a [(
            metrics_util::CompositeKey,
            Option<metrics::Unit>,
            Option<metrics::SharedString>,
            DebugValue,
        )],
        name: &str,
        labels: &[(&str, &str)],
    ) -> Option<&'a DebugValue> {
        snapshot.iter().find_map(|(key, _, _, value)| {
            let key = key.key();
            let matches = key.name() == name
                && labels
                    .iter()
                    .all(|(k, v)| key.labels().any(|l| l.key() == *k && l.value() == *v));
            matches.then_some(value)
        })
    }

    #[test]
    fn counters_and_the_state_gauge_follow_the_circuit() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let test = TestFuse::new(
                "metered",
                Config::builder().failure_threshold(2).build().unwrap(),
            );
            test.succeed(3);
            test.fuse_ignore();
            test.fail(2);
            test.assert_state(State::Open);
            test.assert_rejects();
            test.assert_rejects();
        });
        let snapshot = snapshotter.snapshot().into_vec();
        let key = [("key", "fuse:metered")];
        assert_eq!(
            value(&snapshot, "fuse_calls_admitted_total", &key),
            Some(&DebugValue::Counter(6))
        );
        assert_eq!(
            value(&snapshot, "fuse_calls_rejected_total", &key),
            Some(&DebugValue::Counter(2))
        );
        assert_eq!(
            value(&snapshot, "fuse_successes_total", &key),
            Some(&DebugValue::Counter(3))
        );
        assert_eq!(
            value(&snapshot, "fuse_failures_total", &key),
            Some(&DebugValue::Counter(2))
        );
        assert_eq!(
            value(&snapshot, "fuse_ignored_total", &key),
            Some(&DebugValue::Counter(1))
        );
        assert_eq!(
            value(
                &snapshot,
                "fuse_transitions_total",
                &[
                    ("key", "fuse:metered"),
                    ("to", "open"),
                    ("reason", "threshold_reached")
                ]
            ),
            Some(&DebugValue::Counter(1))
        );
        assert_eq!(
            value(&snapshot, "fuse_state", &key),
            Some(&DebugValue::Gauge(1.0.into()))
        );
    }

    /// The gauges of the window of the circuit `key` in `snapshot`:
    /// calls, failed, slow (`None` for one not recorded as a gauge).
    fn window(
        snapshot: &[(
            metrics_util::CompositeKey,
            Option<metrics::Unit>,
            Option<metrics::SharedString>,
            DebugValue,
        )],
        key: &str,
    ) -> [Option<f64>; 3] {
        [
            "fuse_window_calls",
            "fuse_window_failed_calls",
            "fuse_window_slow_calls",
        ]
        .map(|name| match value(snapshot, name, &[("key", key)]) {
            Some(DebugValue::Gauge(value)) => Some(value.into_inner()),
            _ => None,
        })
    }

    fn gauges(values: [f64; 3]) -> [Option<f64>; 3] {
        values.map(Some)
    }

    /// A rate configuration: 10 calls before a rate is judged, slow past
    /// 1 s.
    fn rate() -> Config {
        Config::builder()
            .policy(fuse_breaker::config::Policy::Rate)
            .minimum_calls(10)
            .slow_call_duration(std::time::Duration::from_secs(1))
            .build()
            .unwrap()
    }

    /// Nine calls on `fuse` on the clock `mock`: the first two slow (2 s),
    /// the last three failed.
    fn nine_calls(fuse: &fuse_breaker::Fuse, mock: &quanta::Mock) {
        for i in 0..9 {
            let permit = fuse.try_acquire().expect("closed");
            if i < 2 {
                mock.increment(std::time::Duration::from_secs(2));
            }
            if i >= 6 {
                permit.failure();
            } else {
                permit.success();
            }
        }
    }

    /// The registry's listing publishes a rate circuit's window as gauges
    /// (none for a count circuit); its opening empties them. Waits for the
    /// in-process engine's rate path.
    #[test]
    fn a_rate_circuit_s_window_is_published_when_the_registry_lists_it() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let (builder, mock) = fuse_breaker::testing::mock_registry();
        let count = fuse_breaker::config::Overrides {
            policy: Some(fuse_breaker::config::Policy::Count),
            ..fuse_breaker::config::Overrides::default()
        };
        let registry = builder
            .defaults(rate())
            .overrides("billing", count)
            .build()
            .unwrap();
        let search = registry.get("search");
        let billing = registry.get("billing");
        metrics::with_local_recorder(&recorder, || {
            nine_calls(&search, &mock);
            billing.try_acquire().unwrap().failure();
            assert_eq!(registry.circuits().len(), 2);
        });
        let snapshot = snapshotter.snapshot().into_vec();
        assert_eq!(
            window(&snapshot, "fuse:search"),
            gauges([9.0, 3.0, 2.0]),
            "{snapshot:?}"
        );
        assert_eq!(window(&snapshot, "fuse:billing"), [None, None, None]);

        // Three more failures: 6 of 12 failed, the default 50 %: open.
        metrics::with_local_recorder(&recorder, || {
            registry.circuits();
            for _ in 0..3 {
                search.try_acquire().unwrap().failure();
            }
            assert_eq!(search.state(), State::Open);
        });
        let snapshot = snapshotter.snapshot().into_vec();
        assert_eq!(window(&snapshot, "fuse:search"), gauges([0.0; 3]));
        assert_eq!(
            value(&snapshot, "fuse_state", &[("key", "fuse:search")]),
            Some(&DebugValue::Gauge(1.0.into()))
        );
    }

    /// `Fuse::publish_metrics` publishes the window too. Waits for the
    /// in-process engine's rate path, and for `Fuse::publish_metrics` to
    /// call `telemetry::publish` (notes/requests.md).
    #[test]
    fn publish_metrics_publishes_a_rate_circuit_s_window() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let test = TestFuse::new("rated", rate());
            nine_calls(&test, test.mock());
            test.publish_metrics();
        });
        let snapshot = snapshotter.snapshot().into_vec();
        assert_eq!(
            window(&snapshot, "fuse:rated"),
            gauges([9.0, 3.0, 2.0]),
            "{snapshot:?}"
        );
    }

    /// What a snapshot of the recorder holds of `fuse:backing-off`: its
    /// openings counted by label `n` since the snapshot before, and its
    /// opening gauge.
    fn openings(
        snapshotter: &metrics_util::debugging::Snapshotter,
    ) -> (std::collections::BTreeMap<String, u64>, f64) {
        let mut counted = std::collections::BTreeMap::new();
        let mut gauge = f64::NAN;
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let key = key.key();
            if !key
                .labels()
                .any(|l| l.key() == "key" && l.value() == "fuse:backing-off")
            {
                continue;
            }
            match (key.name(), value) {
                ("fuse_openings_total", DebugValue::Counter(count)) if count > 0 => {
                    let n = key.labels().find(|l| l.key() == "n").expect("labelled n");
                    counted.insert(n.value().to_owned(), count);
                }
                ("fuse_opening_seconds", DebugValue::Gauge(seconds)) => {
                    gauge = seconds.into_inner();
                }
                _ => {}
            }
        }
        (counted, gauge)
    }

    /// Each opening in a row is counted under its n (SPEC §10), and the
    /// gauge holds how long the current one lasts: 10 s, 20 s, 40 s, then
    /// 60 s at most; n from 9 on shares the label `9+`; closing sets the
    /// gauge to 0, and the next opening is an n of 0 again.
    #[test]
    fn openings_are_counted_by_their_n_and_the_opening_s_duration_is_a_gauge() {
        use std::time::Duration;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let config = Config::builder()
            .failure_threshold(1)
            .half_open_probes(1)
            .open_duration(Duration::from_secs(10))
            .open_backoff(2.0)
            .max_open_duration(Duration::from_mins(1))
            .build()
            .unwrap();
        let test = metrics::with_local_recorder(&recorder, || {
            let test = TestFuse::new("backing-off", config);
            test.trip();
            test
        });
        let (first, gauge) = openings(&snapshotter);
        let mut counted = first;
        let mut seen = vec![gauge];
        // Eleven failed probes in a row: openings 2 to 12, n 1 to 11.
        for _ in 0..11 {
            metrics::with_local_recorder(&recorder, || {
                test.cool_down();
                test.fail(1);
                test.assert_state(State::Open);
            });
            let (more, gauge) = openings(&snapshotter);
            for (n, count) in more {
                *counted.entry(n).or_default() += count;
            }
            seen.push(gauge);
        }
        assert_eq!(
            seen,
            [
                10.0, 20.0, 40.0, 60.0, 60.0, 60.0, 60.0, 60.0, 60.0, 60.0, 60.0, 60.0
            ]
        );
        assert_eq!(test.snapshot().openings, 12);
        let mut wanted: std::collections::BTreeMap<String, u64> =
            (0..9).map(|n| (n.to_string(), 1)).collect();
        wanted.insert("9+".to_owned(), 3);
        assert_eq!(counted, wanted, "n 9, 10 and 11 share 9+");

        // Closed: no opening. Opened again: an n of 0.
        metrics::with_local_recorder(&recorder, || {
            test.cool_down();
            test.succeed(1);
            test.assert_state(State::Closed);
        });
        let (counted, gauge) = openings(&snapshotter);
        assert!(
            counted.is_empty() && gauge.abs() < f64::EPSILON,
            "{counted:?} {gauge}"
        );
        metrics::with_local_recorder(&recorder, || test.trip());
        let (counted, gauge) = openings(&snapshotter);
        assert_eq!(counted, [("0".to_owned(), 1)].into());
        assert!((gauge - 10.0).abs() < f64::EPSILON, "{gauge}");
    }

    /// A shared circuit's openings are counted by the n its store holds,
    /// whichever process opened it before.
    #[cfg(feature = "store")]
    #[test]
    fn a_shared_circuit_s_openings_are_counted_by_the_store_s_n() {
        use std::sync::Arc;
        use std::time::Duration;

        use fuse_breaker::store::MemoryStore;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let store = Arc::new(MemoryStore::frozen());
        let config = Config::builder()
            .failure_threshold(1)
            .half_open_probes(1)
            .open_duration(Duration::from_secs(10))
            .open_backoff(3.0)
            .max_open_duration(Duration::from_mins(10))
            .build()
            .unwrap();
        let circuit = |config: &Config| {
            fuse_breaker::Fuse::builder("backing-off")
                .store(store.clone())
                .config(config.clone())
                .build()
        };
        // Another process opens it, and its first probe fails there.
        let elsewhere = circuit(&config);
        let here = metrics::with_local_recorder(&recorder, || circuit(&config));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            elsewhere
                .try_acquire()
                .await
                .unwrap()
                .failure()
                .await
                .unwrap();
            store.advance(Duration::from_secs(10));
            elsewhere
                .try_acquire()
                .await
                .unwrap()
                .failure()
                .await
                .unwrap();
            store.advance(Duration::from_secs(30));
        });
        // This process's probe fails: the third opening in a row, n = 2.
        metrics::with_local_recorder(&recorder, || {
            runtime.block_on(async {
                let probe = here.try_acquire().await.expect("a probe");
                probe.failure().await.unwrap();
            });
        });
        let (counted, gauge) = openings(&snapshotter);
        assert_eq!(counted, [("2".to_owned(), 1)].into());
        assert!((gauge - 90.0).abs() < f64::EPSILON, "{gauge}");
        let snapshot = runtime.block_on(here.snapshot()).unwrap();
        assert_eq!(
            (snapshot.openings, snapshot.open_for),
            (3, Some(Duration::from_secs(90)))
        );
    }

    /// The counters and gauge of graded admission of the circuit `key` in
    /// `snapshot`: calls throttled by the ramp, by throttling, calls
    /// rejected, and the admission gauge (`None` for one not recorded).
    fn graded(
        snapshot: &[(
            metrics_util::CompositeKey,
            Option<metrics::Unit>,
            Option<metrics::SharedString>,
            DebugValue,
        )],
        key: &str,
    ) -> (Option<u64>, Option<u64>, Option<u64>, Option<f64>) {
        let counted = |name: &str, labels: &[(&str, &str)]| match value(snapshot, name, labels) {
            Some(DebugValue::Counter(count)) => Some(*count),
            _ => None,
        };
        let admission = match value(snapshot, "fuse_admission", &[("key", key)]) {
            Some(DebugValue::Gauge(share)) => Some(share.into_inner()),
            _ => None,
        };
        (
            counted(
                "fuse_calls_throttled_total",
                &[("key", key), ("reason", "ramp_up")],
            ),
            counted(
                "fuse_calls_throttled_total",
                &[("key", key), ("reason", "throttle")],
            ),
            counted("fuse_calls_rejected_total", &[("key", key)]),
            admission,
        )
    }

    /// SPEC §11: a call a ramp sheds is counted in
    /// `fuse_calls_throttled_total` under its reason, and not as a
    /// rejection; the share of calls admitted is a gauge, at the floor the
    /// moment the probe closes the circuit, then as published, 1 once the
    /// ramp is over and while the circuit is open. A circuit that grades
    /// nothing has neither.
    #[test]
    fn a_shed_call_is_counted_as_throttled_and_the_admitted_share_is_a_gauge() {
        use std::time::Duration;

        fastrand::seed(21);
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let config = Config::builder()
            .failure_threshold(1)
            .half_open_probes(1)
            .open_duration(Duration::from_secs(10))
            .ramp_up(Duration::from_secs(100))
            .ramp_up_floor(5)
            .build()
            .unwrap();
        let (test, plain) = metrics::with_local_recorder(&recorder, || {
            let test = TestFuse::new("ramping", config);
            let plain = TestFuse::new("plain", Config::default());
            for circuit in [&test, &plain] {
                circuit.succeed(1);
                circuit.publish_metrics();
            }
            (test, plain)
        });
        let snapshot = snapshotter.snapshot().into_vec();
        assert_eq!(
            graded(&snapshot, "fuse:ramping").3,
            Some(1.0),
            "{snapshot:?}"
        );
        let (ramp_up, throttle, _, admission) = graded(&snapshot, "fuse:plain");
        assert_eq!(
            (ramp_up, throttle, admission),
            (None, None, None),
            "{snapshot:?}"
        );

        // Open: two rejections (ours, and the one `cool_down` asks how
        // long is left with). The probe closes it: the ramp starts at 5 %.
        metrics::with_local_recorder(&recorder, || {
            test.trip();
            test.assert_rejects();
            test.cool_down();
            test.succeed(1);
            test.assert_state(State::Closed);
        });
        let snapshot = snapshotter.snapshot().into_vec();
        assert_eq!(
            graded(&snapshot, "fuse:ramping"),
            (None, None, Some(2), Some(0.05)),
            "{snapshot:?}"
        );

        // 200 calls at the floor: nearly all shed, none a rejection.
        let shed = metrics::with_local_recorder(&recorder, || {
            let shed = (0..200)
                .filter(|_| match test.try_acquire() {
                    Ok(permit) => {
                        permit.success();
                        false
                    }
                    Err(err) => err.throttled().is_some(),
                })
                .count();
            // Halfway: half of the calls are admitted.
            test.advance(Duration::from_secs(50));
            test.publish_metrics();
            plain.publish_metrics();
            shed
        });
        assert!(shed > 170, "5 % admitted, yet {shed} of 200 shed");
        let snapshot = snapshotter.snapshot().into_vec();
        let (ramp_up, throttle, rejected, admission) = graded(&snapshot, "fuse:ramping");
        assert_eq!(ramp_up, Some(u64::try_from(shed).unwrap()), "{snapshot:?}");
        assert_eq!((throttle, rejected), (Some(0), Some(0)), "{snapshot:?}");
        let admission = admission.expect("the gauge");
        assert!((admission - 0.5).abs() < 1e-5, "{admission}");
        assert_eq!(graded(&snapshot, "fuse:plain").3, None, "{snapshot:?}");

        // Over: every call admitted.
        metrics::with_local_recorder(&recorder, || {
            test.advance(Duration::from_secs(50));
            test.succeed(20);
            test.publish_metrics();
        });
        let snapshot = snapshotter.snapshot().into_vec();
        assert_eq!(
            graded(&snapshot, "fuse:ramping"),
            (Some(0), Some(0), Some(0), Some(1.0)),
            "{snapshot:?}"
        );
    }

    trait IgnoreOnce {
        fn fuse_ignore(&self);
    }

    impl IgnoreOnce for TestFuse {
        fn fuse_ignore(&self) {
            self.try_acquire().expect("closed").ignore();
        }
    }
}
