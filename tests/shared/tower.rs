//! The tower layer over shared circuits: two services (two processes'
//! worth) of one dependency trip and recover one circuit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};

use fuse_breaker::State;
use fuse_breaker::store::{Refusal, SharedFuse};
use fuse_breaker::tower::{BoxError, FuseLayer};
use tower::{Layer, ServiceExt, service_fn};

use super::{block_on, circuit, config, secs, stores};

#[test]
fn services_of_a_fleet_trip_and_recover_one_circuit() {
    block_on(async {
        for (name, store) in stores() {
            // The dependency: answers with the status the test sets, and
            // counts the calls that reach it.
            let status = Arc::new(AtomicU16::new(503));
            let calls = Arc::new(AtomicUsize::new(0));
            let service = |fuse: Arc<SharedFuse>| {
                let (status, calls) = (status.clone(), calls.clone());
                FuseLayer::new(fuse).layer(service_fn(move |_req: http::Request<()>| {
                    let (status, calls) = (status.clone(), calls.clone());
                    async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        let status = status.load(Ordering::SeqCst);
                        Ok::<_, std::io::Error>(
                            http::Response::builder().status(status).body(()).unwrap(),
                        )
                    }
                }))
            };
            let here = Arc::new(circuit(&store, "billing", &config(2, 1)));
            let there = Arc::new(circuit(&store, "billing", &config(2, 1)));
            let (a, b) = (service(here.clone()), service(there.clone()));
            for svc in [&a, &b] {
                let res = svc.clone().oneshot(http::Request::new(())).await.unwrap();
                assert_eq!(res.status(), 503, "{name}: the response reaches the caller");
            }
            assert_eq!(here.state().await.unwrap(), State::Open, "{name}");
            let err: BoxError = b.clone().oneshot(http::Request::new(())).await.unwrap_err();
            let refusal = err
                .downcast_ref::<Refusal>()
                .expect("refused by the circuit");
            assert!(refusal.open_error().is_some(), "{name}");
            assert_eq!(
                calls.load(Ordering::SeqCst),
                2,
                "{name}: the open circuit sent nothing"
            );

            store.advance(secs(30));
            status.store(200, Ordering::SeqCst);
            let res = a.clone().oneshot(http::Request::new(())).await.unwrap();
            assert_eq!(res.status(), 200, "{name}: the probe");
            assert_eq!(there.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}

#[test]
fn a_layer_per_operation_over_shared_registries_trips_each_operation_for_the_fleet() {
    block_on(async {
        for (name, store) in stores() {
            // Two processes' registries of one dependency on one store, each
            // with a layer that picks the circuit by the request's path.
            let registry = || {
                Arc::new(
                    fuse_breaker::Registry::builder()
                        .defaults(config(1, 1))
                        .store(store.clone().as_store())
                        .build()
                        .expect("a valid configuration"),
                )
            };
            let (here, there) = (registry(), registry());
            let calls = Arc::new(AtomicUsize::new(0));
            let service = |registry| {
                let calls = calls.clone();
                let by_path =
                    FuseLayer::per_operation(registry, "billing", |req: &http::Request<()>| {
                        req.uri().path().trim_start_matches('/')
                    });
                by_path.layer(service_fn(move |req: http::Request<()>| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let status = if req.uri().path() == "/charge" {
                        503
                    } else {
                        200
                    };
                    async move {
                        Ok::<_, std::io::Error>(
                            http::Response::builder().status(status).body(()).unwrap(),
                        )
                    }
                }))
            };
            let (a, b) = (service(here.clone()), service(there.clone()));
            let request = |path: &str| http::Request::builder().uri(path).body(()).unwrap();

            let res = a.clone().oneshot(request("/charge")).await.unwrap();
            assert_eq!(res.status(), 503, "{name}");
            let err: BoxError = b.clone().oneshot(request("/charge")).await.unwrap_err();
            assert!(
                err.downcast_ref::<Refusal>()
                    .and_then(Refusal::open_error)
                    .is_some(),
                "{name}: the other process's charge is refused: {err}"
            );
            let res = b.clone().oneshot(request("/refund")).await.unwrap();
            assert_eq!(res.status(), 200, "{name}: refund trips separately");
            assert_eq!(calls.load(Ordering::SeqCst), 2, "{name}");
            let charge = there.get_operation("billing", "charge");
            assert_eq!(charge.state().await.unwrap(), State::Open, "{name}");
            assert_eq!(charge.key(), "fuse:billing:charge", "{name}");
        }
    });
}
