//! Counters and a state gauge through the `metrics` facade (feature
//! `metrics`), labelled by the circuit's key.
//!
//! | metric | kind | counts |
//! | --- | --- | --- |
//! | `fuse_calls_admitted_total` | counter | permits granted |
//! | `fuse_calls_rejected_total` | counter | calls rejected by an open (or full half-open) circuit |
//! | `fuse_failures_total` | counter | counted-failure verdicts |
//! | `fuse_ignored_total` | counter | ignore verdicts (ignored errors, panics, dropped permits and futures) |
//! | `fuse_transitions_total` | counter | state changes, also labelled `to` and `reason` |
//! | `fuse_state` | gauge | 0 closed, 1 open, 2 half-open |
//! | `fuse_store_unreachable_total` | counter | outages of a shared circuit's store (feature `store`), also labelled `store` |
//! | `fuse_store_reachable` | gauge | 1 while a shared circuit's store answers, 0 while its fallback decides |
//!
//! Transitions reach the metrics as they reach any listener: a circuit
//! built with the feature registers its `Telemetry` among its own
//! listeners. Admission is the one count on the closed-success path, so it is kept in
//! per-thread counters (`lanes`: each thread writes counters of its own,
//! with a load and a store) and published as an absolute value when the circuit changes state, when a
//! registry lists it, and on [`Fuse::publish_metrics`](crate::Fuse::publish_metrics).
//! The other counts go to the recorder as they happen. Handles are
//! resolved at the first call of each circuit: install the recorder before
//! traffic starts.

use std::sync::OnceLock;

use metrics::{Counter, Gauge, counter, gauge};

use crate::events::Listener;
use crate::lanes::Count;
use crate::snapshot::State;
use crate::transition::Transition;

struct Handles {
    admitted: Counter,
    rejected: Counter,
    failures: Counter,
    ignored: Counter,
    state: Gauge,
}

/// One circuit's metrics.
pub(crate) struct Telemetry {
    key: String,
    admitted: Count,
    handles: OnceLock<Handles>,
}

impl Telemetry {
    pub(crate) fn new(key: &str) -> Self {
        Telemetry {
            key: key.to_owned(),
            admitted: Count::new(),
            handles: OnceLock::new(),
        }
    }

    fn handles(&self) -> &Handles {
        self.handles.get_or_init(|| {
            let key = || self.key.clone();
            let handles = Handles {
                admitted: counter!("fuse_calls_admitted_total", "key" => key()),
                rejected: counter!("fuse_calls_rejected_total", "key" => key()),
                failures: counter!("fuse_failures_total", "key" => key()),
                ignored: counter!("fuse_ignored_total", "key" => key()),
                state: gauge!("fuse_state", "key" => key()),
            };
            handles.state.set(0.0);
            handles
        })
    }

    /// A permit was granted: this thread's counter only.
    #[inline]
    pub(crate) fn admitted(&self) {
        self.admitted.add_one();
    }

    pub(crate) fn rejected(&self) {
        self.handles().rejected.increment(1);
    }

    pub(crate) fn failure(&self) {
        self.handles().failures.increment(1);
    }

    pub(crate) fn ignored(&self) {
        self.handles().ignored.increment(1);
    }

    /// Publishes the admission count (summed over the threads).
    pub(crate) fn publish(&self) {
        self.handles().admitted.absolute(self.admitted.sum());
    }
}

/// The transition half of the sink: a listener each circuit registers.
impl Listener for Telemetry {
    fn on_transition(&self, transition: &Transition) {
        counter!(
            "fuse_transitions_total",
            "key" => self.key.clone(),
            "to" => transition.to.as_str(),
            "reason" => transition.reason.as_str()
        )
        .increment(1);
        let code = match transition.to {
            State::Closed => 0.0,
            State::Open => 1.0,
            State::HalfOpen => 2.0,
        };
        self.handles().state.set(code);
        self.publish();
    }

    #[cfg(feature = "store")]
    fn on_store(&self, event: &crate::events::StoreEvent<'_>) {
        if event.overwritten.is_some() {
            counter!(
                "fuse_store_overwritten_total",
                "key" => self.key.clone(),
                "store" => event.store.to_owned()
            )
            .increment(1);
            return;
        }
        if !event.reachable {
            counter!(
                "fuse_store_unreachable_total",
                "key" => self.key.clone(),
                "store" => event.store.to_owned()
            )
            .increment(1);
        }
        gauge!("fuse_store_reachable", "key" => self.key.clone())
            .set(f64::from(u8::from(event.reachable)));
    }
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}
