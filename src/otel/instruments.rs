//! The instruments of the `opentelemetry` feature: the circuits the
//! observable instruments read (every live one, whichever provider it
//! was built under), and the instruments made on each global meter
//! provider a circuit was built under, made once per provider (an
//! observable instrument's callback cannot be taken back: one per
//! circuit would outlive it).

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{
    AsyncInstrument, Counter, Meter, ObservableCounter, ObservableGauge, ObservableUpDownCounter,
};

use super::{
    BY, Counts, FROM, OPENING_N, OUTCOME, REASON, STATE, STATES, TO, WINDOW_KIND, opening_n,
};
use crate::snapshot::State;
use crate::transition::Transition;

/// The circuits alive, by the number [`observe`] gave each.
#[derive(Default)]
struct Live {
    next: u64,
    circuits: HashMap<u64, Arc<Counts>, foldhash::fast::RandomState>,
}

fn live() -> MutexGuard<'static, Live> {
    static LIVE: OnceLock<Mutex<Live>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Adds a circuit's counts to those the observable instruments read;
/// returns the number to [`forget`] them by.
pub(super) fn observe(counts: Arc<Counts>) -> u64 {
    let mut live = live();
    live.next += 1;
    let number = live.next;
    live.circuits.insert(number, counts);
    number
}

/// The circuit `number` is gone.
pub(super) fn forget(number: u64) {
    let counts = live().circuits.remove(&number);
    // Its per-thread counts are freed outside the lock.
    drop(counts);
}

/// Calls `each` with the counts of every live circuit.
pub(super) fn each_circuit(mut each: impl FnMut(&Counts)) {
    for counts in live().circuits.values() {
        each(counts);
    }
}

/// The instruments made on one meter provider.
pub(super) struct Instruments {
    /// The provider they were made on: kept, so that a provider installed
    /// later is told from it.
    provider: Arc<dyn opentelemetry::metrics::MeterProvider + Send + Sync>,
    transitions: Counter<u64>,
    openings: Counter<u64>,
    reconfigurations: Counter<u64>,
    /// Kept with the provider's other instruments.
    _observed: Observed,
}

/// The observable instruments made on one meter provider (their
/// callbacks are the provider's).
#[allow(dead_code, reason = "kept, not read")]
struct Observed {
    calls: ObservableCounter<u64>,
    state: ObservableUpDownCounter<i64>,
    opening: ObservableGauge<f64>,
    window: ObservableGauge<u64>,
    admission: ObservableGauge<f64>,
    #[cfg(feature = "store")]
    store: (ObservableCounter<u64>, ObservableGauge<u64>),
}

impl std::fmt::Debug for Instruments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instruments").finish_non_exhaustive()
    }
}

/// The instruments of the global meter provider in place now (made on
/// it by the first circuit built under it).
pub(super) fn resolve() -> Arc<Instruments> {
    static CURRENT: Mutex<Option<Arc<Instruments>>> = Mutex::new(None);
    let provider = opentelemetry::global::meter_provider();
    let mut current = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
    match &*current {
        Some(instruments)
            if std::ptr::addr_eq(Arc::as_ptr(&instruments.provider), Arc::as_ptr(&provider)) =>
        {
            instruments.clone()
        }
        _ => {
            let meter = provider.meter("fuse_breaker");
            let instruments = Arc::new(Instruments::new(&meter, provider));
            *current = Some(instruments.clone());
            instruments
        }
    }
}

impl Instruments {
    fn new(
        meter: &Meter,
        provider: Arc<dyn opentelemetry::metrics::MeterProvider + Send + Sync>,
    ) -> Self {
        let transitions = meter
            .u64_counter("resilience.circuit_breaker.transitions")
            .with_description("State changes of circuit breakers (provisional name).")
            .with_unit("{transition}")
            .build();
        let openings = meter
            .u64_counter("resilience.circuit_breaker.openings")
            .with_description(
                "Openings of circuit breakers, by their n in a row (provisional name).",
            )
            .with_unit("{opening}")
            .build();
        let calls = meter
            .u64_observable_counter("resilience.circuit_breaker.calls")
            .with_description("Calls through circuit breakers, by outcome (provisional name).")
            .with_unit("{call}")
            .with_callback(|observer: &dyn AsyncInstrument<u64>| {
                each_circuit(|counts| {
                    for (outcome, calls) in counts.calls() {
                        observer
                            .observe(calls, &[counts.id.clone(), KeyValue::new(OUTCOME, outcome)]);
                    }
                });
            })
            .build();
        let state = meter
            .i64_observable_up_down_counter("resilience.circuit_breaker.state")
            .with_description(
                "1 for the state a circuit breaker is in, 0 for the others (provisional name).",
            )
            .with_unit("{circuit}")
            .with_callback(|observer: &dyn AsyncInstrument<i64>| {
                each_circuit(|counts| {
                    let now = counts.state();
                    for state in STATES {
                        observer.observe(
                            i64::from(state == now),
                            &[counts.id.clone(), KeyValue::new(STATE, state.as_str())],
                        );
                    }
                });
            })
            .build();
        let opening = meter
            .f64_observable_gauge("resilience.circuit_breaker.opening.duration")
            .with_description(
                "How long a circuit breaker's current opening lasts; 0 unless open (provisional name).",
            )
            .with_unit("s")
            .with_callback(|observer: &dyn AsyncInstrument<f64>| {
                each_circuit(|counts| {
                    // Relaxed: a gauge's value, read on its own.
                    let nanos = counts.opening.load(Relaxed);
                    observer.observe(seconds(nanos), std::slice::from_ref(&counts.id));
                });
            })
            .build();
        let reconfigurations = meter
            .u64_counter("resilience.circuit_breaker.reconfigurations")
            .with_description(
                "Configurations put in force while circuit breakers run, by who asked (provisional name).",
            )
            .with_unit("{reconfiguration}")
            .build();
        let (window, admission) = published(meter);
        Instruments {
            provider,
            transitions,
            openings,
            reconfigurations,
            _observed: Observed {
                calls,
                state,
                opening,
                window,
                admission,
                #[cfg(feature = "store")]
                store: store_instruments(meter),
            },
        }
    }

    /// Counts a reconfiguration of the circuit `id`, asked for by `by`.
    pub(super) fn reconfigured(&self, id: &KeyValue, by: &str) {
        self.reconfigurations
            .add(1, &[id.clone(), KeyValue::new(BY, by.to_owned())]);
    }

    /// Counts `transition` of the circuit `id`, and its opening.
    pub(super) fn transition(&self, id: &KeyValue, transition: &Transition<'_>) {
        self.transitions.add(
            1,
            &[
                id.clone(),
                KeyValue::new(FROM, transition.from.as_str()),
                KeyValue::new(TO, transition.to.as_str()),
                KeyValue::new(REASON, transition.reason.as_str()),
            ],
        );
        if transition.to == State::Open {
            self.openings.add(
                1,
                &[
                    id.clone(),
                    KeyValue::new(OPENING_N, opening_n(transition.openings)),
                ],
            );
        }
    }
}

/// The instruments of what a circuit's publication sets: its window and
/// its admitted share.
fn published(meter: &Meter) -> (ObservableGauge<u64>, ObservableGauge<f64>) {
    let window = meter
        .u64_observable_gauge("resilience.circuit_breaker.window.calls")
        .with_description(
            "Calls in a rate circuit breaker's window: all, failed, slow (provisional name).",
        )
        .with_unit("{call}")
        .with_callback(|observer: &dyn AsyncInstrument<u64>| {
            each_circuit(|counts| {
                for (kind, calls) in counts.window().into_iter().flatten() {
                    observer.observe(
                        calls,
                        &[counts.id.clone(), KeyValue::new(WINDOW_KIND, kind)],
                    );
                }
            });
        })
        .build();
    let admission = meter
        .f64_observable_gauge("resilience.circuit_breaker.admission")
        .with_description(
            "The share of calls a circuit breaker admits under graded admission (provisional name).",
        )
        .with_unit("1")
        .with_callback(|observer: &dyn AsyncInstrument<f64>| {
            each_circuit(|counts| {
                if let Some(share) = counts.admission() {
                    observer.observe(share, std::slice::from_ref(&counts.id));
                }
            });
        })
        .build();
    (window, admission)
}

/// The instruments of shared circuits' stores: outages and reachability.
#[cfg(feature = "store")]
fn store_instruments(meter: &Meter) -> (ObservableCounter<u64>, ObservableGauge<u64>) {
    let outages = meter
        .u64_observable_counter("resilience.circuit_breaker.store.outages")
        .with_description(
            "Times a shared circuit breaker's store stopped answering (provisional name).",
        )
        .with_unit("{outage}")
        .with_callback(|observer: &dyn AsyncInstrument<u64>| {
            each_circuit(|counts| {
                if let Some((store, outages, _)) = counts.store() {
                    observer.observe(outages, &[counts.id.clone(), store.clone()]);
                }
            });
        })
        .build();
    let reachable = meter
        .u64_observable_gauge("resilience.circuit_breaker.store.reachable")
        .with_description(
            "1 while a shared circuit breaker's store answers, 0 while its fallback decides (provisional name).",
        )
        .with_unit("1")
        .with_callback(|observer: &dyn AsyncInstrument<u64>| {
            each_circuit(|counts| {
                if let Some((store, _, reachable)) = counts.store() {
                    observer.observe(u64::from(reachable), &[counts.id.clone(), store.clone()]);
                }
            });
        })
        .build();
    (outages, reachable)
}

/// Nanoseconds as seconds (exact up to 2^53 ns, 104 days).
#[allow(clippy::cast_precision_loss)]
pub(super) fn seconds(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}
