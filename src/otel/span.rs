//! The span events of the `opentelemetry` feature: a transition, and a
//! refused call, as events on the active span of the thread (with the
//! refused call's span marked). Nothing is built unless the span records.

use opentelemetry::KeyValue;
use opentelemetry::trace::{Status, get_active_span};

use super::instruments::seconds;
use super::{Counts, FROM, OPENING_N, OUTCOME, REASON, STATE, opening_n};
use crate::grade::Grading;
use crate::snapshot::State;
use crate::transition::{Reason, Transition};

/// The attribute of a probe's result.
const PROBE_RESULT: &str = "resilience.circuit_breaker.probe.result";
/// The attribute of how long an opening lasts, in seconds.
const OPENING_DURATION: &str = "resilience.circuit_breaker.opening.duration";
/// The attribute of when a refused call may come back, in seconds.
const RETRY_AFTER: &str = "resilience.circuit_breaker.retry_after";
/// The attribute a refused call's span is marked with.
const REJECTED: &str = "resilience.circuit_breaker.rejected";

/// The event's name of a change to `state`.
fn event(state: State) -> &'static str {
    match state {
        State::Closed => "circuit_closed",
        State::Open => "circuit_opened",
        State::HalfOpen => "circuit_half_opened",
    }
}

/// The result of the probe that made `transition`, if a probe made it.
fn probe_result(transition: &Transition<'_>) -> Option<&'static str> {
    match transition.reason {
        Reason::ProbesPassed => Some("success"),
        Reason::ProbeFailed => Some("failure"),
        _ => None,
    }
}

/// `transition` of the circuit `id`, as an event on the active span.
pub(super) fn transition(id: &KeyValue, transition: &Transition<'_>) {
    get_active_span(|span| {
        if !span.is_recording() {
            return;
        }
        let mut attributes = vec![
            id.clone(),
            KeyValue::new(STATE, transition.to.as_str()),
            KeyValue::new(FROM, transition.from.as_str()),
            KeyValue::new(REASON, transition.reason.as_str()),
        ];
        if transition.to == State::Open {
            attributes.push(KeyValue::new(OPENING_N, opening_n(transition.openings)));
            if let Some(open_for) = transition.open_for {
                attributes.push(KeyValue::new(OPENING_DURATION, open_for.as_secs_f64()));
            }
        }
        if let Some(result) = probe_result(transition) {
            attributes.push(KeyValue::new(PROBE_RESULT, result));
        }
        span.add_event(event(transition.to), attributes);
    });
}

/// A call of the circuit `counts` refused, that may come back in
/// `retry_after` nanoseconds, or that graded admission `shed`: an event
/// on the active span, and the span marked.
pub(super) fn refused(counts: &Counts, shed: Option<Grading>, retry_after: u64) {
    get_active_span(|span| {
        if !span.is_recording() {
            return;
        }
        let key = counts.id.value.as_str();
        let mut attributes = vec![
            counts.id.clone(),
            KeyValue::new(STATE, counts.state().as_str()),
            KeyValue::new(
                OUTCOME,
                if shed.is_some() {
                    "throttled"
                } else {
                    "rejected"
                },
            ),
        ];
        let description = if let Some(why) = shed {
            format!("circuit {key} shed the call ({})", why.as_str())
        } else {
            attributes.push(KeyValue::new(RETRY_AFTER, seconds(retry_after)));
            let state = counts.state().as_str().replace('_', "-");
            format!("circuit {key} is {state}")
        };
        span.add_event("circuit_rejected", attributes);
        span.set_attribute(KeyValue::new(REJECTED, true));
        span.set_status(Status::error(description));
    });
}
