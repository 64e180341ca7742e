//! One test per rule of SPEC.md §1-§5 and §9-§11, on the public API only, driven by a
//! mock clock (time starts at 0 and moves only when a test moves it): one
//! module per section of the specification, the helpers here.

use std::cell::Cell;
use std::future::Future;
use std::io::{self, ErrorKind};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use fuse_breaker::{
    Config, Error, Fuse, OpenError, Permit, Snapshot, State, Verdict, classify::FailureKind,
    config::ConfigBuilder, config::MAX_DURATION, config::MAX_FAILURE_THRESHOLD,
    config::MAX_HALF_OPEN_PROBES, config::MAX_MINIMUM_CALLS, config::MAX_WINDOW_BUCKETS,
    config::Policy,
};
use quanta::{Clock, Mock};

#[path = "../common/mod.rs"]
mod common;
use common::{NS, just_before, secs, set_time};

const THREADS: usize = 8;

fn build(builder: ConfigBuilder) -> Config {
    builder.build().expect("a valid configuration")
}

use common::config;

fn circuit(config: Config) -> (Fuse, Arc<Mock>) {
    common::circuit("spec", config)
}

fn closed_permit(fuse: &Fuse) -> Permit<'_> {
    let permit = fuse.try_acquire().expect("a closed circuit admits");
    assert!(!permit.is_probe(), "expected a closed permit");
    permit
}

fn probe(fuse: &Fuse) -> Permit<'_> {
    let permit = fuse.try_acquire().expect("a probe slot is free");
    assert!(permit.is_probe(), "expected a probe");
    permit
}

fn rejection(fuse: &Fuse) -> OpenError {
    match fuse.try_acquire() {
        Ok(permit) => panic!("expected a rejection, got {permit:?}"),
        Err(err) => err,
    }
}

fn fail(fuse: &Fuse) {
    closed_permit(fuse).failure();
}

/// Records `failure_threshold` failures now; the circuit must open.
fn trip(fuse: &Fuse) {
    for _ in 0..fuse.config().failure_threshold() {
        fail(fuse);
    }
    assert_eq!(
        fuse.state(),
        State::Open,
        "the threshold must open the circuit"
    );
}

/// A snapshot as the rules expect it, compared field by field with the
/// one a circuit gives (`Snapshot` is non-exhaustive: only the crate makes
/// one).
#[derive(Debug)]
struct Expected {
    state: State,
    opened_at: Option<Duration>,
    failures: Vec<Duration>,
    half_open_successes: u32,
    half_open_inflight: u32,
}

impl PartialEq<Expected> for Snapshot {
    fn eq(&self, expected: &Expected) -> bool {
        self.state == expected.state
            && self.opened_at == expected.opened_at
            && self.failures == expected.failures
            && self.half_open_successes == expected.half_open_successes
            && self.half_open_inflight == expected.half_open_inflight
    }
}

fn closed(failures: Vec<Duration>) -> Expected {
    Expected {
        state: State::Closed,
        opened_at: None,
        failures,
        half_open_successes: 0,
        half_open_inflight: 0,
    }
}

fn open(opened_at: Duration) -> Expected {
    Expected {
        state: State::Open,
        opened_at: Some(opened_at),
        failures: Vec::new(),
        half_open_successes: 0,
        half_open_inflight: 0,
    }
}

fn half_open(opened_at: Duration, successes: u32, inflight: u32) -> Expected {
    Expected {
        state: State::HalfOpen,
        opened_at: Some(opened_at),
        failures: Vec::new(),
        half_open_successes: successes,
        half_open_inflight: inflight,
    }
}

fn io_err(kind: ErrorKind) -> io::Error {
    io::Error::new(kind, format!("{kind:?} from the dependency"))
}

mod admission;
mod classification;
mod coarse_clock;
mod configuration;
mod graded;
mod keys;
mod live;
mod manual_control;
mod policies;
mod reads;
mod recovery;
mod shapes;
mod snapshot;
mod stale_verdicts;
mod verdicts;
