//! The `tracing` sink (feature `tracing`): a listener every circuit
//! registers when it is built, which turns each transition into one
//! structured event (target `fuse_breaker`; fields `key`, `from`, `to`,
//! `reason`, `at_ns`), and each outage of a shared circuit's store into a
//! warning (fields `key`, `store`, `fallback`, `error`) and its end into an
//! INFO event. A server's hint of when to come back that the tower layer
//! or the reqwest middleware could not read is a DEBUG event (fields
//! `key`, `header`).
//!
//! A call is never an event of its own: neither a rejection nor a call a
//! closed circuit sheds (graded admission, SPEC §11), which may be most of
//! its calls for a while (the `metrics` feature counts them, by why). A
//! ramp-up starts with the transition from `half_open` to `closed`
//! (`probes_passed`), which is an event as any transition is; it ends with
//! no event, as nothing happens then (each admission reads the time since
//! the circuit closed), and neither does throttling start or end (a share
//! recomputed as the window turns).

use crate::events::Listener;
use crate::transition::Transition;

/// Reports each transition as a `tracing` event at level INFO.
#[derive(Debug)]
pub(crate) struct TraceSink;

impl Listener for TraceSink {
    fn on_transition(&self, transition: &Transition) {
        tracing::info!(
            target: "fuse_breaker",
            key = transition.key,
            from = transition.from.as_str(),
            to = transition.to.as_str(),
            reason = transition.reason.as_str(),
            at_ns = u64::try_from(transition.at.as_nanos()).unwrap_or(u64::MAX),
            "circuit {} {} -> {} ({})",
            transition.key,
            transition.from,
            transition.to,
            transition.reason,
        );
    }

    fn on_reconfigure(&self, event: &crate::events::Reconfiguration<'_>) {
        let changes: Vec<String> = event
            .changes()
            .iter()
            .map(|change| format!("{} {} -> {}", change.setting, change.from, change.to))
            .collect();
        let changes = changes.join(", ");
        tracing::info!(
            target: "fuse_breaker",
            key = event.key,
            by = event.by,
            changes = changes.as_str(),
            "circuit {} reconfigured by {}: {}",
            event.key,
            event.by,
            changes,
        );
    }

    #[cfg(feature = "store")]
    fn on_store(&self, event: &crate::events::StoreEvent<'_>) {
        if let Some(unreadable) = event.overwritten {
            let error = unreadable.to_string();
            tracing::warn!(
                target: "fuse_breaker",
                key = event.key,
                store = event.store,
                error = error.as_str(),
                "circuit {}: a manual change overwrote what was not a circuit: {}",
                event.key,
                error,
            );
        } else if event.reachable {
            tracing::info!(
                target: "fuse_breaker",
                key = event.key,
                store = event.store,
                "circuit {}: store {} answers again",
                event.key,
                event.store,
            );
        } else {
            let error = event.error.map(ToString::to_string).unwrap_or_default();
            tracing::warn!(
                target: "fuse_breaker",
                key = event.key,
                store = event.store,
                fallback = event.fallback.as_str(),
                error = error.as_str(),
                "circuit {}: store unreachable, the {} fallback decides: {}",
                event.key,
                event.fallback.as_str(),
                error,
            );
        }
    }
}

/// A hint of when to come back, in `header`, that a call of the circuit
/// `key` could not read: a DEBUG event (a misbehaving server may send one
/// with every answer; the `metrics` feature counts them).
#[cfg(any(feature = "tower", feature = "reqwest"))]
pub(crate) fn hint_malformed(key: &str, header: &'static str) {
    tracing::debug!(
        target: "fuse_breaker",
        key,
        header,
        "circuit {key}: the hint in {header} cannot be read; ignored",
    );
}
