//! The reqwest middleware over real sockets: a reqwest client with
//! `FuseMiddleware`, talking to a local server that answers, fails, answers
//! late or resets its connections. Circuits run on a mock clock, except in
//! one test that waits out a real 150 ms cooldown.

#![cfg(feature = "reqwest")]

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::reqwest::{FuseMiddleware, Operation, open_error};
use fuse_breaker::{Config, Registry, State};
use quanta::Mock;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

mod common;
use common::just_before;
use common::server::{Mode, TestServer, closed_port};

/// How long the client waits for an answer.
const TIMEOUT: Duration = Duration::from_millis(150);
const OPEN: Duration = Duration::from_secs(30);

fn config() -> Config {
    common::integration_config()
}

fn registry(config: Config) -> (Arc<Registry>, Arc<Mock>) {
    common::mock_registry(config)
}

fn client(middleware: FuseMiddleware) -> ClientWithMiddleware {
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .expect("a client");
    ClientBuilder::new(client).with(middleware).build()
}

#[tokio::test]
async fn the_circuit_opens_at_the_threshold_and_sends_nothing_while_open() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, _mock) = registry(config());
    let client = client(FuseMiddleware::per_host(registry.clone()));
    let fuse = registry.get(&server.authority());

    for _ in 0..3 {
        let res = client
            .get(server.url("/"))
            .send()
            .await
            .expect("a response");
        assert_eq!(res.status(), 503);
    }
    assert_eq!(fuse.state(), State::Open);
    for _ in 0..5 {
        let err = client.get(server.url("/")).send().await.unwrap_err();
        let open = open_error(&err).expect("an OpenError");
        assert_eq!(open.name(), server.authority());
        assert_eq!(open.retry_after(), OPEN);
        // By hand, as the module docs show.
        let reqwest_middleware::Error::Middleware(inner) = &err else {
            panic!("not a middleware error: {err:?}");
        };
        assert!(inner.downcast_ref::<fuse_breaker::OpenError>().is_some());
    }
    assert_eq!(server.requests(), 3, "no request leaves while open");
}

#[tokio::test]
async fn probes_go_through_after_the_cooldown() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(502));
    let (registry, mock) = registry(config());
    let client = client(FuseMiddleware::named(registry.clone(), "billing"));
    let fuse = registry.get("billing");
    for _ in 0..3 {
        client
            .get(server.url("/"))
            .send()
            .await
            .expect("a response");
    }
    assert_eq!(fuse.state(), State::Open);

    server.set_mode(Mode::Healthy);
    mock.increment(just_before(OPEN));
    assert!(client.get(server.url("/")).send().await.is_err());
    assert_eq!(server.requests(), 3);

    mock.increment(Duration::from_nanos(1));
    for _ in 0..2 {
        let res = client.get(server.url("/")).send().await.expect("a probe");
        assert_eq!(res.text().await.unwrap(), "ok");
    }
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(server.requests(), 5);
}

#[tokio::test]
async fn a_real_cooldown_of_150_ms() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(504));
    let config = Config::builder()
        .failure_threshold(2)
        .open_duration(Duration::from_millis(150))
        .half_open_probes(1)
        .build()
        .unwrap();
    let registry = Arc::new(Registry::new(config));
    let client = client(FuseMiddleware::per_host(registry.clone()));
    for _ in 0..2 {
        client
            .get(server.url("/"))
            .send()
            .await
            .expect("a response");
    }
    let err = client.get(server.url("/")).send().await.unwrap_err();
    assert!(open_error(&err).unwrap().retry_after() <= Duration::from_millis(150));

    server.set_mode(Mode::Healthy);
    tokio::time::sleep(Duration::from_millis(200)).await;
    client
        .get(server.url("/"))
        .send()
        .await
        .expect("the probe runs");
    assert_eq!(registry.get(&server.authority()).state(), State::Closed);
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn timeouts_count() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    let (registry, _mock) = registry(config());
    let client = client(FuseMiddleware::per_host(registry.clone()));
    for _ in 0..3 {
        let err = client.get(server.url("/")).send().await.unwrap_err();
        assert!(err.is_timeout(), "{err:?}");
    }
    assert_eq!(registry.get(&server.authority()).state(), State::Open);
    let err = client.get(server.url("/")).send().await.unwrap_err();
    assert!(open_error(&err).is_some());
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn timeouts_do_not_count_when_the_config_says_so() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    let (registry, _mock) = registry(config().to_builder().count_timeouts(false).build().unwrap());
    let client = client(FuseMiddleware::per_host(registry.clone()));
    for _ in 0..4 {
        assert!(
            client
                .get(server.url("/"))
                .send()
                .await
                .unwrap_err()
                .is_timeout()
        );
    }
    let fuse = registry.get(&server.authority());
    assert_eq!(fuse.state(), State::Closed);
    assert!(fuse.snapshot().failures.is_empty());
}

#[tokio::test]
async fn refused_connections_count() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let (registry, _mock) = registry(config());
    let client = client(FuseMiddleware::per_host(registry.clone()));
    for _ in 0..3 {
        let err = client.get(&url).send().await.unwrap_err();
        assert!(err.is_connect(), "{err:?}");
    }
    let fuse = registry.get(&format!("127.0.0.1:{port}"));
    assert_eq!(fuse.state(), State::Open);
    assert!(open_error(&client.get(&url).send().await.unwrap_err()).is_some());
}

#[tokio::test]
async fn reset_connections_count() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Close);
    let (registry, _mock) = registry(config());
    let client = client(FuseMiddleware::per_host(registry.clone()));
    for _ in 0..3 {
        let err = client.get(server.url("/")).send().await.unwrap_err();
        assert!(open_error(&err).is_none(), "{err:?}");
    }
    assert_eq!(registry.get(&server.authority()).state(), State::Open);
    let received = server.requests();
    assert!(open_error(&client.get(server.url("/")).send().await.unwrap_err()).is_some());
    assert_eq!(server.requests(), received);
}

#[tokio::test]
async fn client_errors_and_uncounted_statuses_do_not_count() {
    let server = TestServer::start().await;
    let (registry, _mock) = registry(config());
    let client = client(FuseMiddleware::per_host(registry.clone()));
    let fuse = registry.get(&server.authority());

    server.set_mode(Mode::Status(503));
    for _ in 0..2 {
        client
            .get(server.url("/"))
            .send()
            .await
            .expect("a response");
    }
    for status in [400, 401, 404, 409, 422, 429, 500] {
        server.set_mode(Mode::Status(status));
        for _ in 0..5 {
            let res = client
                .get(server.url("/"))
                .send()
                .await
                .expect("a response");
            assert_eq!(res.status().as_u16(), status);
        }
    }
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().failures.len(), 2, "ignored, not successes");

    server.set_mode(Mode::Healthy);
    client
        .get(server.url("/"))
        .send()
        .await
        .expect("a response");
    assert!(fuse.snapshot().failures.is_empty(), "a success clears them");
}

#[tokio::test]
async fn operations_and_hosts_have_circuits_of_their_own() {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, _mock) = registry(config());
    let client = client(FuseMiddleware::per_host(registry.clone()));
    let charge = || {
        client
            .post(server.url("/charge"))
            .with_extension(Operation::new("charge"))
    };
    let refund = || {
        client
            .post(server.url("/refund"))
            .with_extension(Operation::new(String::from("refund")))
    };

    for _ in 0..3 {
        charge().send().await.expect("a response");
    }
    for _ in 0..5 {
        assert!(open_error(&charge().send().await.unwrap_err()).is_some());
    }
    server.set_mode(Mode::Healthy);
    for _ in 0..5 {
        assert_eq!(refund().send().await.expect("refunds go on").status(), 200);
        assert_eq!(
            client.get(other.url("/")).send().await.unwrap().status(),
            200
        );
    }
    assert_eq!(server.requests_to("/charge"), 3);
    assert_eq!(server.requests_to("/refund"), 5);
    assert_eq!(other.requests(), 5);
    let host = server.authority();
    assert_eq!(registry.get_operation(&host, "charge").state(), State::Open);
    assert_eq!(
        registry.get_operation(&host, "refund").state(),
        State::Closed
    );
    assert_eq!(registry.get(&host).state(), State::Closed);
    assert_eq!(
        registry.get_operation(&host, "charge").key(),
        format!("fuse:{host}:charge")
    );
}

#[tokio::test]
async fn a_cancelled_probe_releases_its_slot() {
    let server = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, mock) = registry(config());
    let client = client(FuseMiddleware::named(registry.clone(), "billing"));
    let fuse = registry.get("billing");
    for _ in 0..3 {
        client
            .get(server.url("/"))
            .send()
            .await
            .expect("a response");
    }
    assert_eq!(fuse.state(), State::Open);

    server.set_mode(Mode::Slow(Duration::from_secs(5)));
    mock.increment(OPEN);
    let mut probe = Box::pin(client.get(server.url("/")).send());
    // Poll the probe until the server has its request (it answers in 5 s).
    for _ in 0..100 {
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
    assert_eq!(
        snap.half_open_inflight, 0,
        "the dropped probe released its slot"
    );
    assert_eq!(snap.state, State::HalfOpen);

    server.set_mode(Mode::Healthy);
    for _ in 0..2 {
        client.get(server.url("/")).send().await.expect("a probe");
    }
    assert_eq!(fuse.state(), State::Closed);
}
