//! The `opentelemetry` feature against the SDK's in-memory exporters: a
//! circuit on a mock clock, driven from closed to open and back by its
//! probe, read as an OpenTelemetry exporter reads it (the metrics of the
//! global meter provider, the events of the spans its calls run in).

#![cfg(feature = "opentelemetry")]

use std::collections::BTreeMap;
use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use fuse_breaker::config::Policy;
use fuse_breaker::{Config, Error, Fuse, State};
use opentelemetry::trace::{Tracer, TracerProvider};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

/// The process's meter provider (global: every test of this file shares
/// it, each with circuits of its own) and its exporter.
fn meters() -> &'static (SdkMeterProvider, InMemoryMetricExporter) {
    static METERS: OnceLock<(SdkMeterProvider, InMemoryMetricExporter)> = OnceLock::new();
    METERS.get_or_init(|| {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        (provider, exporter)
    })
}

/// One data point: the instrument's name and unit, its attributes but the
/// circuit's id, and its value.
#[derive(Debug)]
struct Point {
    name: String,
    unit: String,
    attributes: BTreeMap<String, String>,
    value: f64,
}

/// The data points of the circuit `id` now (collected for the purpose).
#[allow(clippy::cast_precision_loss)]
fn points(id: &str) -> Vec<Point> {
    let (provider, exporter) = meters();
    provider.force_flush().unwrap();
    let finished = exporter.get_finished_metrics().unwrap();
    let last = finished.last().expect("an export");
    let mut points = Vec::new();
    for metric in last
        .scope_metrics()
        .flat_map(opentelemetry_sdk::metrics::data::ScopeMetrics::metrics)
    {
        let mut push = |attributes: Vec<(String, String)>, value: f64| {
            let mut attributes: BTreeMap<_, _> = attributes.into_iter().collect();
            if attributes
                .remove("resilience.circuit_breaker.id")
                .as_deref()
                == Some(id)
            {
                points.push(Point {
                    name: metric.name().to_owned(),
                    unit: metric.unit().to_owned(),
                    attributes,
                    value,
                });
            }
        };
        let pairs = |kvs: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
            kvs.map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect::<Vec<_>>()
        };
        match metric.data() {
            AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                for p in sum.data_points() {
                    push(pairs(&mut p.attributes()), p.value() as f64);
                }
            }
            AggregatedMetrics::I64(MetricData::Sum(sum)) => {
                for p in sum.data_points() {
                    push(pairs(&mut p.attributes()), p.value() as f64);
                }
            }
            AggregatedMetrics::F64(MetricData::Gauge(gauge)) => {
                for p in gauge.data_points() {
                    push(pairs(&mut p.attributes()), p.value());
                }
            }
            AggregatedMetrics::U64(MetricData::Gauge(gauge)) => {
                for p in gauge.data_points() {
                    push(pairs(&mut p.attributes()), p.value() as f64);
                }
            }
            other => panic!("{}: unexpected data {other:?}", metric.name()),
        }
    }
    points
}

/// The value of `name` whose attributes are `attributes`, and its unit.
fn value(points: &[Point], name: &str, attributes: &[(&str, &str)]) -> Option<(f64, String)> {
    let wanted: BTreeMap<String, String> = attributes
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    points
        .iter()
        .find(|p| p.name == name && p.attributes == wanted)
        .map(|p| (p.value, p.unit.clone()))
}

fn state(points: &[Point], state: &str) -> Option<f64> {
    value(
        points,
        "resilience.circuit_breaker.state",
        &[("resilience.circuit_breaker.state", state)],
    )
    .map(|(value, _)| value)
}

/// The spans of `tracer`'s provider, by the exporter.
fn tracer() -> (opentelemetry_sdk::trace::SdkTracer, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (provider.tracer("otel-test"), exporter)
}

/// The events of the span `name`, each with its attributes.
fn events(spans: &[SpanData], name: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let span = spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| panic!("no span {name}: {spans:?}"));
    span.events
        .iter()
        .map(|event| {
            let attributes = event
                .attributes
                .iter()
                .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect();
            (event.name.to_string(), attributes)
        })
        .collect()
}

fn down() -> Result<(), io::Error> {
    Err(io::Error::from(io::ErrorKind::ConnectionRefused))
}

fn circuit(name: &str) -> (Fuse, std::sync::Arc<fuse_breaker::quanta::Mock>) {
    meters();
    let (clock, mock) = fuse_breaker::quanta::Clock::mock();
    let config = Config::builder()
        .failure_threshold(3)
        .open_duration(Duration::from_secs(10))
        .half_open_probes(1)
        .build()
        .unwrap();
    (
        Fuse::builder(name).config(config).clock(clock).build(),
        mock,
    )
}

const TRANSITIONS: &str = "resilience.circuit_breaker.transitions";

/// The span events of the scripted run of the circuit `id`: its opening
/// in the span of the failure that opened it, its half-opening and
/// closing in the probe's.
fn the_opening_and_the_probe_are_span_events(spans: &[SpanData], id: &str) {
    assert!(events(spans, "failure").is_empty());
    let opening = events(spans, "failure-that-opens");
    let [(name, attributes)] = &opening[..] else {
        panic!("one event: {opening:?}")
    };
    assert_eq!(name, "circuit_opened");
    let expected = [
        ("resilience.circuit_breaker.id", id),
        ("resilience.circuit_breaker.state", "open"),
        ("resilience.circuit_breaker.transition.from", "closed"),
        (
            "resilience.circuit_breaker.transition.reason",
            "threshold_reached",
        ),
        ("resilience.circuit_breaker.opening.n", "0"),
    ];
    for (key, value) in expected {
        assert_eq!(
            attributes.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    assert!(attributes.contains_key("resilience.circuit_breaker.opening.duration"));
    let probe = events(spans, "probe");
    let names: Vec<&str> = probe.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["circuit_half_opened", "circuit_closed"]);
    let closing = &probe[1].1;
    assert_eq!(
        closing
            .get("resilience.circuit_breaker.probe.result")
            .map(String::as_str),
        Some("success")
    );
    assert_eq!(
        closing
            .get("resilience.circuit_breaker.id")
            .map(String::as_str),
        Some(id)
    );
}

#[test]
fn a_circuit_opens_and_closes_under_opentelemetry_names() {
    let (fuse, mock) = circuit("otel-script");
    let id = "fuse:otel-script";
    let (tracer, spans) = tracer();

    let before = points(id);
    assert_eq!(state(&before, "closed"), Some(1.0), "{before:#?}");
    assert_eq!(state(&before, "open"), Some(0.0));
    assert_eq!(state(&before, "half_open"), Some(0.0));
    for outcome in ["success", "failure", "ignored", "rejected", "throttled"] {
        let calls = value(
            &before,
            "resilience.circuit_breaker.calls",
            &[("resilience.circuit_breaker.call.outcome", outcome)],
        );
        assert_eq!(
            calls.map(|(_, unit)| unit).as_deref(),
            Some("{call}"),
            "{outcome}"
        );
    }

    for _ in 0..2 {
        fuse.run(|| Ok::<_, io::Error>(())).unwrap();
    }
    for n in 0..3 {
        let name = if n == 2 {
            "failure-that-opens"
        } else {
            "failure"
        };
        tracer.in_span(name, |_| {
            assert!(matches!(fuse.run(down), Err(Error::Inner(_))));
        });
    }
    assert_eq!(fuse.state(), State::Open);

    let open = points(id);
    assert_eq!(state(&open, "open"), Some(1.0), "{open:#?}");
    assert_eq!(state(&open, "closed"), Some(0.0));
    let opening = value(&open, "resilience.circuit_breaker.opening.duration", &[]);
    let (seconds, unit) = opening.expect("the opening's gauge");
    assert_eq!(unit, "s");
    assert!(seconds > 0.0 && seconds <= 10.0, "{seconds}");
    let opened = [
        ("resilience.circuit_breaker.transition.from", "closed"),
        ("resilience.circuit_breaker.transition.to", "open"),
        (
            "resilience.circuit_breaker.transition.reason",
            "threshold_reached",
        ),
    ];
    assert_eq!(
        value(&open, TRANSITIONS, &opened),
        Some((1.0, "{transition}".to_owned()))
    );
    assert_eq!(
        value(
            &open,
            "resilience.circuit_breaker.openings",
            &[("resilience.circuit_breaker.opening.n", "0")]
        ),
        Some((1.0, "{opening}".to_owned()))
    );

    mock.increment(Duration::from_secs(10));
    tracer.in_span("probe", |_| fuse.run(|| Ok::<_, io::Error>(())).unwrap());
    assert_eq!(fuse.state(), State::Closed);

    let closed = points(id);
    assert_eq!(state(&closed, "closed"), Some(1.0), "{closed:#?}");
    assert_eq!(state(&closed, "open"), Some(0.0));
    assert_eq!(
        value(&closed, "resilience.circuit_breaker.opening.duration", &[]).map(|(v, _)| v),
        Some(0.0)
    );
    for (from, to, reason) in [
        ("closed", "open", "threshold_reached"),
        ("open", "half_open", "cooldown_ended"),
        ("half_open", "closed", "probes_passed"),
    ] {
        let attributes = [
            ("resilience.circuit_breaker.transition.from", from),
            ("resilience.circuit_breaker.transition.to", to),
            ("resilience.circuit_breaker.transition.reason", reason),
        ];
        let count = value(&closed, TRANSITIONS, &attributes).map(|(v, _)| v);
        assert_eq!(count, Some(1.0), "{from} -> {to}: {closed:#?}");
    }

    the_opening_and_the_probe_are_span_events(&spans.get_finished_spans().unwrap(), id);
}

#[test]
fn calls_are_counted_by_outcome_and_a_rejected_call_marks_its_span() {
    let (fuse, _mock) = circuit("otel-calls");
    let id = "fuse:otel-calls";
    let (tracer, spans) = tracer();
    fuse.run(|| Ok::<_, io::Error>(())).unwrap();
    drop(fuse.try_acquire().unwrap());
    for _ in 0..3 {
        assert!(matches!(fuse.run(down), Err(Error::Inner(_))));
    }
    tracer.in_span("rejected-call", |_| {
        assert!(matches!(fuse.run(down), Err(Error::Open(_))));
    });

    let points = points(id);
    for (outcome, expected) in [
        ("success", 1.0),
        ("failure", 3.0),
        ("ignored", 1.0),
        ("rejected", 1.0),
        ("throttled", 0.0),
    ] {
        let calls = value(
            &points,
            "resilience.circuit_breaker.calls",
            &[("resilience.circuit_breaker.call.outcome", outcome)],
        );
        assert_eq!(
            calls.map(|(v, _)| v),
            Some(expected),
            "{outcome}: {points:#?}"
        );
    }

    let spans = spans.get_finished_spans().unwrap();
    let span = spans
        .iter()
        .find(|span| span.name == "rejected-call")
        .unwrap();
    assert_eq!(
        span.status,
        opentelemetry::trace::Status::error("circuit fuse:otel-calls is open")
    );
    assert!(
        span.attributes.iter().any(
            |kv| kv.key.as_str() == "resilience.circuit_breaker.rejected"
                && kv.value == opentelemetry::Value::Bool(true)
        ),
        "{span:?}"
    );
    let rejected = events(&spans, "rejected-call");
    let [(name, attributes)] = &rejected[..] else {
        panic!("one event: {rejected:?}")
    };
    assert_eq!(name, "circuit_rejected");
    for (key, value) in [
        ("resilience.circuit_breaker.id", id),
        ("resilience.circuit_breaker.state", "open"),
        ("resilience.circuit_breaker.call.outcome", "rejected"),
    ] {
        assert_eq!(
            attributes.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    assert!(attributes.contains_key("resilience.circuit_breaker.retry_after"));
}

const WINDOW: &str = "resilience.circuit_breaker.window.calls";
const ADMISSION: &str = "resilience.circuit_breaker.admission";

/// The window's gauges of a circuit: all, failed and slow calls.
fn window(points: &[Point]) -> [Option<f64>; 3] {
    ["all", "failed", "slow"].map(|kind| {
        let calls = value(
            points,
            WINDOW,
            &[("resilience.circuit_breaker.window.kind", kind)],
        );
        calls.map(|(calls, unit)| {
            assert_eq!(unit, "{call}");
            calls
        })
    })
}

fn on_mock_clock(name: &str, config: Config) -> (Fuse, std::sync::Arc<fuse_breaker::quanta::Mock>) {
    meters();
    let (clock, mock) = fuse_breaker::quanta::Clock::mock();
    (
        Fuse::builder(name).config(config).clock(clock).build(),
        mock,
    )
}

#[test]
fn a_rate_circuit_s_window_is_published_and_emptied_by_a_transition() {
    let config = Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(10)
        .slow_call_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let (fuse, mock) = on_mock_clock("otel-window", config);
    let (counted, _) = circuit("otel-window-count");
    let id = "fuse:otel-window";
    // Nine calls: the first two slow (2 s), the last three failed.
    for i in 0..9 {
        let permit = fuse.try_acquire().expect("closed");
        if i < 2 {
            mock.increment(Duration::from_secs(2));
        }
        if i >= 6 {
            permit.failure();
        } else {
            permit.success();
        }
    }
    counted.try_acquire().unwrap().failure();
    // Not yet published: no window.
    assert_eq!(window(&points(id)), [None; 3]);

    fuse.publish_metrics();
    counted.publish_metrics();
    let published = points(id);
    assert_eq!(
        window(&published),
        [Some(9.0), Some(3.0), Some(2.0)],
        "{published:#?}"
    );
    let count = points("fuse:otel-window-count");
    assert_eq!(window(&count), [None; 3], "a count circuit has no window");

    // A transition: a new epoch, an empty window.
    fuse.force_open();
    assert_eq!(window(&points(id)), [Some(0.0); 3]);
    // A circuit without graded admission has no admitted share.
    assert_eq!(value(&points(id), ADMISSION, &[]), None);
}

#[test]
fn the_admitted_share_is_below_one_once_the_probes_close_a_ramping_circuit() {
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(Duration::from_secs(10))
        .ramp_up(Duration::from_secs(100))
        .ramp_up_floor(5)
        .build()
        .unwrap();
    let (fuse, mock) = on_mock_clock("otel-ramp", config);
    let id = "fuse:otel-ramp";
    assert_eq!(
        value(&points(id), ADMISSION, &[]),
        None,
        "not yet published"
    );
    fuse.publish_metrics();
    assert_eq!(
        value(&points(id), ADMISSION, &[]),
        Some((1.0, "1".to_owned()))
    );

    assert!(matches!(fuse.run(down), Err(Error::Inner(_))));
    assert_eq!(fuse.state(), State::Open);
    mock.increment(Duration::from_secs(10));
    fuse.run(|| Ok::<_, io::Error>(())).unwrap();
    assert_eq!(fuse.state(), State::Closed);
    // The probe closed it: its ramp starts at the floor.
    let closed = points(id);
    let share = value(&closed, ADMISSION, &[]).map(|(share, _)| share);
    assert_eq!(share, Some(0.05), "{closed:#?}");

    // Halfway through the ramp, as published from the snapshot.
    mock.increment(Duration::from_secs(50));
    fuse.publish_metrics();
    let (share, _) = value(&points(id), ADMISSION, &[]).expect("the gauge");
    assert!(share > 0.05 && share < 1.0, "{share}");
}

#[test]
fn a_reconfiguration_is_counted_with_who_asked() {
    let (fuse, _mock) = circuit("otel-reconfigure");
    let id = "fuse:otel-reconfigure";
    let by = [("resilience.circuit_breaker.reconfiguration.by", "code")];
    let name = "resilience.circuit_breaker.reconfigurations";
    assert_eq!(value(&points(id), name, &by), None);
    for threshold in [5, 6] {
        let config = Config::builder()
            .failure_threshold(threshold)
            .open_duration(Duration::from_secs(10))
            .half_open_probes(1)
            .build()
            .unwrap();
        fuse.reconfigure(config).unwrap();
    }
    assert_eq!(
        value(&points(id), name, &by),
        Some((2.0, "{reconfiguration}".to_owned()))
    );
}

#[cfg(feature = "store")]
#[test]
fn a_shared_circuit_reports_its_store() {
    meters();
    let store = std::sync::Arc::new(fuse_breaker::store::MemoryStore::new());
    let shared = Fuse::builder("otel-shared").store(store).build();
    let (local, _mock) = circuit("otel-not-shared");
    let store = [("resilience.circuit_breaker.store.name", "memory")];
    let points = points(shared.key());
    assert_eq!(
        value(
            &points,
            "resilience.circuit_breaker.store.reachable",
            &store
        ),
        Some((1.0, "1".to_owned())),
        "{points:#?}"
    );
    assert_eq!(
        value(&points, "resilience.circuit_breaker.store.outages", &store),
        Some((0.0, "{outage}".to_owned()))
    );
    let local = self::points(local.key());
    assert!(
        local.iter().all(|p| !p.name.contains(".store.")),
        "{local:#?}"
    );
}
