//! Shared circuits through the admin API, on every store the machine has:
//! what an unreadable key looks like, and how many reads a list makes.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::Config;
use fuse_breaker::admin::Admin;
use fuse_breaker::store::{Counting, MemoryStore, SharedRegistry, Store as _};

use super::api::{send, start};
use super::runtime;
use super::stores::{stores, unique};

/// What another program might leave under a circuit's key: JSON, but not
/// a circuit.
const NOT_A_CIRCUIT: &[u8] = br#"{"state":"melted"}"#;

#[test]
fn an_unreadable_key_is_shown_unreadable_not_closed() {
    runtime().block_on(async {
        for (name, store) in stores().await {
            let registry = Arc::new(SharedRegistry::new(store.clone(), Config::default()));
            let broken = registry.get(&unique("broken"));
            let fine = registry.get(&unique("fine"));
            fine.force_open().await.unwrap();
            let ttl = Duration::from_mins(1);
            store
                .swap(broken.key(), None, NOT_A_CIRCUIT, ttl, false)
                .await
                .unwrap();
            let base = start(Admin::new().shared(registry.clone())).await;

            let view = send(&base, "GET", &format!("/circuits/{}", broken.key()), None)
                .await
                .view();
            assert_eq!(view.state, "unreadable", "{name}: {view:?}");
            let error = view.store_error.unwrap_or_default();
            assert!(error.contains(broken.key()), "{name}: {error}");
            assert_eq!((view.failures, view.opened_at), (0, None), "{name}");

            let list = send(&base, "GET", "/circuits", None).await.list();
            let states: Vec<_> = list
                .circuits
                .iter()
                .map(|view| (view.key.as_str(), view.state.as_str()))
                .collect();
            let mut expected = [(broken.key(), "unreadable"), (fine.key(), "open")];
            expected.sort_unstable();
            assert_eq!(states, expected, "{name}");
            // The other fields of the readable one are its own.
            assert_eq!(
                list.circuits
                    .iter()
                    .filter(|v| v.store_error.is_some())
                    .count(),
                1
            );
        }
    });
}

#[test]
fn an_unreachable_store_shows_the_fallback_circuit_with_the_error() {
    runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        let registry = Arc::new(SharedRegistry::new(store.clone(), Config::default()));
        let payments = registry.get("payments");
        let base = start(Admin::new().shared(registry)).await;
        store.set_unreachable(true);
        let view = send(&base, "GET", "/circuits/fuse:payments", None)
            .await
            .view();
        assert_eq!(view.state, payments.local().state().as_str());
        let error = view.store_error.expect("the error");
        assert!(error.contains("unreachable"), "{error}");
    });
}

#[test]
fn a_list_reads_at_most_its_budget_of_shared_circuits_and_says_which_it_did_not() {
    runtime().block_on(async {
        for (name, store) in stores().await {
            let counting = Arc::new(Counting::new(store));
            let registry = Arc::new(SharedRegistry::new(counting.clone(), Config::default()));
            let prefix = unique("many");
            let fuses: Vec<_> = (0..30)
                .map(|i| registry.get(&format!("{prefix}-{i:02}")))
                .collect();
            fuses[0].force_open().await.unwrap();
            let base = start(Admin::new().shared(registry).store_reads_per_second(10)).await;

            let before = counting.round_trips();
            let list = send(&base, "GET", "/circuits?limit=5000", None)
                .await
                .list();
            assert_eq!(
                counting.round_trips() - before,
                10,
                "{name}: one list's reads"
            );
            assert_eq!(list.circuits.len(), 30, "{name}");
            // The first ten by key are read; none of the others is shown
            // closed.
            assert_eq!(list.circuits[0].state, "open", "{name}");
            for view in &list.circuits[1..10] {
                assert_eq!(
                    (view.state.as_str(), &view.store_error),
                    ("closed", &None),
                    "{name}"
                );
            }
            for view in &list.circuits[10..] {
                assert_eq!(view.state, "unread", "{name}: {view:?}");
                let error = view.store_error.as_deref().unwrap_or_default();
                assert!(error.contains("at most 10"), "{name}: {error}");
                assert_eq!((view.failures, view.opened_at.as_deref()), (0, None));
            }
            // One circuit asked for alone is read all the same.
            let before = counting.round_trips();
            let one = send(
                &base,
                "GET",
                &format!("/circuits/{}", fuses[29].key()),
                None,
            )
            .await
            .view();
            assert_eq!(
                (one.state.as_str(), one.store_error),
                ("closed", None),
                "{name}"
            );
            assert_eq!(counting.round_trips() - before, 1, "{name}");
        }
    });
}
