//! The `metrics` feature: counters and the state gauge, labelled by key.
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
            .policy(fuse_breaker::Policy::Rate)
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
        let count = fuse_breaker::Overrides {
            policy: Some(fuse_breaker::Policy::Count),
            ..fuse_breaker::Overrides::default()
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

    trait IgnoreOnce {
        fn fuse_ignore(&self);
    }

    impl IgnoreOnce for TestFuse {
        fn fuse_ignore(&self) {
            self.try_acquire().expect("closed").ignore();
        }
    }
}
