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
    otel.ended(Verdict::Success);
    otel.ended(Verdict::Failure);
    otel.ended(Verdict::Ignore);
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
fn a_restored_circuit_is_observed_in_its_state_from_the_start() {
    let saved = crate::Fuse::new("otel-unit-restored", Config::default());
    saved.force_open();
    let open_for = saved.snapshot().open_for.expect("open");
    let fuse = crate::Fuse::builder("otel-unit-restored")
        .restore(&saved.save())
        .build();
    let counts = &fuse.backing.occupant.sinks().otel.counts;
    assert_eq!(counts.state(), State::Open);
    assert_eq!(
        counts.opening.load(Relaxed),
        u64::try_from(open_for.as_nanos()).unwrap()
    );
    let closed = crate::Fuse::new("otel-unit-restored-closed", Config::default());
    let fuse = crate::Fuse::builder("otel-unit-restored-closed")
        .restore(&closed.save())
        .build();
    let counts = &fuse.backing.occupant.sinks().otel.counts;
    assert_eq!(counts.state(), State::Closed);
    assert_eq!(counts.opening.load(Relaxed), 0);
}

/// A process that joins a fleet whose shared circuit is open hears of no
/// transition: its first round trip shows the state the store holds.
#[cfg(feature = "store")]
#[test]
fn a_shared_circuit_is_observed_in_the_state_its_store_holds() {
    use futures::executor::block_on;
    let store = std::sync::Arc::new(crate::store::MemoryStore::new());
    let fleet = crate::Fuse::builder("otel-unit-fleet")
        .store(store.clone())
        .build();
    block_on(fleet.force_open()).unwrap();
    let joining = crate::Fuse::builder("otel-unit-fleet").store(store).build();
    let counts = &joining.local().sinks().otel.counts;
    assert_eq!(counts.state(), State::Closed);
    assert!(block_on(joining.try_acquire()).is_err());
    assert_eq!(counts.state(), State::Open);
    assert!(counts.opening.load(Relaxed) > 0);
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

/// The spans `run` ended, each run in a span of its own named `name`.
fn spans(name: &'static str, run: impl FnOnce()) -> Vec<opentelemetry_sdk::trace::SpanData> {
    use opentelemetry::trace::{Tracer, TracerProvider};
    let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    provider.tracer("otel-unit").in_span(name, |_| run());
    exporter.get_finished_spans().unwrap()
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a opentelemetry::Value> {
    attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

#[test]
fn a_refused_call_is_an_event_and_marks_its_span() {
    let otel = Otel::new("fuse:otel-unit-refused");
    otel.on_transition(&opened(
        "fuse:otel-unit-refused",
        1,
        Duration::from_secs(10),
    ));
    let spans = spans("charge", || otel.refused(2_500_000_000));
    let [span] = &spans[..] else {
        panic!("one span: {spans:?}")
    };
    assert_eq!(
        span.status,
        opentelemetry::trace::Status::error("circuit fuse:otel-unit-refused is open")
    );
    assert_eq!(
        attribute(&span.attributes, "resilience.circuit_breaker.rejected"),
        Some(&opentelemetry::Value::Bool(true))
    );
    let [event] = &span.events.events[..] else {
        panic!("one event: {:?}", span.events)
    };
    assert_eq!(event.name, "circuit_rejected");
    let value = |key| attribute(&event.attributes, key).map(ToString::to_string);
    assert_eq!(value(ID).as_deref(), Some("fuse:otel-unit-refused"));
    assert_eq!(value(STATE).as_deref(), Some("open"));
    assert_eq!(value(OUTCOME).as_deref(), Some("rejected"));
    assert_eq!(
        value("resilience.circuit_breaker.retry_after").as_deref(),
        Some("2.5")
    );
}

#[test]
fn a_shed_call_says_why() {
    let otel = Otel::new("fuse:otel-unit-shed");
    let wait = crate::error::shed_wait(crate::grade::Grading::RampUp);
    let spans = spans("charge", || otel.refused(wait));
    assert_eq!(
        spans[0].status,
        opentelemetry::trace::Status::error("circuit fuse:otel-unit-shed shed the call (ramp_up)")
    );
    let event = &spans[0].events.events[0];
    assert_eq!(
        attribute(&event.attributes, OUTCOME).map(ToString::to_string),
        Some("throttled".to_owned())
    );
    assert_eq!(
        attribute(&event.attributes, "resilience.circuit_breaker.retry_after"),
        None
    );
}

#[test]
fn a_failed_probe_is_an_opening_event_with_its_result() {
    let otel = Otel::new("fuse:otel-unit-probe");
    let spans = spans("probe", || {
        otel.on_transition(&Transition {
            from: State::HalfOpen,
            reason: Reason::ProbeFailed,
            ..opened("fuse:otel-unit-probe", 2, Duration::from_secs(20))
        });
    });
    let event = &spans[0].events.events[0];
    assert_eq!(event.name, "circuit_opened");
    let value = |key| attribute(&event.attributes, key).map(ToString::to_string);
    assert_eq!(value(FROM).as_deref(), Some("half_open"));
    assert_eq!(value(REASON).as_deref(), Some("probe_failed"));
    assert_eq!(value(OPENING_N).as_deref(), Some("1"));
    assert_eq!(
        value("resilience.circuit_breaker.opening.duration").as_deref(),
        Some("20")
    );
    assert_eq!(
        value("resilience.circuit_breaker.probe.result").as_deref(),
        Some("failure")
    );
    // No span records: nothing is built, nothing fails.
    otel.refused(1);
}

#[test]
fn a_published_window_and_admission_are_reset_by_a_transition() {
    let otel = Otel::new("fuse:otel-unit-publish");
    assert_eq!(otel.counts.window(), None);
    assert_eq!(otel.counts.admission(), None);
    let config = Config::builder()
        .policy(crate::config::Policy::Rate)
        .ramp_up(Duration::from_secs(90))
        .ramp_up_floor(20)
        .build()
        .unwrap();
    assert!(otel.publishes_window(&config));
    assert!(otel.publishes_admission(&config));
    assert!(!otel.publishes_window(&Config::default()));
    assert!(!otel.publishes_admission(&Config::default()));
    let snapshot = Snapshot {
        calls: 7,
        failed: 2,
        slow: 1,
        admission: crate::config::Factor::from_millionths(400_000),
        ..crate::Fuse::new("otel-unit-snapshot", Config::default()).snapshot()
    };
    otel.window(&snapshot);
    otel.admission(&snapshot, &config);
    assert_eq!(
        otel.counts.window(),
        Some([("all", 7), ("failed", 2), ("slow", 1)])
    );
    assert_eq!(otel.counts.admission(), Some(0.4));
    // Published once: published again, whatever the configuration.
    assert!(otel.publishes_admission(&Config::default()));

    let key = "fuse:otel-unit-publish";
    otel.on_transition(&opened(key, 1, Duration::from_secs(1)));
    assert_eq!(
        otel.counts.window(),
        Some([("all", 0), ("failed", 0), ("slow", 0)])
    );
    assert_eq!(otel.counts.admission(), Some(1.0));
    otel.on_transition(&Transition {
        from: State::HalfOpen,
        to: State::Closed,
        reason: Reason::ProbesPassed,
        open_for: None,
        ..opened(key, 1, Duration::ZERO)
    });
    assert_eq!(otel.counts.admission(), Some(0.2), "the ramp's floor");
}

#[cfg(feature = "store")]
#[test]
fn the_store_s_outages_and_reachability_follow_its_events() {
    let otel = Otel::new("fuse:otel-unit-store");
    assert_eq!(otel.counts.store().map(|(_, o, r)| (o, r)), None);
    let error = std::io::Error::other("connection refused");
    let event = |reachable| crate::events::StoreEvent {
        key: "fuse:otel-unit-store",
        store: "redis",
        reachable,
        fallback: crate::fallback::Fallback::Local,
        error: None,
        overwritten: None,
        failover: None,
    };
    otel.on_store(&event(false));
    let (name, outages, reachable) = otel.counts.store().expect("a store");
    assert_eq!(name.value.as_str(), "redis");
    assert_eq!((outages, reachable), (1, false));
    otel.on_store(&event(true));
    assert_eq!(otel.counts.store().map(|(_, o, r)| (o, r)), Some((1, true)));
    // An overwritten payload is no outage, nor news of reachability.
    otel.on_store(&crate::events::StoreEvent {
        overwritten: Some(&error),
        ..event(false)
    });
    assert_eq!(otel.counts.store().map(|(_, o, r)| (o, r)), Some((1, true)));
    otel.on_store(&event(false));
    assert_eq!(
        otel.counts.store().map(|(_, o, r)| (o, r)),
        Some((2, false))
    );
}
