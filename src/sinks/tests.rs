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
