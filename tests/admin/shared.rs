//! Shared circuits through the admin API, on every store the machine has:
//! what an unreadable key looks like, and how many reads a list makes.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::Config;
use fuse_breaker::admin::Admin;
use fuse_breaker::store::{Counting, MemoryStore, Store as _};

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
            let registry = Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(Config::default())
                    .store(store.clone())
                    .build()
                    .expect("defaults alone are valid"),
            );
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
        let registry = Arc::new(
            fuse_breaker::Registry::builder()
                .defaults(Config::default())
                .store(store.clone())
                .build()
                .expect("defaults alone are valid"),
        );
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
            let registry = Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(Config::default())
                    .store(counting.clone())
                    .build()
                    .expect("defaults alone are valid"),
            );
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

#[test]
fn a_change_repairs_an_unreadable_key_and_its_answer_says_what_it_replaced() {
    runtime().block_on(async {
        for (name, store) in stores().await {
            let registry = Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(Config::default())
                    .store(store.clone())
                    .build()
                    .expect("defaults alone are valid"),
            );
            let base = start(Admin::new().shared(registry.clone()).token("s3cret")).await;
            for action in ["open", "close", "reset"] {
                let broken = registry.get(&unique(&format!("broken-{action}")));
                let ttl = Duration::from_mins(1);
                store
                    .swap(broken.key(), None, NOT_A_CIRCUIT, ttl, false)
                    .await
                    .unwrap();
                let path = format!("/circuits/{}/{action}", broken.key());
                let view = send(&base, "POST", &path, Some("s3cret")).await.view();
                let replaced = view.overwritten.unwrap_or_default();
                assert!(
                    replaced.contains(broken.key()) && replaced.contains("melted"),
                    "{name}: {action}: {replaced}"
                );
                let expected = if action == "open" { "open" } else { "closed" };
                assert_eq!(view.state, expected, "{name}: {action}");
                // Once repaired, an answer replaces nothing.
                let again = send(&base, "POST", &path, Some("s3cret")).await.view();
                assert_eq!(again.overwritten, None, "{name}: {action}");
                let body = send(&base, "GET", &format!("/circuits/{}", broken.key()), None).await;
                assert!(!body.body.contains("overwritten"), "{name}: {}", body.body);
            }
        }
    });
}

/// What the admin API serves anyone about a store that does not answer
/// names it without its password.
#[cfg(feature = "redis")]
#[test]
fn a_store_error_served_to_anyone_holds_no_password() {
    runtime().block_on(async {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // A password as a query parameter is no parameter of the store's:
        // refused, and the refusal does not print it.
        let url = format!("redis://127.0.0.1:{port}/0?password=hunter2");
        let refused = fuse_breaker::store::RedisStore::open(&url).unwrap_err();
        assert!(refused.is_invalid_url(), "{refused}");
        assert!(!refused.to_string().contains("hunter2"), "{refused}");
        assert!(!format!("{refused:?}").contains("hunter2"), "{refused:?}");
        for url in [format!("redis://admin:hunter2@127.0.0.1:{port}/0")] {
            let store = Arc::new(fuse_breaker::store::RedisStore::open(&url).unwrap());
            let registry = Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(Config::default())
                    .store(store)
                    .build()
                    .expect("defaults alone are valid"),
            );
            let fuse = registry.get("billing");
            let base = start(Admin::new().shared(registry.clone())).await;
            let one = send(&base, "GET", &format!("/circuits/{}", fuse.key()), None).await;
            let list = send(&base, "GET", "/circuits", None).await;
            for answer in [&one, &list] {
                assert_eq!(answer.status, 200, "{}", answer.body);
                assert!(
                    answer.body.contains("unreachable"),
                    "{url}: {}",
                    answer.body
                );
                assert!(!answer.body.contains("hunter2"), "{url}: {}", answer.body);
            }
        }
    });
}

/// Calls on a shared rate circuit: `count` of them, `failed` of those
/// failures, `slow` of those held past `hold` before their verdict.
async fn calls(fuse: &fuse_breaker::store::SharedFuse, count: u32, failed: u32, slow: u32) {
    for i in 0..count {
        let permit = fuse.try_acquire().await.expect("closed");
        if i < slow {
            tokio::time::sleep(SLOW_HOLD).await;
        }
        if i >= count - failed {
            permit.failure().await.unwrap();
        } else {
            permit.success().await.unwrap();
        }
    }
}

/// How long a slow call of [`calls`] takes (its circuits' slow calls take
/// 20 ms).
const SLOW_HOLD: Duration = Duration::from_millis(40);

/// A shared circuit under the rate policy, on every store: the API shows
/// the fleet's window (calls, failed, slow) and the rule's thresholds, and
/// an empty window once the rule opened it.
#[test]
fn a_shared_rate_circuit_shows_its_window_and_its_thresholds() {
    use fuse_breaker::config::Policy;
    runtime().block_on(async {
        for (name, store) in stores().await {
            let config = Config::builder()
                .policy(Policy::Rate)
                .failure_rate(50)
                .minimum_calls(10)
                .slow_call_duration(Duration::from_millis(20))
                .slow_call_rate(80)
                .build()
                .unwrap();
            let registry = Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(config)
                    .store(store.clone())
                    .build()
                    .expect("defaults alone are valid"),
            );
            let fuse = registry.get(&unique("rated"));
            let base = start(Admin::new().shared(registry.clone())).await;
            let path = format!("/circuits/{}", fuse.key());

            // 9 calls: 3 failed, 2 slow; fewer than 10, so no rate yet.
            calls(&fuse, 9, 3, 2).await;
            let view = send(&base, "GET", &path, None).await.view();
            assert_eq!(view.state, "closed", "{name}: {view:?}");
            assert_eq!(
                (view.calls, view.failed, view.slow),
                (9, 3, 2),
                "{name}: {view:?}"
            );
            assert_eq!(
                (view.failures, view.failure_ages_ms.len()),
                (0, 0),
                "{name}"
            );
            let c = &view.config;
            assert_eq!(
                (
                    c.policy.as_str(),
                    c.failure_rate,
                    c.minimum_calls,
                    c.window_buckets,
                    c.slow_call_duration_ms,
                    c.slow_call_rate
                ),
                ("rate", 50, 10, 10, Some(20), 80),
                "{name}"
            );
            let json = send(&base, "GET", &path, None).await.json();
            assert_eq!(
                (&json["calls"], &json["failed"], &json["slow"]),
                (&9.into(), &3.into(), &2.into()),
                "{name}: {json}"
            );
            assert_eq!(json["config"]["policy"], "rate", "{name}: {json}");

            // 3 more failures: 6 of 12 failed, 50 %: open, the window empty.
            calls(&fuse, 3, 3, 0).await;
            // The API keeps a reading for a second: read after it.
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let view = send(&base, "GET", &path, None).await.view();
            assert_eq!(view.state, "open", "{name}: {view:?}");
            assert_eq!((view.calls, view.failed, view.slow), (0, 0, 0), "{name}");
            assert!(view.config.is_rate(), "{name}");
        }
    });
}

/// A shared circuit that backs off, on every store: the view read from
/// the store shows the opening's n, its duration and when it ends, as
/// the store's payload has them.
#[test]
fn a_shared_circuit_s_opening_shows_its_n_its_duration_and_when_it_ends() {
    runtime().block_on(async {
        for (name, store) in stores().await {
            let config = Config::builder()
                .failure_threshold(1)
                .half_open_probes(1)
                .open_duration(Duration::from_millis(100))
                .open_backoff(3.0)
                .max_open_duration(Duration::from_mins(1))
                .build()
                .unwrap();
            let registry = Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(config)
                    .store(store.clone())
                    .build()
                    .expect("defaults alone are valid"),
            );
            let charge = registry.get(&unique("charge"));
            charge.try_acquire().await.unwrap().failure().await.unwrap();
            tokio::time::sleep(Duration::from_millis(120)).await;
            let probe = charge.try_acquire().await.expect("a probe");
            probe.failure().await.unwrap();
            let base = start(Admin::new().shared(registry.clone())).await;
            let view = send(&base, "GET", &format!("/circuits/{}", charge.key()), None)
                .await
                .view();
            assert_eq!(
                (view.state.as_str(), view.openings, view.open_for_ms),
                ("open", 2, Some(300)),
                "{name}: {view:?}"
            );
            assert!(view.half_open_in_ms.unwrap() <= 300, "{name}: {view:?}");
            let opened = humantime::parse_rfc3339(view.opened_at.as_deref().unwrap()).unwrap();
            let retry = humantime::parse_rfc3339(view.retry_at.as_deref().unwrap()).unwrap();
            let lasts = retry.duration_since(opened).unwrap().as_millis();
            assert!(lasts.abs_diff(300) <= 1, "{name}: {view:?}");
        }
    });
}

/// SPEC §8's quorum: a circuit one process's failures cannot open shows
/// its one reporter of the two it takes, and its `min_reporters`.
#[test]
fn a_shared_circuit_held_closed_by_its_quorum_shows_its_reporters() {
    runtime().block_on(async {
        for (name, store) in stores().await {
            let config = Config::builder()
                .failure_threshold(2)
                .min_reporters(2)
                .build()
                .unwrap();
            let registry = Arc::new(
                fuse_breaker::Registry::builder()
                    .defaults(config)
                    .store(store.clone())
                    .build()
                    .expect("defaults alone are valid"),
            );
            let fuse = registry.get(&unique("quorum"));
            for _ in 0..3 {
                fuse.try_acquire().await.unwrap().failure().await.unwrap();
            }
            let base = start(Admin::new().shared(registry.clone())).await;
            let view = send(&base, "GET", &format!("/circuits/{}", fuse.key()), None)
                .await
                .view();
            assert_eq!(
                (
                    view.state.as_str(),
                    view.failures,
                    view.reporters,
                    view.config.min_reporters
                ),
                ("closed", 2, 1, 2),
                "{name}"
            );
        }
    });
}

/// A circuit milon/fuse opened, as the API shows it: the failures its
/// payload keeps (those that opened it), and its duration marked as
/// assumed from this process's `open_duration` (the payload does not say
/// when it ends); an opening of the crate's own is known, and shows the
/// failures that opened it too.
#[test]
fn a_circuit_milon_opened_shows_its_failures_and_an_assumed_duration() {
    runtime().block_on(async {
        for (name, store) in stores().await {
            let config = Config::builder().failure_threshold(2).build().unwrap();
            let registry = Arc::new(fuse_breaker::Registry::builder().defaults(config).store(store.clone()).build().expect("defaults alone are valid"));
            let milon = registry.get(&unique("milon"));
            let ours = registry.get(&unique("ours"));
            let now = store.load("fuse:clock").await.unwrap().now.as_secs();
            let payload = format!(
                r#"{{"state":"open","opened_at":{now},"failures":[{},{},{now}],"half_open_successes":0,"half_open_inflight":0}}"#,
                now - 2,
                now - 1
            );
            let ttl = Duration::from_mins(1);
            store
                .swap(milon.key(), None, payload.as_bytes(), ttl, false)
                .await
                .unwrap();
            for _ in 0..2 {
                ours.try_acquire().await.unwrap().failure().await.unwrap();
            }
            let base = start(Admin::new().shared(registry.clone())).await;

            let view = send(&base, "GET", &format!("/circuits/{}", milon.key()), None)
                .await
                .view();
            assert_eq!(view.state, "open", "{name}: {view:?}");
            assert_eq!(view.failures, 3, "{name}: the failures that opened it");
            assert_eq!(view.failure_ages_ms.len(), 3, "{name}");
            assert!(view.open_for_assumed, "{name}: {view:?}");
            assert_eq!(view.open_for_ms, Some(30_000), "{name}: the local open_duration");

            let view = send(&base, "GET", &format!("/circuits/{}", ours.key()), None)
                .await
                .view();
            assert_eq!(view.state, "open", "{name}: {view:?}");
            assert_eq!(view.failures, 2, "{name}: the failures that opened it");
            assert!(!view.open_for_assumed, "{name}: {view:?}");
        }
    });
}
