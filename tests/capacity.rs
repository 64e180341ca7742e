//! A registry's capacity: idle circuits retired and their memory reused,
//! busy ones never, the overflow circuit when every circuit is busy, and
//! permits of retired circuits concluding without effect.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::{Config, Registry, State, config::OVERFLOW_NAME};
use quanta::Mock;

mod common;

const IDLE: Duration = Duration::from_mins(2);

/// A registry of `capacity` circuits (threshold 2, window 60 s, open 30 s:
/// idle after 120 s by default) on a mock clock.
fn registry(capacity: usize) -> (Registry, Arc<Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let config = Config::builder()
        .failure_threshold(2)
        .build()
        .expect("a valid configuration");
    let registry = Registry::builder()
        .defaults(config)
        .clock(clock)
        .max_circuits(capacity)
        .build()
        .expect("a valid registry");
    (registry, mock)
}

/// One successful call of the circuit of `name`, as the integrations make
/// it.
fn call(registry: &Registry, name: &str) {
    registry.try_acquire(name, "").expect("admitted").success();
}

#[test]
fn idle_circuits_are_retired_and_new_names_take_their_place() {
    let (registry, mock) = registry(100);
    for n in 0..100 {
        call(&registry, &format!("old-{n}"));
    }
    assert_eq!(registry.len(), 100);
    mock.increment(IDLE);
    for n in 0..100 {
        call(&registry, &format!("new-{n}"));
    }
    assert_eq!(registry.len(), 100, "never more than the capacity");
    assert_eq!(registry.overflows(), 0, "idle circuits made room");
    assert!(registry.retired() >= 100, "{}", registry.retired());
    let listed: Vec<String> = registry
        .circuits()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    assert!(
        listed.iter().all(|name| name.starts_with("new-")),
        "{listed:?}"
    );
}

#[test]
fn the_default_idle_time_is_twice_the_longer_of_window_and_cooldown() {
    let (registry, mock) = registry(1);
    call(&registry, "a");
    mock.increment(common::just_before(IDLE));
    assert_eq!(registry.get("b").name(), OVERFLOW_NAME, "a is not idle yet");
    mock.increment(Duration::from_nanos(1));
    assert_eq!(registry.get("b").name(), "b", "a was idle: retired");
    assert_eq!(registry.retired(), 1);
}

#[test]
fn busy_circuits_are_never_retired() {
    let (registry, mock) = registry(5);
    registry.get("open").force_open();
    let failing = registry.get("failing");
    failing.try_acquire().unwrap().failure();
    let half_open = registry.get("half-open");
    half_open.force_open();
    let held = registry.get("held");
    call(&registry, "looked-up");
    drop(failing);
    drop(half_open);

    // 119 s on: the open circuits have cooled down; one probe makes the
    // half-open one, the failure is still inside its 60 s window only if
    // it is recent, so record another; the looked-up one is used again.
    mock.increment(Duration::from_secs(119));
    let probe = registry.try_acquire("half-open", "").expect("a probe");
    registry.try_acquire("failing", "").unwrap().failure();
    call(&registry, "looked-up");
    mock.increment(Duration::from_secs(2));

    for n in 0..50 {
        let fuse = registry.get(&format!("new-{n}"));
        assert_eq!(fuse.name(), OVERFLOW_NAME, "no room: every circuit is busy");
    }
    assert_eq!(registry.retired(), 0);
    assert_eq!(registry.overflows(), 50);
    assert_eq!(registry.len(), 5);
    assert_eq!(registry.get("open").state(), State::Open);
    assert_eq!(registry.get("failing").snapshot().failures.len(), 1);
    assert_eq!(registry.get("half-open").state(), State::HalfOpen);
    assert!(
        Arc::ptr_eq(&held, &registry.get("held")),
        "still the same circuit"
    );
    probe.success();
}

#[test]
fn the_overflow_circuit_decides_the_calls_of_new_names_while_full() {
    let (registry, _mock) = registry(1);
    registry.get("billing").force_open();
    let overflow = registry.get("search");
    assert_eq!(overflow.name(), OVERFLOW_NAME);
    assert_eq!(overflow.key(), "fuse:(overflow)");
    assert!(Arc::ptr_eq(
        &overflow,
        &registry.get_operation("ads", "bid")
    ));
    // It is a circuit like another: two counted failures open it.
    registry.try_acquire("x", "").unwrap().failure();
    registry.try_acquire("y", "").unwrap().failure();
    assert_eq!(overflow.state(), State::Open);
    assert!(registry.try_acquire("z", "").is_err());
    assert_eq!(registry.overflows(), 5, "search, ads/bid, x, y, z");
    assert_eq!(registry.len(), 1, "the overflow circuit is not one of them");
}

#[test]
fn a_permit_of_a_retired_circuit_concludes_without_effect() {
    let (registry, mock) = registry(1);
    let permit = registry.try_acquire("gone", "").expect("admitted");
    mock.increment(IDLE);
    // "gone" is idle (no lookup since it was made): the next new name
    // retires it, and its freed memory is the new circuit's.
    call(&registry, "next");
    assert_eq!(registry.retired(), 1);
    let next = registry.get("next");
    permit.failure();
    registry.try_acquire("next", "").unwrap().failure();
    assert_eq!(
        next.snapshot().failures.len(),
        1,
        "the stale failure did not count"
    );
    assert_eq!(next.state(), State::Closed);
}

#[test]
fn a_circuit_looked_up_now_and_then_stays() {
    let (registry, mock) = registry(2);
    call(&registry, "steady");
    for n in 0..10 {
        // Longer than the idle time between two looks: only a lookup in
        // between keeps a circuit.
        mock.increment(IDLE + Duration::from_secs(10));
        call(&registry, "steady");
        // Each creation sweeps: "steady" was looked up since the last
        // sweep and stays; the passing circuit before was not: retired.
        call(&registry, &format!("passing-{n}"));
    }
    assert!(
        registry.circuits().iter().any(|c| c.name() == "steady"),
        "a circuit in use is kept"
    );
    assert_eq!(registry.overflows(), 0);
}

/// A circuit under the rate policy whose window holds calls is busy: its
/// successes weigh against the failures to come, and retiring it would
/// lose them. Once its window is empty, it is idle. Waits for the
/// in-process engine's rate path.
#[test]
fn a_rate_circuit_with_calls_in_its_window_is_not_retired() {
    let (clock, mock) = quanta::Clock::mock();
    let config = Config::builder()
        .policy(fuse_breaker::config::Policy::Rate)
        .build()
        .expect("a valid configuration");
    let registry = Registry::builder()
        .defaults(config)
        .clock(clock)
        .max_circuits(1)
        .idle_after(Duration::from_secs(10))
        .build()
        .expect("a valid registry");
    call(&registry, "a");
    mock.increment(Duration::from_secs(11));
    assert_eq!(
        registry.get("b").name(),
        OVERFLOW_NAME,
        "a's window holds a call: not idle"
    );
    assert_eq!(registry.retired(), 0);
    // Past the 60 s window: nothing left in it.
    mock.increment(Duration::from_mins(1));
    assert_eq!(registry.get("b").name(), "b", "a was idle: retired");
    assert_eq!(registry.retired(), 1);
}
