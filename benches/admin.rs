//! What the admin API costs as a registry grows: a page of the list and
//! one circuit, through the router (no socket), with 1,000, 100,000 and
//! 1,000,000 circuits.
//!
//! ```sh
//! cargo bench --bench admin --features admin
//! ```
//!
//! - `admin_list/N`: `GET /circuits?limit=100&after=<a key in the middle>`,
//!   the answer's body read whole (about 35 KB of JSON).
//! - `admin_one/N`: `GET /circuits/{key}` of one circuit.
//! - `baseline_snapshot`: one `Fuse::snapshot`, what a circuit's view
//!   starts from.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use criterion::{BenchmarkId, Criterion};
use fuse_breaker::Registry;
use fuse_breaker::admin::Admin;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];

fn name(i: usize) -> String {
    format!("circuit-{i:07}")
}

/// The router's answer to `GET path`, its body read.
async fn get(router: &axum::Router, path: &str) -> usize {
    let request = http::Request::get(path)
        .header("host", "localhost")
        .body(Body::empty())
        .expect("a request");
    let response = router.clone().oneshot(request).await.expect("an answer");
    assert_eq!(response.status(), 200, "{path}");
    let body = response.into_body().collect().await.expect("a body");
    body.to_bytes().len()
}

fn admin(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let routers: Vec<(usize, axum::Router)> = SIZES
        .iter()
        .map(|&n| {
            let registry = Arc::new(
                Registry::builder()
                    .max_circuits(n)
                    .build()
                    .expect("a valid registry"),
            );
            for i in 0..n {
                registry.get(&name(i));
            }
            (
                n,
                Admin::new().registry(registry).router().expect("a router"),
            )
        })
        .collect();

    let mut list = c.benchmark_group("admin_list");
    for (n, router) in &routers {
        let path = format!("/circuits?limit=100&after=fuse:{}", name(n / 2));
        list.bench_with_input(BenchmarkId::from_parameter(n), &path, |b, path| {
            b.iter(|| black_box(runtime.block_on(get(router, path))));
        });
    }
    list.finish();

    let mut one = c.benchmark_group("admin_one");
    for (n, router) in &routers {
        let path = format!("/circuits/fuse:{}", name(n / 2));
        one.bench_with_input(BenchmarkId::from_parameter(n), &path, |b, path| {
            b.iter(|| black_box(runtime.block_on(get(router, path))));
        });
    }
    one.finish();

    let fuse = fuse_breaker::Fuse::new("billing", fuse_breaker::Config::default());
    c.bench_function("baseline_snapshot", |b| {
        b.iter(|| black_box(fuse.snapshot()));
    });
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .configure_from_args();
    admin(&mut criterion);
    criterion.final_summary();
}
