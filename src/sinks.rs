//! The sinks of the `tracing`, `metrics` and `opentelemetry` features:
//! listeners like a user's, which every circuit (in-process or shared)
//! registers when it is built, ahead of any listener the user adds.
//! Installed here only, so a new sink is added in one place.

#[cfg(any(feature = "tracing", feature = "metrics", feature = "opentelemetry"))]
use std::sync::Arc;

#[cfg(any(feature = "tracing", feature = "metrics", feature = "opentelemetry"))]
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
    /// The circuit's OpenTelemetry sink, which counts admissions and
    /// verdicts and marks refused calls' spans besides the transitions it
    /// hears of as a listener.
    #[cfg(feature = "opentelemetry")]
    pub(crate) otel: Arc<crate::otel::Otel>,
}

/// What a circuit tells the sinks that count of its calls, at the points
/// where its permits are granted, refused and end: one call each, which
/// goes to every counting sink that is on.
#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
impl Sinks {
    /// The start of a call admitted untimed, on `time`: `UNTIMED`, unless
    /// the metrics time every call (resilience4j's names).
    #[inline]
    #[cfg_attr(not(feature = "metrics"), allow(clippy::unused_self))]
    pub(crate) fn start(&self, time: &crate::clock::Time) -> u64 {
        #[cfg(feature = "metrics")]
        return self.telemetry.start(time);
        #[cfg(not(feature = "metrics"))]
        {
            let _ = time;
            crate::clock::UNTIMED
        }
    }

    /// A call admitted at `started` (on `time`) ended with `verdict`.
    #[inline]
    pub(crate) fn ended(
        &self,
        verdict: crate::verdict::Verdict,
        started: u64,
        time: &crate::clock::Time,
    ) {
        #[cfg(feature = "opentelemetry")]
        self.otel.ended(verdict);
        #[cfg(feature = "metrics")]
        self.telemetry.ended(verdict, started, time);
        #[cfg(not(feature = "metrics"))]
        let _ = (started, time);
    }

    /// A call refused, to come back in `retry_after` nanoseconds (or shed
    /// by graded admission, as `crate::error::shed_by` reads it).
    pub(crate) fn refused(&self, retry_after: u64) {
        #[cfg(feature = "opentelemetry")]
        self.otel.refused(retry_after);
        #[cfg(feature = "metrics")]
        self.telemetry.refused(retry_after);
    }

    /// Shows `state` in every counting sink that shows another, with the
    /// opening `open_for` gives: a restored circuit's (SPEC §12), before
    /// anyone can call it, or the state a shared circuit found in its
    /// store (a process that joins a fleet whose circuit is open hears of
    /// no transition). A transition the sinks hear of as listeners is
    /// shown by them. A round trip that finds the state shown writes
    /// nothing.
    pub(crate) fn shown(
        &self,
        state: crate::snapshot::State,
        open_for: impl FnOnce() -> Option<std::time::Duration>,
    ) {
        #[cfg(feature = "metrics")]
        let metrics = !self.telemetry.shows(state);
        #[cfg(feature = "opentelemetry")]
        let otel = !self.otel.shows(state);
        #[cfg(not(feature = "metrics"))]
        let metrics = false;
        #[cfg(not(feature = "opentelemetry"))]
        let otel = false;
        if !(metrics || otel) {
            return;
        }
        let open_for = open_for();
        #[cfg(feature = "metrics")]
        if metrics {
            self.telemetry.show(state, open_for);
        }
        #[cfg(feature = "opentelemetry")]
        if otel {
            self.otel.show(state, open_for);
        }
    }

    /// Publishes what the sinks keep to themselves, of a circuit under
    /// `config` (`Fuse::publish_metrics`, a registry's listing): the
    /// metrics' counts kept per thread, and each sink's window (a `rate`
    /// circuit's) and admitted share (a circuit that grades admission)
    /// from the circuit's snapshot, which `snapshot` takes, once, and
    /// only if a sink wants it; `time` is the circuit's clock.
    pub(crate) fn publish(
        &self,
        snapshot: impl FnOnce() -> crate::snapshot::Snapshot,
        config: &crate::config::Config,
        time: &crate::clock::Time,
    ) {
        #[cfg(feature = "metrics")]
        self.telemetry.publish(Some(time.now()));
        #[cfg(not(feature = "metrics"))]
        let _ = time;
        #[cfg(feature = "metrics")]
        let metrics = (
            self.telemetry.publishes_window(config),
            self.telemetry.publishes_admission(config),
        );
        #[cfg(not(feature = "metrics"))]
        let metrics = (false, false);
        #[cfg(feature = "opentelemetry")]
        let otel = (
            self.otel.publishes_window(config),
            self.otel.publishes_admission(config),
        );
        #[cfg(not(feature = "opentelemetry"))]
        let otel = (false, false);
        if !(metrics.0 || metrics.1 || otel.0 || otel.1) {
            return;
        }
        let snapshot = snapshot();
        #[cfg(feature = "metrics")]
        {
            if metrics.0 {
                self.telemetry.window(&snapshot, config);
            }
            if metrics.1 {
                self.telemetry.admission(&snapshot, config);
            }
        }
        #[cfg(feature = "opentelemetry")]
        {
            if otel.0 {
                self.otel.window(&snapshot);
            }
            if otel.1 {
                self.otel.admission(&snapshot, config);
            }
        }
    }

    /// Publishes a shared circuit's counts (its window and admission are
    /// the store's, published by none): the metrics' counts kept per
    /// thread; the OpenTelemetry sink's are read when the SDK collects.
    /// `time` is the clock the calls were timed on.
    #[cfg(feature = "store")]
    #[cfg_attr(not(feature = "metrics"), allow(clippy::unused_self))]
    pub(crate) fn publish_counts(&self, time: &crate::clock::Time) {
        #[cfg(feature = "metrics")]
        self.telemetry.publish(Some(time.now()));
        #[cfg(not(feature = "metrics"))]
        let _ = time;
    }
}

/// Adds to `listeners` the sinks of the features that are on (the
/// `tracing` sink, then the metrics of the circuit `key`, then its
/// OpenTelemetry sink), and returns those a circuit calls itself.
pub(crate) fn install(listeners: &Listeners, key: &str) -> Sinks {
    #[cfg(feature = "tracing")]
    listeners.add(&(Arc::new(crate::trace::TraceSink) as Arc<dyn Listener>));
    #[cfg(feature = "metrics")]
    let telemetry = Arc::new(crate::telemetry::Telemetry::new(key));
    #[cfg(feature = "metrics")]
    listeners.add(&(telemetry.clone() as Arc<dyn Listener>));
    #[cfg(feature = "opentelemetry")]
    let otel = Arc::new(crate::otel::Otel::new(key));
    #[cfg(feature = "opentelemetry")]
    listeners.add(&(otel.clone() as Arc<dyn Listener>));
    #[cfg(not(any(feature = "tracing", feature = "metrics", feature = "opentelemetry")))]
    let _ = listeners;
    #[cfg(not(any(feature = "metrics", feature = "opentelemetry")))]
    let _ = key;
    Sinks {
        #[cfg(feature = "metrics")]
        telemetry,
        #[cfg(feature = "opentelemetry")]
        otel,
    }
}

/// Adds to `listeners`, a shared circuit's, the sinks of the features
/// that are on: the `tracing` sink, and the counting sinks of its local
/// circuit, `local` (which decides while the store does not answer), so
/// that a key has one set of series, whichever decides its calls; its
/// OpenTelemetry sink reports the store, named `store`, from now on.
#[cfg(feature = "store")]
pub(crate) fn install_beside(listeners: &Listeners, local: &Sinks, store: &str) {
    #[cfg(feature = "tracing")]
    listeners.add(&(Arc::new(crate::trace::TraceSink) as Arc<dyn Listener>));
    #[cfg(feature = "metrics")]
    listeners.add(&(local.telemetry.clone() as Arc<dyn Listener>));
    #[cfg(feature = "opentelemetry")]
    {
        local.otel.beside(store);
        listeners.add(&(local.otel.clone() as Arc<dyn Listener>));
    }
    #[cfg(not(feature = "opentelemetry"))]
    let _ = store;
    #[cfg(not(any(feature = "tracing", feature = "metrics", feature = "opentelemetry")))]
    let _ = (listeners, local);
}

#[cfg(test)]
mod tests;
