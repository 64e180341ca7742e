//! The reqwest middleware over shared circuits: two clients (two
//! processes' worth) of one host trip one circuit.

use std::sync::Arc;

use fuse_breaker::State;
use fuse_breaker::reqwest::{FuseMiddleware, Operation, open_error};
use fuse_breaker::store::SharedRegistry;

use super::{block_on, config, stores};

fn client(registry: &Arc<SharedRegistry>) -> reqwest_middleware::ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(FuseMiddleware::per_host(registry.clone()))
        .build()
}

#[test]
fn clients_of_a_fleet_trip_one_circuit_per_host() {
    block_on(async {
        for (name, store) in stores() {
            // A port nobody listens on: every request is refused.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let url = format!("http://127.0.0.1:{port}/charge");
            let registries: Vec<Arc<SharedRegistry>> = (0..2)
                .map(|_| {
                    Arc::new(
                        fuse_breaker::Registry::builder()
                            .defaults(config(2, 1))
                            .store(store.clone().as_store())
                            .build()
                            .expect("defaults alone are valid"),
                    )
                })
                .collect();
            let (here, there) = (client(&registries[0]), client(&registries[1]));
            for client in [&here, &there] {
                let err = client.get(&url).send().await.unwrap_err();
                assert!(err.is_connect(), "{name}: {err}");
            }
            let host = format!("127.0.0.1:{port}");
            let circuit = registries[0].get(&host);
            assert_eq!(circuit.state().await.unwrap(), State::Open, "{name}");
            // The other client is refused without a connection attempt.
            let err = there.get(&url).send().await.unwrap_err();
            assert_eq!(open_error(&err).expect("open").name(), host, "{name}");
            // Another operation of the host has a circuit of its own.
            let err = there
                .get(&url)
                .with_extension(Operation::new("refund"))
                .send()
                .await
                .unwrap_err();
            assert!(open_error(&err).is_none(), "{name}");
            assert!(err.is_connect(), "{name}");
        }
    });
}
