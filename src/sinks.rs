//! The sinks of the `tracing` and `metrics` features: listeners like a
//! user's, which every circuit (in-process or shared) registers when it is
//! built, ahead of any listener the user adds. Installed here only, so a
//! new sink is added in one place.

#[cfg(any(feature = "tracing", feature = "metrics"))]
use std::sync::Arc;

#[cfg(any(feature = "tracing", feature = "metrics"))]
use crate::events::Listener;
use crate::events::Listeners;

/// The sinks [`install`] registered that a circuit also calls directly.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) struct Sinks {
    /// The circuit's metrics, which count admissions and verdicts besides
    /// the transitions they hear of as a listener.
    #[cfg(feature = "metrics")]
    pub(crate) telemetry: Arc<crate::telemetry::Telemetry>,
}

/// Adds to `listeners` the sinks of the features that are on (the
/// `tracing` sink, then the metrics of the circuit `key`), and returns
/// those a circuit calls itself.
pub(crate) fn install(listeners: &Listeners, key: &str) -> Sinks {
    #[cfg(feature = "tracing")]
    listeners.add(&(Arc::new(crate::trace::TraceSink) as Arc<dyn Listener>));
    #[cfg(feature = "metrics")]
    let telemetry = Arc::new(crate::telemetry::Telemetry::new(key));
    #[cfg(feature = "metrics")]
    listeners.add(&(telemetry.clone() as Arc<dyn Listener>));
    #[cfg(not(any(feature = "tracing", feature = "metrics")))]
    let _ = listeners;
    #[cfg(not(feature = "metrics"))]
    let _ = key;
    Sinks {
        #[cfg(feature = "metrics")]
        telemetry,
    }
}

#[cfg(test)]
mod tests;
