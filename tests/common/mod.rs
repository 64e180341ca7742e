//! Helpers shared by the integration tests: time on the mock clock, and
//! (features `tower` or `reqwest`) a local HTTP server.

// Each test crate uses its own subset of these helpers.
#![allow(dead_code)]

use std::time::Duration;

use quanta::Mock;

#[cfg(any(feature = "tower", feature = "reqwest"))]
pub(crate) mod server;

/// One nanosecond.
pub(crate) const NS: Duration = Duration::from_nanos(1);

/// `s` seconds.
pub(crate) fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// One nanosecond before `t`.
pub(crate) fn just_before(t: Duration) -> Duration {
    t.checked_sub(NS).expect("t > 0")
}

/// Moves the mock clock forward to the absolute time `t`.
pub(crate) fn set_time(mock: &Mock, t: Duration) {
    let now = Duration::from_nanos(mock.value());
    let step = t
        .checked_sub(now)
        .unwrap_or_else(|| panic!("the mock clock only moves forward ({now:?} -> {t:?})"));
    mock.increment(step);
}

/// A valid configuration: the defaults (window 60 s, open 30 s) with this
/// threshold and number of probes.
pub(crate) fn config(threshold: u32, probes: u32) -> fuse_breaker::Config {
    fuse_breaker::Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .build()
        .expect("a valid configuration")
}

/// A circuit named `name` with `config`, on a mock clock at time zero:
/// the one way the integration tests make a circuit.
pub(crate) fn circuit(
    name: &str,
    config: fuse_breaker::Config,
) -> (fuse_breaker::Fuse, std::sync::Arc<Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let fuse = fuse_breaker::Fuse::builder(name)
        .config(config)
        .clock(clock)
        .build();
    (fuse, mock)
}

/// A registry whose circuits share one mock clock (at time zero).
pub(crate) fn mock_registry(
    defaults: fuse_breaker::Config,
) -> (std::sync::Arc<fuse_breaker::Registry>, std::sync::Arc<Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let registry = fuse_breaker::Registry::builder()
        .defaults(defaults)
        .clock(clock)
        .build()
        .expect("a valid registry");
    (std::sync::Arc::new(registry), mock)
}

/// The settings the integration tests use: threshold 3, open 30 s, 2 probes.
pub(crate) fn integration_config() -> fuse_breaker::Config {
    fuse_breaker::Config::builder()
        .failure_threshold(3)
        .open_duration(secs(30))
        .half_open_probes(2)
        .build()
        .expect("a valid configuration")
}

/// A runtime of two worker threads, for many tasks at once.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The server the variable `var` names (`FUSE_TEST_REDIS_URL`,
/// `FUSE_TEST_DATABASE_URL`), for the tests of `what`. Under `CI=true` a
/// missing server fails the run; elsewhere its tests are skipped, said
/// once per variable.
pub(crate) fn server(var: &str, what: &str) -> Option<String> {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and no {var}: the {what} tests cannot be skipped"
            );
            let mut said = SAID
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !said.iter().any(|done| done == var) {
                eprintln!("{var} is not set: the {what} tests are skipped");
                said.push(var.to_owned());
            }
            None
        }
    }
}

/// A name no other test or run uses (the servers outlive the run).
pub(crate) fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{what}-{}-{nanos}", std::process::id())
}
