//! The registry: one shared circuit per key, overrides, explicit
//! configurations, listing, and lookups hammered from several threads.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread;

use fuse_breaker::{Config, Fuse, Registry, State, config::Overrides, events::Transition};

fn registry() -> Registry {
    Registry::builder()
        .app("shop")
        .overrides(
            "billing",
            Overrides {
                failure_threshold: Some(2),
                open_duration: Some(std::time::Duration::from_secs(5)),
                ..Overrides::default()
            },
        )
        .build()
        .expect("valid overrides")
}

#[test]
fn the_same_key_is_the_same_circuit_and_operations_are_separate() {
    let registry = registry();
    let charge = registry.get_operation("billing", "charge");
    assert!(Arc::ptr_eq(
        &charge,
        &registry.get_operation("billing", "charge")
    ));
    let refund = registry.get_operation("billing", "refund");
    let whole = registry.get("billing");
    assert!(!Arc::ptr_eq(&charge, &refund));
    assert!(!Arc::ptr_eq(&charge, &whole));
    assert_eq!(charge.key(), "fuse:shop:billing:charge");
    assert_eq!(whole.key(), "fuse:shop:billing");
    charge.try_acquire().unwrap().failure();
    charge.try_acquire().unwrap().failure();
    assert_eq!(charge.state(), State::Open);
    assert_eq!(refund.state(), State::Closed, "operations trip separately");
}

#[test]
fn an_override_changes_only_the_settings_it_names() {
    let registry = registry();
    let billing = registry.get("billing");
    assert_eq!(billing.config().failure_threshold(), 2);
    assert_eq!(billing.config().open_duration().as_secs(), 5);
    assert_eq!(
        billing.config().failure_window(),
        Config::default().failure_window()
    );
    assert_eq!(billing.config().half_open_probes(), 2);
    assert_eq!(registry.get("search").config(), &Config::default());
}

#[test]
fn an_explicit_config_wins_over_the_named_override_at_creation() {
    let registry = registry();
    let explicit = Config::builder().failure_threshold(9).build().unwrap();
    let fuse = registry.get_with_config("billing", "charge", explicit);
    assert_eq!(fuse.config().failure_threshold(), 9);
    assert_eq!(
        registry
            .get_with_config("billing", "charge", Config::default())
            .config()
            .failure_threshold(),
        9,
        "an existing circuit keeps its configuration"
    );
}

#[test]
fn invalid_overrides_are_refused_with_the_setting_name() {
    let err = Registry::builder()
        .overrides(
            "billing",
            Overrides {
                key_prefix: Some(String::new()),
                ..Overrides::default()
            },
        )
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "key_prefix");
}

#[test]
fn listing_shows_every_circuit_with_its_snapshot() {
    let registry = registry();
    registry.get("search");
    registry.get_operation("billing", "charge").force_open();
    let listed = registry.circuits();
    let keys: Vec<&str> = listed.iter().map(|c| c.key()).collect();
    assert_eq!(keys, ["fuse:shop:billing:charge", "fuse:shop:search"]);
    assert_eq!(listed[0].snapshot().state, State::Open);
    assert_eq!(listed[0].name(), "billing");
    assert_eq!(listed[0].operation(), Some("charge"));
    assert_eq!(listed[1].operation(), None);
}

#[test]
fn a_registry_hammered_from_several_threads_hands_out_one_circuit_per_key() {
    let registry = Arc::new(registry());
    let transitions = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = transitions.clone();
    registry.on_transition(move |_: &Transition| {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    let names = ["billing", "search", "auth", "mail"];
    let operations = ["", "a", "b", "c", "d"];
    let seen: Vec<Vec<Arc<Fuse>>> = thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let registry = &registry;
                s.spawn(move || {
                    let mut got = Vec::new();
                    for i in 0..2_000 {
                        let name = names[(i + t) % names.len()];
                        let operation = operations[(i * 7 + t) % operations.len()];
                        let fuse = if operation.is_empty() {
                            registry.get(name)
                        } else {
                            registry.get_operation(name, operation)
                        };
                        if let Ok(permit) = fuse.try_acquire() {
                            permit.success();
                        }
                        if i < 40 {
                            got.push(fuse);
                        }
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let listed = registry.circuits();
    assert_eq!(listed.len(), names.len() * operations.len());
    // Every handle any thread got is the registry's one circuit for its key.
    for fuse in seen.iter().flatten() {
        let key = fuse.key();
        let name = names.iter().find(|n| key.contains(*n)).unwrap();
        let operation = key
            .rsplit(':')
            .next()
            .filter(|op| operations.contains(op) && op != name);
        let again = match operation {
            Some(op) => registry.get_operation(name, op),
            None => registry.get(name),
        };
        assert!(Arc::ptr_eq(fuse, &again), "{key}");
    }
    let keys: HashSet<&str> = listed.iter().map(|c| c.key()).collect();
    assert_eq!(keys.len(), listed.len(), "no key twice");
    // A transition of a circuit created under contention reaches the
    // registry's listener.
    registry.get_operation("mail", "d").force_open();
    assert_eq!(transitions.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// Issue 9, scenario 3: names and operations whose keys coincide are one
/// circuit, listed once under the pair that created it.
#[test]
fn pairs_that_join_to_one_key_share_one_circuit() {
    let registry = Registry::new(Config::builder().failure_threshold(1).build().unwrap());
    let cases: [(&str, &str, &str, &str, &str); 3] = [
        ("a:b", "c", "a", "b:c", "fuse:a:b:c"),
        ("x", "", "", "x", "fuse:x"),
        ("p:q", "", "p", "q", "fuse:p:q"),
    ];
    for (name, operation, other_name, other_operation, key) in cases {
        let first = registry.get_operation(name, operation);
        let second = registry.get_operation(other_name, other_operation);
        assert!(Arc::ptr_eq(&first, &second), "{key}");
        assert_eq!(first.key(), key);
        assert!(Arc::ptr_eq(
            &first,
            &registry.get_operation(other_name, other_operation)
        ));
        second.try_acquire().unwrap().failure();
        assert_eq!(first.state(), State::Open, "{key}: one circuit, one state");
    }
    assert!(Arc::ptr_eq(
        &registry.get("x"),
        &registry.get_operation("", "x")
    ));
    let listed = registry.circuits();
    let keys: Vec<&str> = listed.iter().map(|c| c.key()).collect();
    assert_eq!(keys, ["fuse:a:b:c", "fuse:p:q", "fuse:x"], "each key once");
    let named: Vec<(&str, Option<&str>)> =
        listed.iter().map(|c| (c.name(), c.operation())).collect();
    assert_eq!(
        named,
        [("a:b", Some("c")), ("p:q", None), ("x", None)],
        "listed under the pair that created each"
    );
    assert!(listed.iter().all(|c| c.snapshot().state == State::Open));
}

/// The circuit a key gets is the first creator's, configuration included,
/// whichever pair asks later; an explicit configuration does not make a
/// second circuit either.
#[test]
fn a_shared_key_keeps_the_configuration_it_was_created_with() {
    let registry = Registry::builder()
        .overrides(
            "a",
            Overrides {
                failure_threshold: Some(5),
                ..Overrides::default()
            },
        )
        .build()
        .unwrap();
    let first = registry.get_operation("a:b", "c");
    assert_eq!(first.config().failure_threshold(), 8, "no override for a:b");
    let second = registry.get_operation("a", "b:c");
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(second.config().failure_threshold(), 8);
    let explicit = Config::builder().failure_threshold(1).build().unwrap();
    let third = registry.get_with_config("a:b:c", "", explicit);
    assert!(Arc::ptr_eq(&first, &third));
    assert_eq!(registry.circuits().len(), 1);
}

/// Threads creating the same key through different pairs at once all get
/// the one circuit.
#[test]
fn racing_creations_through_different_pairs_make_one_circuit() {
    for _ in 0..50 {
        let registry = Registry::new(Config::default());
        let pairs = [("a:b", "c"), ("a", "b:c"), ("a:b:c", ""), ("", "a:b:c")];
        let circuits: Vec<Arc<Fuse>> = thread::scope(|s| {
            let handles: Vec<_> = pairs
                .iter()
                .map(|&(name, operation)| {
                    let registry = &registry;
                    s.spawn(move || registry.get_operation(name, operation))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(circuits.iter().all(|c| Arc::ptr_eq(c, &circuits[0])));
        assert_eq!(registry.circuits().len(), 1);
    }
}
