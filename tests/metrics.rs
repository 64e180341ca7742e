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

    trait IgnoreOnce {
        fn fuse_ignore(&self);
    }

    impl IgnoreOnce for TestFuse {
        fn fuse_ignore(&self) {
            self.try_acquire().expect("closed").ignore();
        }
    }
}
