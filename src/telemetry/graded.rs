//! The metrics of graded admission (SPEC §11): the calls a closed circuit
//! shed, counted by why (`fuse_calls_throttled_total`, label `reason`),
//! and the share of calls it admits (`fuse_admission`). Neither exists
//! for a circuit that never grades its admission: the counters are made
//! at its first shedding, the gauge at the first publication of a circuit
//! whose configuration grades it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use metrics::{Counter, Gauge, counter, gauge};

use crate::config::Config;
use crate::grade::Grading;
use crate::snapshot::{Snapshot, State};
use crate::transition::{Reason, Transition};

/// The counts of calls shed, by why.
struct Shed {
    ramp_up: Counter,
    throttle: Counter,
}

/// The admitted share, and what a ramp admits at its start (in percent,
/// 100 without a ramp) by the configuration last published with it: what
/// the gauge reads as the moment a probe closes the circuit.
struct Admission {
    gauge: Gauge,
    floor: AtomicU32,
}

/// One circuit's metrics of graded admission.
#[derive(Default)]
pub(super) struct Graded {
    shed: OnceLock<Shed>,
    admission: OnceLock<Admission>,
}

impl Graded {
    /// A call of the circuit `key` shed by `why`.
    pub(super) fn shed(&self, key: &str, why: Grading) {
        let shed = self.shed.get_or_init(|| Shed {
            ramp_up: throttled(key, Grading::RampUp),
            throttle: throttled(key, Grading::Throttle),
        });
        match why {
            Grading::RampUp => shed.ramp_up.increment(1),
            Grading::Throttle => shed.throttle.increment(1),
        }
    }

    /// Whether a publication of a circuit under `config` sets the gauge:
    /// its configuration grades admission, or it did when the gauge was
    /// made.
    pub(super) fn published(&self, config: &Config) -> bool {
        grades(config) || self.admission.get().is_some()
    }

    /// Sets the gauge of the circuit `key` from its `snapshot`, under
    /// `config`.
    pub(super) fn publish(&self, key: &str, snapshot: &Snapshot, config: &Config) {
        let admission = self.admission.get_or_init(|| Admission {
            gauge: gauge!("fuse_admission", "key" => key.to_owned()),
            floor: AtomicU32::new(100),
        });
        let floor = config.ramp_up().map_or(100, |_| config.ramp_up_floor());
        admission.floor.store(floor, Relaxed);
        admission.gauge.set(snapshot.admission.to_f64());
    }

    /// A transition: a probe that closes the circuit starts its ramp at
    /// the floor; any other change leaves every call to §3 (1).
    pub(super) fn transition(&self, transition: &Transition<'_>) {
        let Some(admission) = self.admission.get() else {
            return;
        };
        let ramps = transition.from == State::HalfOpen
            && transition.to == State::Closed
            && transition.reason == Reason::ProbesPassed;
        let percent = if ramps {
            admission.floor.load(Relaxed)
        } else {
            100
        };
        admission.gauge.set(f64::from(percent) / 100.0);
    }
}

/// Whether `config` grades a closed circuit's admission.
fn grades(config: &Config) -> bool {
    config.ramp_up().is_some() || config.throttle_k().is_some()
}

fn throttled(key: &str, why: Grading) -> Counter {
    counter!(
        "fuse_calls_throttled_total",
        "key" => key.to_owned(),
        "reason" => why.as_str()
    )
}
