//! §12: live settings. A running circuit's settings replaced in place:
//! what it keeps, and what the new settings change from the next call.

use std::sync::Arc;

use fuse_breaker::Registry;
use fuse_breaker::config::Overrides;
use fuse_breaker::events::{Listener, Reconfiguration, Transition};

use super::*;

fn count(threshold: u32, window: u64) -> Config {
    build(
        Config::builder()
            .failure_threshold(threshold)
            .failure_window(secs(window))
            .open_duration(secs(30))
            .half_open_probes(2),
    )
}

#[test]
fn nothing_transitions_at_the_change_and_the_newest_failures_are_kept() {
    let (fuse, mock) = circuit(count(8, 60));
    for at in 1..=5 {
        set_time(&mock, secs(at));
        fail(&fuse);
    }
    fuse.reconfigure(count(4, 60)).unwrap();
    assert_eq!(fuse.state(), State::Closed);
    let kept: Vec<Duration> = fuse.snapshot().failures;
    assert_eq!(
        kept.len(),
        3,
        "at most the new threshold less one: {kept:?}"
    );
    assert_eq!(*kept.iter().min().unwrap(), secs(3), "the newest: {kept:?}");
    set_time(&mock, secs(6));
    fail(&fuse);
    assert_eq!(
        fuse.state(),
        State::Open,
        "the next failure makes the new threshold"
    );
}

#[test]
fn a_smaller_window_keeps_only_the_failures_inside_it() {
    let (fuse, mock) = circuit(count(4, 60));
    for at in [1, 2, 50] {
        set_time(&mock, secs(at));
        fail(&fuse);
    }
    fuse.reconfigure(count(4, 20)).unwrap();
    set_time(&mock, secs(55));
    fail(&fuse);
    assert_eq!(
        fuse.state(),
        State::Closed,
        "two of the four are outside 20 s"
    );
    fuse.reconfigure(count(4, 60)).unwrap();
    assert_eq!(
        fuse.snapshot().failures,
        [secs(50), secs(55)],
        "a failure that left the window does not come back with a wider one"
    );
    set_time(&mock, secs(56));
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed, "three of four");
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open, "four inside 60 s");
}

#[test]
fn a_threshold_above_the_ring_grows_it_and_keeps_the_failures() {
    let (fuse, mock) = circuit(count(3, 600));
    for at in 1..=2 {
        set_time(&mock, secs(at));
        fail(&fuse);
    }
    let half_open = fuse.try_acquire().unwrap();
    for threshold in [5, 100, 4096] {
        fuse.reconfigure(count(threshold, 600)).unwrap();
        assert_eq!(
            fuse.snapshot().failures,
            [secs(1), secs(2)],
            "under {threshold}"
        );
    }
    fuse.reconfigure(count(40, 600)).unwrap();
    for at in 3..=39 {
        set_time(&mock, secs(at));
        fail(&fuse);
    }
    assert_eq!(fuse.state(), State::Closed);
    assert_eq!(fuse.snapshot().failures.len(), 39);
    half_open.failure();
    assert_eq!(
        fuse.state(),
        State::Open,
        "the 40th, a permit from before every change"
    );
}

#[test]
fn a_larger_threshold_within_the_ring_counts_more_failures() {
    let (fuse, mock) = circuit(count(3, 60));
    fuse.reconfigure(count(4, 60)).unwrap();
    for at in 1..=3 {
        set_time(&mock, secs(at));
        fail(&fuse);
    }
    assert_eq!(fuse.state(), State::Closed);
    set_time(&mock, secs(4));
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open);
}

#[test]
fn an_open_circuit_keeps_its_retry_after_to_the_nanosecond_and_the_next_opening_is_new() {
    let (fuse, mock) = circuit(count(1, 60));
    set_time(&mock, secs(10) + Duration::from_nanos(7));
    fail(&fuse);
    set_time(&mock, secs(20));
    let before = rejection(&fuse).retry_after();
    let snapshot = fuse.snapshot();
    fuse.reconfigure(build(
        Config::builder()
            .failure_threshold(1)
            .open_duration(secs(5))
            .half_open_probes(2),
    ))
    .unwrap();
    assert_eq!(rejection(&fuse).retry_after(), before);
    assert_eq!(fuse.snapshot().opened_at, snapshot.opened_at);
    assert_eq!(fuse.snapshot().open_for, snapshot.open_for);
    set_time(&mock, secs(40) + Duration::from_nanos(7));
    probe(&fuse).failure();
    assert_eq!(
        fuse.snapshot().open_for,
        Some(secs(5)),
        "the next opening is the new one's"
    );
}

#[test]
fn a_half_open_circuit_admits_and_closes_by_the_new_probes() {
    for (probes, closes_after) in [(1, 1), (3, 3)] {
        let (fuse, mock) = circuit(count(1, 60));
        fail(&fuse);
        set_time(&mock, secs(30));
        let first = probe(&fuse);
        let second = probe(&fuse);
        rejection(&fuse);
        fuse.reconfigure(build(
            Config::builder()
                .failure_threshold(1)
                .open_duration(secs(30))
                .half_open_probes(probes),
        ))
        .unwrap();
        assert_eq!(
            fuse.state(),
            State::HalfOpen,
            "nothing transitions at the change"
        );
        if probes == 1 {
            rejection(&fuse);
            first.success();
            assert_eq!(fuse.state(), State::Closed, "one success reaches one probe");
            second.success();
        } else {
            let third = probe(&fuse);
            rejection(&fuse);
            first.success();
            second.success();
            assert_eq!(fuse.state(), State::HalfOpen);
            third.success();
            assert_eq!(fuse.state(), State::Closed, "after {closes_after}");
        }
    }
}

#[test]
fn permits_in_flight_keep_counting() {
    let (fuse, _mock) = circuit(count(2, 60));
    let a = closed_permit(&fuse);
    let b = fuse.try_acquire_owned().unwrap();
    fuse.reconfigure(count(1, 60)).unwrap();
    a.success();
    assert_eq!(fuse.state(), State::Closed);
    b.failure();
    assert_eq!(
        fuse.state(),
        State::Open,
        "judged by the settings in force when it arrives"
    );
}

#[test]
fn only_the_name_cannot_change_in_place() {
    let (fuse, _mock) = circuit(count(2, 60));
    let err = fuse
        .reconfigure(build(Config::builder().key_prefix("other")))
        .unwrap_err();
    assert_eq!(err.setting(), "key_prefix", "{err}");
    assert!(
        err.to_string()
            .contains("cannot change on a running circuit"),
        "{err}"
    );
    assert_eq!(fuse.config(), &count(2, 60), "the old settings are kept");
}

#[test]
fn a_rate_circuit_keeps_its_window_under_a_new_rate() {
    let rate = |percent: u32| {
        build(
            Config::builder()
                .policy(Policy::Rate)
                .failure_window(secs(10))
                .minimum_calls(4)
                .failure_rate(percent),
        )
    };
    let (fuse, _mock) = circuit(rate(90));
    for _ in 0..3 {
        closed_permit(&fuse).success();
    }
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed, "25 % < 90 %");
    fuse.reconfigure(rate(30)).unwrap();
    assert_eq!(
        fuse.state(),
        State::Closed,
        "nothing transitions at the change"
    );
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open, "40 % of the kept window >= 30 %");
}

#[test]
fn no_verdict_is_lost_while_a_third_thread_reconfigures_a_thousand_times() {
    let rate = |percent: u32| {
        build(
            Config::builder()
                .policy(Policy::Rate)
                .failure_window(secs(60))
                .minimum_calls(100_000)
                .failure_rate(percent)
                .half_open_probes(3),
        )
    };
    let (fuse, _mock) = circuit(rate(90));
    let (fuse, calls) = (&fuse, 20_000_u64);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(move || {
                for call in 0..calls {
                    let permit = closed_permit(fuse);
                    if call % 10 == 0 {
                        permit.failure();
                    } else {
                        permit.success();
                    }
                }
            });
        }
        scope.spawn(move || {
            for change in 0..1_000 {
                fuse.reconfigure(rate(if change % 2 == 0 { 95 } else { 90 }))
                    .unwrap();
            }
        });
    });
    let snapshot = fuse.snapshot();
    assert_eq!(snapshot.state, State::Closed);
    assert_eq!(snapshot.calls, 2 * calls, "{snapshot:?}");
    assert_eq!(snapshot.failed, 2 * calls / 10, "{snapshot:?}");
}

#[test]
fn a_registry_name_is_reconfigured_for_every_operation_and_later_circuits() {
    let registry = Registry::new(count(8, 60));
    let (charge, search) = (
        registry.get_operation("billing", "charge"),
        registry.get("search"),
    );
    for _ in 0..5 {
        charge.try_acquire().unwrap().failure();
    }
    let stricter = Overrides {
        failure_threshold: Some(4),
        ..Overrides::default()
    };
    let config = registry.reconfigure("billing", &stricter).unwrap();
    assert_eq!(config.failure_threshold(), 4);
    assert_eq!(charge.config().failure_threshold(), 4);
    assert_eq!(
        charge.snapshot().failures.len(),
        3,
        "the newest threshold - 1 kept"
    );
    assert_eq!(
        registry
            .get_operation("billing", "refund")
            .config()
            .failure_threshold(),
        4
    );
    assert_eq!(search.config().failure_threshold(), 8);
    assert_eq!(registry.config_for("billing").failure_threshold(), 4);
}

#[test]
fn a_registry_change_one_circuit_cannot_take_is_refused_whole() {
    let registry = Registry::new(count(4, 60));
    let charge = registry.get_operation("billing", "charge");
    let rate = build(Config::builder().policy(Policy::Rate));
    let refund = registry.get_with_config("billing", "refund", rate);
    let renamed = Overrides {
        failure_threshold: Some(3),
        key_prefix: Some("other".to_owned()),
        ..Overrides::default()
    };
    let err = registry.reconfigure("billing", &renamed).unwrap_err();
    assert_eq!(err.setting(), "key_prefix");
    assert!(err.to_string().contains("fuse:billing:"), "{err}");
    assert_eq!(charge.config().failure_threshold(), 4, "nothing changed");
    assert_eq!(refund.config().policy(), Policy::Rate);
    assert_eq!(registry.config_for("billing").failure_threshold(), 4);
}

#[test]
fn a_reload_replaces_defaults_and_overrides_and_keeps_circuits_of_their_own() {
    let registry = Registry::builder()
        .defaults(count(8, 60))
        .overrides(
            "billing",
            Overrides {
                failure_threshold: Some(3),
                ..Overrides::default()
            },
        )
        .build()
        .unwrap();
    let (billing, search) = (registry.get("billing"), registry.get("search"));
    let own = registry.get_with_config("mine", "", count(3, 60));
    billing.force_open();
    let search_overrides = Overrides {
        failure_threshold: Some(2),
        ..Overrides::default()
    };
    registry
        .reload(count(4, 60), &[("search".to_owned(), search_overrides)])
        .unwrap();
    assert_eq!(
        billing.config().failure_threshold(),
        4,
        "no longer overridden: the defaults"
    );
    assert_eq!(billing.state(), State::Open, "state kept");
    assert_eq!(search.config().failure_threshold(), 2);
    assert_eq!(
        own.config().failure_threshold(),
        3,
        "settings of its own kept"
    );
    assert_eq!(registry.get("new").config().failure_threshold(), 4);
    let err = registry
        .reload(build(Config::builder().key_prefix("other")), &[])
        .unwrap_err();
    assert_eq!(err.setting(), "key_prefix");
    assert_eq!(search.config().failure_threshold(), 2, "refused whole");
    assert_eq!(registry.config_for("new").failure_threshold(), 4);
}

#[test]
fn every_change_is_an_event_naming_who_changed_what() {
    use std::sync::Mutex;
    struct Audit(Mutex<Vec<String>>);
    impl Listener for Audit {
        fn on_transition(&self, _: &Transition) {}
        fn on_reconfigure(&self, event: &Reconfiguration) {
            let changes: Vec<String> = event
                .changes()
                .iter()
                .map(|change| format!("{} {} -> {}", change.setting, change.from, change.to))
                .collect();
            let line = format!("{} by {}: {}", event.key, event.by, changes.join(", "));
            self.0.lock().unwrap().push(line);
        }
    }
    let audit = Arc::new(Audit(Mutex::default()));
    let registry = Registry::new(count(8, 60));
    registry.on_transition(audit.clone());
    let billing = registry.get("billing");
    billing.reconfigure(count(4, 60)).unwrap();
    billing.reconfigure(count(4, 60)).unwrap();
    let overrides = Overrides {
        open_duration: Some(secs(5)),
        ..Overrides::default()
    };
    registry.reconfigure("billing", &overrides).unwrap();
    registry.reload(count(8, 60), &[]).unwrap();
    assert_eq!(
        *audit.0.lock().unwrap(),
        [
            "fuse:billing by code: failure_threshold 8 -> 4",
            "fuse:billing by registry: failure_threshold 4 -> 8, open_duration 30s -> 5s",
            "fuse:billing by reload: open_duration 5s -> 30s",
        ],
        "a change to the same settings tells nothing"
    );
}

#[test]
fn no_failure_is_lost_while_the_ring_grows_under_two_failing_threads() {
    for round in 0..1_000 {
        let (fuse, _mock) = circuit(count(100, 600));
        let fuse = &fuse;
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(move || {
                    for _ in 0..40 {
                        fail(fuse);
                    }
                });
            }
            scope.spawn(move || {
                for threshold in [200, 400, 150, 800, 120] {
                    fuse.reconfigure(count(threshold, 600)).unwrap();
                }
            });
        });
        let snapshot = fuse.snapshot();
        assert_eq!(snapshot.state, State::Closed, "round {round}");
        assert_eq!(snapshot.failures.len(), 80, "round {round}: {snapshot:?}");
        fail(fuse);
        assert_eq!(fuse.snapshot().failures.len(), 81, "round {round}");
    }
}
