//! The reqwest middleware: a reqwest client with `FuseMiddleware`.

use std::sync::Arc;

use fuse_breaker::reqwest::{FuseMiddleware, Operation, open_error};
use fuse_breaker::{Registry, State, classify::FailureKind, classify::classify_error};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

use crate::common::server::{Mode, TestServer};
use crate::common::{integration_config, mock_registry};
use crate::{Client, Outcome, TIMEOUT};

fn client<B>(middleware: FuseMiddleware<B>) -> ClientWithMiddleware
where
    B: fuse_breaker::backing::Backing,
    FuseMiddleware<B>: reqwest_middleware::Middleware,
{
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .expect("a client");
    ClientBuilder::new(client).with(middleware).build()
}

/// reqwest with `FuseMiddleware::named(registry, name)`.
pub(crate) struct Reqwest(ClientWithMiddleware);

impl Client for Reqwest {
    fn new(registry: Arc<Registry>, name: &str) -> Self {
        Reqwest(client(FuseMiddleware::named(registry, name)))
    }

    async fn get(&self, url: String) -> Outcome {
        match self.0.get(url).send().await {
            Ok(res) => Outcome::Status(res.status().as_u16()),
            Err(err) => match open_error(&err) {
                Some(open) => Outcome::of(open),
                None if err.is_timeout() => Outcome::Failed(FailureKind::Timeout),
                None if err.is_connect() => Outcome::Failed(FailureKind::Connection),
                None => Outcome::Failed(classify_error(&err)),
            },
        }
    }
}

each_scenario!(Reqwest);

#[tokio::test(start_paused = true)]
async fn the_open_error_is_an_open_error_in_the_middleware_error() {
    let (registry, _mock) = mock_registry(integration_config());
    registry.get("billing").force_open();
    let client = client(FuseMiddleware::named(registry, "billing"));
    let err = client.get("http://127.0.0.1:9/").send().await.unwrap_err();
    // By hand, as the module docs show.
    let reqwest_middleware::Error::Middleware(inner) = &err else {
        panic!("not a middleware error: {err:?}");
    };
    assert!(inner.downcast_ref::<fuse_breaker::OpenError>().is_some());
}

#[tokio::test(start_paused = true)]
async fn operations_and_hosts_have_circuits_of_their_own() {
    let server = TestServer::start().await;
    let other = TestServer::start().await;
    server.set_mode(Mode::Status(503));
    let (registry, _mock) = mock_registry(integration_config());
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
        let err = charge().send().await.unwrap_err();
        assert_eq!(open_error(&err).unwrap().name(), server.authority());
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
    assert_eq!(registry.get(&other.authority()).state(), State::Closed);
    assert_eq!(
        registry.get_operation(&host, "charge").key(),
        format!("fuse:{host}:charge")
    );
}

#[cfg(feature = "store")]
#[tokio::test(start_paused = true)]
async fn a_shared_circuit_opens_for_the_hint_in_every_process() {
    use fuse_breaker::store::{MemoryStore, SharedRegistry};

    let server = TestServer::start().await;
    let store = Arc::new(MemoryStore::frozen());
    // Two processes' registries on one store.
    let registries: Vec<Arc<SharedRegistry>> = (0..2)
        .map(|_| {
            Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(crate::hints::hinted(1))
                    .store(store.clone())
                    .build()
                    .expect("defaults alone are valid"),
            )
        })
        .collect();
    for (name, headers, open_for) in [
        ("billing", crate::hints::IN_120_S, crate::common::secs(120)),
        ("ledger", crate::hints::GARBLED, crate::OPEN),
    ] {
        server.set_mode(Mode::Headers(503, headers));
        let client = client(FuseMiddleware::named(registries[0].clone(), name));
        let res = client
            .get(server.url("/"))
            .send()
            .await
            .expect("a response");
        assert_eq!(res.status(), 503);
        let snap = registries[1]
            .get(name)
            .snapshot()
            .await
            .expect("the store answers");
        assert_eq!(snap.state, State::Open, "{name}");
        assert_eq!(snap.open_for, Some(open_for), "{name}");
    }
}

/// A request reqwest cannot build is the caller's error: it never reaches
/// the circuit, and it is not a connection failure.
#[tokio::test(start_paused = true)]
async fn a_request_that_cannot_be_built_is_not_a_connection_failure() {
    let server = TestServer::start().await;
    let (registry, _mock) = mock_registry(integration_config());
    let client = client(FuseMiddleware::named(registry.clone(), "billing"));
    for n in 0..10 {
        let err = client
            .get(server.url("/"))
            .header("x-bad\nname", "1")
            .send()
            .await
            .unwrap_err();
        assert!(err.is_builder(), "request {n}: {err:?}");
        assert_eq!(classify_error(&err), FailureKind::Other, "request {n}");
    }
    let fuse = registry.get("billing");
    assert_eq!(fuse.state(), State::Closed);
    assert!(fuse.snapshot().failures.is_empty());
    assert_eq!(server.requests(), 0);
}
