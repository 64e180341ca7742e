//! The scenarios every integration passes, each over any [`Client`].

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::{Config, Registry, State, classify::FailureKind};

use crate::common::server::{Mode, TestServer, closed_port};
use crate::common::{integration_config, just_before, mock_registry};
use crate::{Client, OPEN, Outcome};

/// A refusal of the circuit `fuse:NAME` with `retry_after`.
pub(crate) fn open(name: &str, retry_after: Duration) -> Outcome {
    Outcome::Open {
        key: format!("fuse:{name}"),
        retry_after,
    }
}

pub(crate) async fn the_circuit_opens_at_the_threshold_and_sends_nothing_while_open<C: Client>() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, _mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "billing");
    let fuse = registry.get("billing");

    for n in 1..=3 {
        assert_eq!(fuse.state(), State::Closed, "open before failure {n}");
        // A counted status is still handed to the caller.
        assert_eq!(
            client.get(server.url("/charge")).await,
            Outcome::Status(503)
        );
    }
    assert_eq!(fuse.state(), State::Open);
    for _ in 0..5 {
        assert_eq!(
            client.get(server.url("/charge")).await,
            open("billing", OPEN)
        );
    }
    assert_eq!(server.requests(), 3, "no request leaves while open");
}

pub(crate) async fn probes_go_through_after_the_cooldown<C: Client>() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(502));
    let (registry, mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "billing");
    let fuse = registry.get("billing");
    for _ in 0..3 {
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(502));
    }
    assert_eq!(fuse.state(), State::Open);

    server.set_mode(Mode::Healthy);
    mock.increment(just_before(OPEN));
    assert_eq!(
        client.get(server.url("/")).await,
        open("billing", Duration::from_nanos(1)),
        "still cooling down"
    );
    assert_eq!(server.requests(), 3);

    mock.increment(Duration::from_nanos(1));
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(200));
    assert_eq!(fuse.state(), State::HalfOpen);
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(200));
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(server.requests(), 5);

    // A failed probe opens the circuit again.
    server.set_mode(Mode::Status(503));
    for _ in 0..3 {
        client.get(server.url("/")).await;
    }
    mock.increment(OPEN);
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot().opened_at, Some(OPEN * 2));
}

/// The circuit on the real clock and tokio on real time: the cooldown is
/// waited out, not stepped over.
pub(crate) async fn a_real_cooldown_of_150_ms<C: Client>() {
    let cooldown = Duration::from_millis(150);
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(504));
    let config = Config::builder()
        .failure_threshold(2)
        .open_duration(cooldown)
        .half_open_probes(1)
        .build()
        .expect("a valid configuration");
    let registry = Arc::new(Registry::new(config));
    let client = C::new(registry.clone(), "billing");
    for _ in 0..2 {
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(504));
    }
    let Outcome::Open { retry_after, .. } = client.get(server.url("/")).await else {
        panic!("the circuit must be open");
    };
    assert!(retry_after <= cooldown, "{retry_after:?}");

    server.set_mode(Mode::Healthy);
    tokio::time::sleep(cooldown + Duration::from_millis(50)).await;
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(200));
    assert_eq!(registry.get("billing").state(), State::Closed);
    assert_eq!(server.requests(), 3);
}

pub(crate) async fn timeouts_count<C: Client>() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    let (registry, _mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "slow");
    for _ in 0..3 {
        assert_eq!(
            client.get(server.url("/")).await,
            Outcome::Failed(FailureKind::Timeout)
        );
    }
    assert_eq!(registry.get("slow").state(), State::Open);
    assert_eq!(client.get(server.url("/")).await, open("slow", OPEN));
    assert_eq!(server.requests(), 3);
}

pub(crate) async fn timeouts_do_not_count_when_the_config_says_so<C: Client>() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    let config = integration_config()
        .to_builder()
        .count_timeouts(false)
        .build()
        .expect("a valid configuration");
    let (registry, _mock) = mock_registry(config);
    let client = C::new(registry.clone(), "slow");
    for _ in 0..4 {
        assert_eq!(
            client.get(server.url("/")).await,
            Outcome::Failed(FailureKind::Timeout)
        );
    }
    let fuse = registry.get("slow");
    assert_eq!(fuse.state(), State::Closed);
    assert!(fuse.snapshot().failures.is_empty());
    assert_eq!(server.requests(), 4);
}

pub(crate) async fn refused_connections_count<C: Client>() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (registry, _mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "gone");
    for _ in 0..3 {
        assert_eq!(
            client.get(url.clone()).await,
            Outcome::Failed(FailureKind::Connection)
        );
    }
    assert_eq!(registry.get("gone").state(), State::Open);
    assert_eq!(client.get(url).await, open("gone", OPEN));
}

pub(crate) async fn reset_connections_count<C: Client>() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Close);
    let (registry, _mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "flaky");
    for _ in 0..3 {
        assert_eq!(
            client.get(server.url("/")).await,
            Outcome::Failed(FailureKind::Connection)
        );
    }
    assert_eq!(registry.get("flaky").state(), State::Open);
    let received = server.requests();
    assert_eq!(client.get(server.url("/")).await, open("flaky", OPEN));
    assert_eq!(server.requests(), received);
}

pub(crate) async fn client_errors_and_uncounted_statuses_do_not_count<C: Client>() {
    let server = TestServer::start().await;
    let (registry, _mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "billing");
    let fuse = registry.get("billing");

    // Two counted failures, then uncounted answers: they neither count nor
    // clear the failures, as a success would.
    server.set_mode(Mode::Status(503));
    for _ in 0..2 {
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(503));
    }
    for status in [400, 401, 404, 409, 422, 429, 500, 501] {
        server.set_mode(Mode::Status(status));
        for _ in 0..5 {
            assert_eq!(client.get(server.url("/")).await, Outcome::Status(status));
        }
    }
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().failures.len(), 2, "ignored, not successes");

    // 500 counts when the configuration says so.
    let strict = integration_config()
        .to_builder()
        .count_http_500(true)
        .build()
        .expect("a valid configuration");
    let (strict, _mock) = mock_registry(strict);
    let strict_client = C::new(strict.clone(), "strict");
    server.set_mode(Mode::Status(500));
    for _ in 0..3 {
        assert_eq!(
            strict_client.get(server.url("/")).await,
            Outcome::Status(500)
        );
    }
    assert_eq!(strict.get("strict").state(), State::Open);

    server.set_mode(Mode::Healthy);
    assert_eq!(client.get(server.url("/")).await, Outcome::Status(200));
    assert!(fuse.snapshot().failures.is_empty(), "a success clears them");
}

pub(crate) async fn a_cancelled_probe_releases_its_slot<C: Client>() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "billing");
    let fuse = registry.get("billing");
    for _ in 0..3 {
        client.get(server.url("/")).await;
    }
    assert_eq!(fuse.state(), State::Open);

    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    mock.increment(OPEN);
    let mut probe = Box::pin(client.get(server.url("/")));
    // Poll the probe until the server has its request (it answers in 5 s,
    // after the client's timeout).
    for _ in 0..10 {
        let pending = tokio::time::timeout(Duration::from_millis(10), &mut probe).await;
        assert!(pending.is_err(), "the probe waits for the slow server");
        if server.requests() == 4 {
            break;
        }
    }
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_open_inflight, 1);
    assert_eq!(server.requests(), 4, "the probe reached the server");

    drop(probe);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(
        snap.half_open_inflight, 0,
        "the dropped probe released its slot"
    );
    assert_eq!(snap.half_open_successes, 0);

    server.set_mode(Mode::Healthy);
    for _ in 0..2 {
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(200));
    }
    assert_eq!(fuse.state(), State::Closed);
}
