//! The servers' hints (SPEC §10) over real sockets, for every integration:
//! a counted failure's `Retry-After`, in seconds or as an HTTP date, keeps
//! the circuit it opens open that long, capped at `max_open_duration`; a
//! malformed one is ignored (and counted, feature `metrics`); a hint on a
//! failure that does not open the circuit changes nothing.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::{Config, Registry, State};

use crate::common::server::{Mode, TestServer};
use crate::common::{NS, just_before, mock_registry, secs};
use crate::scenarios::open;
use crate::{Client, OPEN, Outcome};

/// Headers of an answer.
pub(crate) type Headers = &'static [(&'static str, &'static [u8])];

/// Come back in two minutes.
pub(crate) const IN_120_S: Headers = &[("retry-after", b"120")];

/// A hint that cannot be read.
pub(crate) const GARBLED: Headers = &[("retry-after", b"soon")];

/// The most an opening lasts under [`hinted`].
const MAX: Duration = Duration::from_mins(10);

/// Open 30 s (as [`OPEN`]) and at most [`MAX`], one probe, this threshold.
pub(crate) fn hinted(threshold: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .open_duration(OPEN)
        .max_open_duration(MAX)
        .half_open_probes(1)
        .build()
        .expect("a valid configuration")
}

/// How long the opening of the circuit `name` lasts, while it is open.
fn open_for(registry: &Arc<Registry>, name: &str) -> Option<Duration> {
    registry.get(name).snapshot().open_for
}

pub(crate) async fn retry_after_seconds_keep_the_circuit_open_that_long<C: Client>() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Headers(503, IN_120_S));
    let (registry, mock) = mock_registry(hinted(1));
    let client = C::new(registry.clone(), "billing");

    assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
    assert_eq!(open_for(&registry, "billing"), Some(secs(120)));
    assert_eq!(
        client.get(server.url("/")).await,
        open("billing", secs(120))
    );
    mock.increment(just_before(secs(120)));
    assert_eq!(client.get(server.url("/")).await, open("billing", NS));

    // The probe fails with a hint of its own: the circuit opens again for
    // that long.
    mock.increment(NS);
    server.set_mode(Mode::Headers(502, &[("retry-after", b"300")]));
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(502));
    let snap = registry.get("billing").snapshot();
    assert_eq!(snap.state, State::Open);
    assert_eq!(snap.open_for, Some(secs(300)));
    assert_eq!(snap.openings, 2);
    assert_eq!(server.requests(), 2, "nothing sent while open");
}

pub(crate) async fn a_hint_beyond_max_open_duration_is_capped<C: Client>() {
    const HUGE: [Headers; 2] = [
        &[("retry-after", b"100000")],
        &[("retry-after", b"99999999999999999999999999999")],
    ];
    let server = TestServer::start().await;
    let (registry, _mock) = mock_registry(hinted(1));
    for (n, headers) in HUGE.into_iter().enumerate() {
        let name = format!("huge-{n}");
        server.set_mode(Mode::Headers(503, headers));
        let client = C::new(registry.clone(), &name);
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
        assert_eq!(open_for(&registry, &name), Some(MAX), "{headers:?}");
        assert_eq!(client.get(server.url("/")).await, open(&name, MAX));
    }
}

pub(crate) async fn a_malformed_hint_is_ignored_and_counted<C: Client>() {
    const MALFORMED: [Headers; 8] = [
        GARBLED,
        &[("retry-after", b"-5")],
        &[("retry-after", b"1.5")],
        &[("retry-after", b"120s")],
        &[("retry-after", b"")],
        &[("retry-after", b"\xff\xfe")],
        &[("retry-after", b"120"), ("retry-after", b"120")],
        &[("retry-after", b"Sun, 06 Nov 1994 08:49:37 UTC")],
    ];
    #[cfg(feature = "metrics")]
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    #[cfg(feature = "metrics")]
    let snapshotter = recorder.snapshotter();
    #[cfg(feature = "metrics")]
    let _local = metrics::set_default_local_recorder(&recorder);

    let server = TestServer::start().await;
    let (registry, _mock) = mock_registry(hinted(1));
    for (n, headers) in MALFORMED.into_iter().enumerate() {
        let name = format!("malformed-{n}");
        server.set_mode(Mode::Headers(503, headers));
        let client = C::new(registry.clone(), &name);
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
        // Opened by the failure, for the configured duration.
        assert_eq!(open_for(&registry, &name), Some(OPEN), "{headers:?}");
    }

    #[cfg(feature = "metrics")]
    {
        use metrics_util::debugging::DebugValue;

        let mut counted: Vec<_> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| {
                let key = key.key();
                let label = |name: &str| {
                    key.labels()
                        .find(|l| l.key() == name)
                        .map(|l| l.value().to_owned())
                };
                let DebugValue::Counter(counter) = value else {
                    return None;
                };
                (key.name() == "fuse_hints_malformed_total")
                    .then(|| (label("key").unwrap(), label("header").unwrap(), counter))
            })
            .collect();
        counted.sort();
        let expected: Vec<_> = (0..MALFORMED.len())
            .map(|n| (format!("fuse:malformed-{n}"), "retry-after".to_owned(), 1))
            .collect();
        assert_eq!(counted, expected);
    }
}

pub(crate) async fn a_hint_on_a_failure_that_does_not_open_changes_nothing<C: Client>() {
    let server = TestServer::start().await;
    let (registry, _mock) = mock_registry(hinted(2));
    let client = C::new(registry.clone(), "billing");

    // Not a counted failure: not read.
    server.set_mode(Mode::Headers(429, &[("retry-after", b"600")]));
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(429));
    // Counted, but the circuit stays closed.
    server.set_mode(Mode::Headers(503, &[("retry-after", b"600")]));
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
    assert_eq!(registry.get("billing").state(), State::Closed);

    // The failure that opens it has no hint: the configured duration.
    server.set_mode(Mode::Status(503));
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
    assert_eq!(open_for(&registry, "billing"), Some(OPEN));
    assert_eq!(client.get(server.url("/")).await, open("billing", OPEN));
}

pub(crate) async fn an_http_date_is_read_against_the_wall_clock<C: Client>() {
    const PAST: [Headers; 3] = [
        &[("retry-after", b"Sun, 06 Nov 1994 08:49:37 GMT")],
        &[("retry-after", b"Sunday, 06-Nov-94 08:49:37 GMT")],
        &[("retry-after", b"Sun Nov  6 08:49:37 1994")],
    ];
    let server = TestServer::start().await;
    let (registry, _mock) = mock_registry(hinted(1));

    // Two minutes from now, to the second: a little less is left when the
    // answer is read.
    server.set_mode(Mode::RetryAt(503, secs(120)));
    let client = C::new(registry.clone(), "soon");
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
    let hinted = open_for(&registry, "soon").expect("open");
    assert!(
        hinted > secs(110) && hinted <= secs(120),
        "{hinted:?} for a date 120 s ahead"
    );

    // A date that has passed (the obsolete forms too): come back now, so
    // the configured duration.
    for (n, headers) in PAST.into_iter().enumerate() {
        let name = format!("past-{n}");
        server.set_mode(Mode::Headers(503, headers));
        let client = C::new(registry.clone(), &name);
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
        assert_eq!(open_for(&registry, &name), Some(OPEN), "{headers:?}");
    }
}
