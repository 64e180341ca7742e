//! Graded admission (SPEC §11) through every integration: a closed circuit
//! that ramps up after it recovered sheds calls before they leave, with a
//! rejection that says why and asks no one to wait.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::{Config, Fuse, Grading, Registry, State};

use crate::common::mock_registry;
use crate::common::server::TestServer;
use crate::{Client, OPEN, Outcome};

/// How long the ramp lasts.
pub(crate) const RAMP: Duration = Duration::from_secs(100);

/// One failure opens for [`OPEN`], one probe closes, and a ramp of
/// [`RAMP`] admits 1 % of calls at its start.
pub(crate) fn ramping() -> Config {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(OPEN)
        .ramp_up(RAMP)
        .ramp_up_floor(1)
        .build()
        .expect("a valid configuration")
}

/// A shedding of the circuit `fuse:NAME` by `why`, with nothing to wait.
pub(crate) fn shed(name: &str, why: Grading) -> Outcome {
    Outcome::Shed {
        key: format!("fuse:{name}"),
        why,
        retry_after: Duration::ZERO,
    }
}

/// Opens `fuse` and lets the next call through `probe` be its probe,
/// which closes it: the ramp starts then. This thread's draws are
/// seeded, so that what the ramp sheds is the same on every run.
pub(crate) async fn recovered<F: Future<Output = Outcome>>(
    fuse: &Fuse,
    mock: &quanta::Mock,
    probe: F,
) {
    fastrand::seed(0x5eed);
    fuse.force_open();
    mock.increment(OPEN);
    assert_eq!(probe.await, Outcome::Status(200), "the probe");
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().graded_by, Some(Grading::RampUp));
}

/// At the start of the ramp nearly every call is shed, and none of those
/// reaches the server; the circuit stays closed, and once the ramp is
/// over every call goes through.
pub(crate) async fn a_ramp_sheds_calls_before_they_leave_and_asks_no_wait<C: Client>() {
    let server = TestServer::start().await;
    let (registry, mock): (Arc<Registry>, _) = mock_registry(ramping());
    let client = C::new(registry.clone(), "billing");
    let fuse = registry.get("billing");
    recovered(&fuse, &mock, client.get(server.url("/"))).await;

    let mut shed_calls = 0;
    for n in 0..100 {
        match client.get(server.url("/")).await {
            Outcome::Status(200) => {}
            outcome => {
                assert_eq!(outcome, shed("billing", Grading::RampUp), "call {n}");
                shed_calls += 1;
            }
        }
    }
    assert!(
        shed_calls >= 90,
        "1 % admitted, yet {shed_calls} of 100 shed"
    );
    assert_eq!(
        server.requests(),
        1 + 100 - shed_calls,
        "shed calls never leave"
    );
    let shown = fuse.snapshot();
    assert_eq!(shown.state, State::Closed);
    assert!(shown.failures.is_empty(), "a shed call counts as nothing");

    mock.increment(RAMP);
    for _ in 0..20 {
        assert_eq!(client.get(server.url("/")).await, Outcome::Status(200));
    }
    assert_eq!(fuse.snapshot().graded_by, None, "the ramp is over");
}
