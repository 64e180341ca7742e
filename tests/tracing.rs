//! The `tracing` feature: every transition is a structured event, and no
//! call is one (a call a closed circuit sheds included). Alone in
//! its test binary: tracing caches, per call site and process-wide, whether
//! anyone listens, and a test without a subscriber running at the same
//! time could cache "no one".
#![cfg(all(feature = "tracing", feature = "testing"))]

mod tracing_events {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use fuse_breaker::testing::TestFuse;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_transition_is_a_structured_event() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let test = TestFuse::new("traced", fuse_breaker::Config::default());
            test.succeed(5);
            test.trip();
            test.half_open();
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "one event per transition, none for successes: {text}"
        );
        for (line, (to, reason)) in lines.iter().zip([
            ("open", "threshold_reached"),
            ("half_open", "cooldown_ended"),
        ]) {
            for field in [
                "key=\"fuse:traced\"",
                &format!("to=\"{to}\""),
                &format!("reason=\"{reason}\""),
            ] {
                assert!(line.contains(field), "{line:?} should contain {field}");
            }
        }
    }

    /// SPEC §11: the ramp starts with the transition that closes the
    /// circuit, an event as any; the calls it sheds, like rejections, are
    /// no events, nor is the end of the ramp.
    #[test]
    fn a_shed_call_is_no_event_and_the_ramp_starts_with_the_close() {
        use std::time::Duration;

        use fuse_breaker::{Config, Fuse, Grading};

        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .finish();
        let shed = tracing::subscriber::with_default(subscriber, || {
            fastrand::seed(31);
            let (clock, mock) = quanta::Clock::mock();
            let config = Config::builder()
                .half_open_probes(1)
                .ramp_up(Duration::from_secs(100))
                .ramp_up_floor(1)
                .build()
                .unwrap();
            let fuse = Fuse::builder("ramping").clock(clock).config(config).build();
            fuse.force_open();
            mock.increment(Duration::from_secs(30));
            fuse.try_acquire().expect("the probe").success();
            let shed = (0..100)
                .filter(|_| match fuse.try_acquire() {
                    Ok(permit) => {
                        permit.success();
                        false
                    }
                    Err(err) => err.throttled() == Some(Grading::RampUp),
                })
                .count();
            // Past the ramp: every call admitted, and nothing said.
            mock.increment(Duration::from_secs(100));
            fuse.try_acquire().expect("admitted").success();
            shed
        });
        assert!(shed > 90, "{shed} of 100 shed");
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            3,
            "one event per transition, none per call: {text}"
        );
        for (line, (to, reason)) in lines.iter().zip([
            ("open", "forced"),
            ("half_open", "cooldown_ended"),
            ("closed", "probes_passed"),
        ]) {
            for field in [
                "key=\"fuse:ramping\"",
                &format!("to=\"{to}\""),
                &format!("reason=\"{reason}\""),
            ] {
                assert!(line.contains(field), "{line:?} should contain {field}");
            }
        }
    }

    /// A server's hint that cannot be read is a DEBUG event naming the
    /// circuit and the header.
    #[cfg(feature = "tower")]
    #[test]
    fn a_malformed_hint_is_a_debug_event() {
        use tower::{Layer, ServiceExt, service_fn};

        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            // Kept alive: `oneshot` drops the service, and its circuit with
            // it, once called.
            let fuse = Arc::new(fuse_breaker::Fuse::new(
                "hinted",
                fuse_breaker::Config::default(),
            ));
            let svc = fuse_breaker::tower::FuseLayer::new(fuse.clone()).layer(service_fn(
                |_req: http::Request<()>| async {
                    let res = http::Response::builder()
                        .status(503)
                        .header("retry-after", "soon")
                        .body(())
                        .unwrap();
                    Ok::<_, std::io::Error>(res)
                },
            ));
            futures::executor::block_on(svc.oneshot(http::Request::new(()))).unwrap();
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let line = text
            .lines()
            .find(|line| line.contains("cannot be read"))
            .unwrap_or_else(|| panic!("no event for the hint: {text}"));
        for field in ["DEBUG", "key=\"fuse:hinted\"", "header=\"retry-after\""] {
            assert!(line.contains(field), "{line:?} should contain {field}");
        }
    }
}
