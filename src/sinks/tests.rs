use super::*;

#[test]
fn the_sinks_of_the_features_on_are_listeners_before_any_other() {
    let listeners = Listeners::default();
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry")),
        allow(unused_variables)
    )]
    let sinks = install(&listeners, "fuse:billing");
    let expected = usize::from(cfg!(feature = "tracing"))
        + usize::from(cfg!(feature = "metrics"))
        + usize::from(cfg!(feature = "opentelemetry"));
    assert_eq!(listeners.len(), expected);
    assert_eq!(listeners.is_empty(), expected == 0);
    #[cfg(feature = "metrics")]
    assert_eq!(Arc::strong_count(&sinks.telemetry), 2);
    #[cfg(feature = "opentelemetry")]
    assert_eq!(Arc::strong_count(&sinks.otel), 2);
}

/// A state found in a store is shown by every sink that shows another,
/// whatever showed that one: a transition the sinks heard of (a shared
/// circuit's local fallback opening while its store did not answer) is
/// followed by the closed circuit the store holds once it answers.
#[cfg(all(feature = "metrics", feature = "opentelemetry"))]
#[test]
fn a_state_found_is_shown_by_the_sinks_that_show_another() {
    use crate::snapshot::State;
    use std::time::Duration;
    let sinks = install(&Listeners::default(), "fuse:billing");
    let opened = crate::transition::Transition {
        key: "fuse:billing",
        from: State::Closed,
        to: State::Open,
        reason: crate::transition::Reason::ThresholdReached,
        at: Duration::ZERO,
        openings: 1,
        open_for: Some(Duration::from_secs(5)),
    };
    sinks.telemetry.on_transition(&opened);
    sinks.otel.on_transition(&opened);
    assert!(sinks.telemetry.shows(State::Open) && sinks.otel.shows(State::Open));
    let mut asked = 0;
    sinks.shown(State::Open, || {
        asked += 1;
        None
    });
    assert_eq!(asked, 0, "no sink shows another state: nothing to read");
    sinks.shown(State::Closed, || {
        asked += 1;
        None
    });
    assert_eq!(asked, 1);
    assert!(sinks.telemetry.shows(State::Closed) && sinks.otel.shows(State::Closed));
}
