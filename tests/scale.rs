//! A million distinct hosts through the reqwest middleware's circuit
//! selection, and a million distinct operations through tower's
//! `per_operation`, each in a registry of the default capacity: resident
//! memory stays under the README's bound. Selection only (no HTTP): each
//! call takes a permit of the circuit the request would use and succeeds.
//!
//! Release build, in CI: `cargo test --release --test scale -- --ignored
//! --nocapture` (a few seconds each).

use std::time::Instant;

use fuse_breaker::{Config, Registry, config::DEFAULT_MAX_CIRCUITS};

/// Calls per test.
const CALLS: usize = 1_000_000;

/// What the README promises: a registry at its default capacity stays
/// under this much resident memory, whatever the number of names.
const BOUND_BYTES: u64 = 64 << 20;

/// This process's resident memory in bytes (Linux).
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("a VmRSS line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// Runs `select` for `CALLS` distinct names and checks the registry and
/// the process's memory stay bounded.
fn bounded(what: &str, registry: &Registry, mut select: impl FnMut(usize)) {
    let before = resident();
    let started = Instant::now();
    let mut peak = before;
    for n in 0..CALLS {
        select(n);
        if n % 65_536 == 0 {
            peak = peak.max(resident());
        }
    }
    peak = peak.max(resident());
    let grew = peak.saturating_sub(before);
    println!(
        "{what}: {CALLS} names in {:?}; {} circuits held, {} overflowed, {} retired; \
         resident memory grew by {} KiB (peak {} KiB)",
        started.elapsed(),
        registry.len(),
        registry.overflows(),
        registry.retired(),
        grew / 1024,
        peak / 1024,
    );
    assert!(registry.len() <= DEFAULT_MAX_CIRCUITS);
    assert!(
        grew < BOUND_BYTES,
        "{what}: resident memory grew by {grew} bytes, over {BOUND_BYTES}"
    );
}

#[test]
#[ignore = "a million names: run in release (see the module docs)"]
fn a_million_hosts_through_the_middleware_selection() {
    let registry = Registry::new(Config::default());
    // What `FuseMiddleware::per_host` does with each request: the circuit
    // of its host and port, no operation.
    bounded("hosts", &registry, |n| {
        let host = format!("host-{n}.example.com:443");
        registry
            .try_acquire(&host, "")
            .expect("closed or overflow, never open here")
            .success();
    });
}

#[cfg(feature = "tower")]
#[test]
#[ignore = "a million names: run in release (see the module docs)"]
fn a_million_operations_through_per_operation() {
    use std::sync::Arc;

    use fuse_breaker::tower::{PerOperation, SelectCircuit};

    let registry = Arc::new(Registry::new(Config::default()));
    let by_path = PerOperation::new(registry.clone(), "api", |req: &http::Request<()>| {
        req.uri().path()
    });
    bounded("operations", &registry, |n| {
        let request = http::Request::builder()
            .uri(format!("/items/{n}"))
            .body(())
            .expect("a request");
        by_path
            .select(&request)
            .expect("closed or overflow, never open here")
            .success();
    });
}

#[test]
fn the_capacity_holds_for_a_few_thousand_names_in_a_debug_build() {
    let registry = Registry::builder()
        .max_circuits(100)
        .build()
        .expect("a valid registry");
    for n in 0..5_000 {
        registry
            .try_acquire(&format!("host-{n}"), "")
            .expect("admitted")
            .success();
    }
    assert_eq!(registry.len(), 100);
    assert_eq!(
        registry.overflows(),
        4_900,
        "nothing idle: the rest overflow"
    );
}
