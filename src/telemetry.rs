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
//!
//! Transitions reach the metrics as they reach any listener: a circuit
//! built with the feature registers its `Telemetry` among its own
//! listeners. Admission is the one count on the closed-success path, so it is kept in
//! per-thread stripes (each thread writes a cache line of its own) and
//! published as an absolute value when the circuit changes state, when a
//! registry lists it, and on [`Fuse::publish_metrics`](crate::Fuse::publish_metrics).
//! The other counts go to the recorder as they happen. Handles are
//! resolved at the first call of each circuit: install the recorder before
//! traffic starts.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use crossbeam_utils::CachePadded;
use metrics::{Counter, Gauge, counter, gauge};

use crate::events::Listener;
use crate::snapshot::State;
use crate::transition::Transition;

/// How many stripes the admission count is spread over.
const STRIPES: usize = 8;

/// The index of this thread's stripe, handed out round robin.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        if index.get() == usize::MAX {
            index.set(NEXT.fetch_add(1, Relaxed) % STRIPES);
        }
        index.get()
    })
}

struct Handles {
    admitted: Counter,
    rejected: Counter,
    failures: Counter,
    ignored: Counter,
    state: Gauge,
}

/// One circuit's metrics.
#[derive(Default)]
pub(crate) struct Telemetry {
    key: &'static str,
    admitted: [CachePadded<AtomicU64>; STRIPES],
    handles: OnceLock<Handles>,
}

impl Telemetry {
    pub(crate) fn new(key: &'static str) -> Self {
        Telemetry {
            key,
            ..Telemetry::default()
        }
    }

    fn handles(&self) -> &Handles {
        self.handles.get_or_init(|| {
            let key = self.key;
            let handles = Handles {
                admitted: counter!("fuse_calls_admitted_total", "key" => key),
                rejected: counter!("fuse_calls_rejected_total", "key" => key),
                failures: counter!("fuse_failures_total", "key" => key),
                ignored: counter!("fuse_ignored_total", "key" => key),
                state: gauge!("fuse_state", "key" => key),
            };
            handles.state.set(0.0);
            handles
        })
    }

    /// A permit was granted: this thread's stripe only.
    #[inline]
    pub(crate) fn admitted(&self) {
        // Relaxed: a count; nothing is ordered by it.
        self.admitted[stripe()].fetch_add(1, Relaxed);
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

    /// Publishes the admission count (summed over the stripes).
    pub(crate) fn publish(&self) {
        let total = self
            .admitted
            .iter()
            .map(|stripe| stripe.load(Relaxed))
            .sum();
        self.handles().admitted.absolute(total);
    }
}

/// The transition half of the sink: a listener each circuit registers.
impl Listener for Telemetry {
    fn on_transition(&self, transition: &Transition) {
        counter!(
            "fuse_transitions_total",
            "key" => self.key,
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
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}
