use super::*;

#[test]
fn an_outage_begins_once_and_a_reply_sent_before_it_does_not_end_it() {
    let health = Health::default();
    let error = StoreError::unreachable("memory", "stopped");
    assert!(health.reachable() && !health.maybe_down());
    let before = health.begin();
    assert!(health.failed(&error, before));
    assert!(
        !health.failed(&error, health.begin()),
        "the second failure is the same outage"
    );
    assert_eq!(health.still_down(), Some(error));
    assert!(!health.answered(before), "a reply sent before the failure");
    assert!(!health.reachable());
    assert!(health.answered(health.begin()));
    assert!(health.reachable() && health.still_down().is_none());
    assert!(!health.answered(health.begin()), "already back");
}

/// A try that failed at `begun`, after the store answered nothing for
/// `took`.
fn failed_after(health: &Health, error: &StoreError, took: Duration) {
    let begun = health.begin();
    let begun = Begun {
        at: begun
            .at
            .checked_sub(took)
            .expect("an instant that far back"),
        ..begun
    };
    health.failed(error, begun);
}

#[test]
fn a_store_at_the_backoff_cap_is_tried_again_that_long_after_the_failed_try_began() {
    let health = Health::default();
    let error = StoreError::unreachable("memory", "stopped");
    // Tries that fail at once, until the backoff reaches its cap.
    for _ in 0..8 {
        failed_after(&health, &error, Duration::ZERO);
    }
    assert_eq!(
        health.lock().as_ref().map(|down| down.backoff),
        Some(MAX_BACKOFF)
    );
    // A try that took a second to fail (its timeouts): the next one
    // is due a backoff after it began, not after it ended.
    failed_after(&health, &error, Duration::from_secs(1));
    let due = health.lock().as_ref().map(|down| down.retry_at).unwrap();
    assert!(
        due <= Instant::now() + Duration::from_millis(1_100),
        "the next try is due {:?} from now",
        due.saturating_duration_since(Instant::now())
    );
    // One that took longer than the backoff: tried again at once.
    failed_after(&health, &error, MAX_BACKOFF + Duration::from_millis(10));
    assert_eq!(health.still_down(), None, "due already");
}

#[test]
fn a_try_in_flight_with_the_failure_seen_neither_doubles_nor_delays() {
    let health = Health::default();
    let error = StoreError::unreachable("memory", "stopped");
    let early = health.begin();
    let late = health.begin();
    assert!(health.failed(&error, late));
    let due = health
        .lock()
        .as_ref()
        .map(|down| (down.retry_at, down.backoff));
    // A trip begun with the one that failed fails after it: the same try.
    assert!(!health.failed(&error, early));
    assert_eq!(
        health
            .lock()
            .as_ref()
            .map(|down| (down.retry_at, down.backoff)),
        due
    );
}
