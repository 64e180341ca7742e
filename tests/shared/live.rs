//! SPEC §12 for shared circuits: settings are each process's own. A
//! shared circuit reconfigured keeps what the store holds (no key is
//! written or reset), decides by its new settings from its next admission
//! or verdict, and so do its local fallback and its mirror; a registry of
//! shared circuits reconfigures a name and reloads; each change is one
//! event naming who asked. On every store the machine has.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuse_breaker::config::{Overrides, Policy};
use fuse_breaker::events::{Listener, Reconfiguration, Transition};
use fuse_breaker::store::{MemoryStore, SharedFuse, Store};
use fuse_breaker::{Config, Registry, State};

use super::{SteppedStore, block_on, circuit, config, secs, stores};

/// `n` failed calls of `fuse`, each of which ran.
async fn fail(fuse: &SharedFuse, n: u32) {
    for _ in 0..n {
        let permit = fuse.try_acquire().await.expect("the call runs");
        permit.failure().await.unwrap();
    }
}

/// What the store holds under `fuse`'s key, byte for byte.
async fn payload(store: &Arc<dyn SteppedStore>, fuse: &SharedFuse) -> Option<Vec<u8>> {
    store.load(fuse.key()).await.unwrap().payload
}

/// `threshold` failures in a minute open for `open`; `probes` probes.
fn settings(threshold: u32, probes: u32, open: Duration) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .open_duration(open)
        .build()
        .expect("a valid configuration")
}

/// How long `fuse` rejects calls for now (it must be open).
async fn retry_after(fuse: &SharedFuse) -> Duration {
    let refused = fuse.try_acquire().await.expect_err("the circuit rejects");
    refused.open_error().expect("an open circuit").retry_after()
}

#[test]
fn an_open_circuit_reconfigured_stays_open_to_the_same_end_and_the_key_is_untouched() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &settings(3, 1, secs(30)));
            fail(&fuse, 3).await;
            store.advance(secs(5));
            let before = payload(&store, &fuse).await;
            let snapshot = fuse.snapshot().await.unwrap();
            let (writes, waiting) = (store.writes(), retry_after(&fuse).await);
            assert_eq!(snapshot.state, State::Open, "{name}");
            assert_eq!(waiting, secs(25), "{name}");

            fuse.reconfigure(settings(5, 2, secs(10))).unwrap();
            assert_eq!(fuse.config().failure_threshold(), 5, "{name}");
            assert_eq!(fuse.lease(), secs(10), "{name}: the new probe_timeout");
            assert_eq!(
                payload(&store, &fuse).await,
                before,
                "{name}: the key as it was"
            );
            assert_eq!(store.writes(), writes, "{name}: nothing written");
            assert_eq!(fuse.snapshot().await.unwrap(), snapshot, "{name}");
            assert_eq!(retry_after(&fuse).await, waiting, "{name}: the same end");

            // The opening began under 30 s and ends then, not after the new 10 s.
            store.advance(secs(10));
            assert_eq!(retry_after(&fuse).await, secs(15), "{name}");
            store.advance(secs(15));
            // Half-open under the new settings: two probes, the second admitted.
            let first = fuse.try_acquire().await.expect("a probe");
            let second = fuse.try_acquire().await.expect("the new second probe");
            assert!(fuse.try_acquire().await.is_err(), "{name}: two at most");
            first.success().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::HalfOpen, "{name}");
            second.success().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
            // The next opening takes the new open_duration.
            fail(&fuse, 5).await;
            assert_eq!(retry_after(&fuse).await, secs(10), "{name}");
        }
    });
}

#[test]
fn a_probe_in_flight_keeps_its_slot_and_lease_across_a_reconfiguration() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = fuse_breaker::Fuse::builder("billing")
                .store(store.clone().as_store())
                .config(settings(1, 1, secs(30)))
                .lease(secs(20))
                .build();
            fail(&fuse, 1).await;
            store.advance(secs(30));
            let probe = fuse.try_acquire().await.expect("the probe");
            let before = payload(&store, &fuse).await;
            fuse.reconfigure(settings(1, 1, secs(60))).unwrap();
            assert_eq!(fuse.lease(), secs(20), "{name}: the lease it was given");
            assert_eq!(payload(&store, &fuse).await, before, "{name}");
            store.advance(secs(19));
            assert!(fuse.try_acquire().await.is_err(), "{name}: its slot held");
            probe.success().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}

#[test]
fn a_stricter_threshold_opens_sooner_from_then_on_in_strict_and_cached_mode() {
    block_on(async {
        for (name, store) in stores() {
            for cached in [false, true] {
                let mut builder = fuse_breaker::Fuse::builder(format!("billing-{cached}"))
                    .store(store.clone().as_store())
                    .config(config(8, 1));
                if cached {
                    builder = builder.cached(Duration::from_mins(1));
                }
                let fuse = builder.build();
                fuse.try_acquire().await.unwrap().success().await.unwrap();
                fail(&fuse, 2).await;
                let before = payload(&store, &fuse).await;
                fuse.reconfigure(config(3, 1)).unwrap();
                assert_eq!(payload(&store, &fuse).await, before, "{name} {cached}");
                assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
                fail(&fuse, 1).await;
                assert_eq!(
                    fuse.state().await.unwrap(),
                    State::Open,
                    "{name} {cached}: 3 failures reach the new threshold"
                );
            }
        }
    });
}

#[test]
fn a_looser_threshold_keeps_the_circuit_closed_longer() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &config(3, 1));
            fail(&fuse, 2).await;
            fuse.reconfigure(config(5, 1)).unwrap();
            fail(&fuse, 2).await;
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
            fail(&fuse, 1).await;
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn the_local_fallback_follows_the_new_settings() {
    block_on(async {
        let store = Arc::new(MemoryStore::new());
        let fuse = fuse_breaker::Fuse::builder("billing")
            .store(store.clone())
            .config(config(5, 1))
            .build();
        fuse.reconfigure(config(2, 1)).unwrap();
        assert_eq!(fuse.local().config(), fuse.config());
        store.set_unreachable(true);
        for _ in 0..2 {
            let permit = fuse.try_acquire().await.expect("the fallback admits");
            assert!(!permit.from_store());
            permit.failure().await.unwrap();
        }
        assert_eq!(
            fuse.local().state(),
            State::Open,
            "2 failures: the new threshold"
        );
        assert!(fuse.try_acquire().await.is_err());
    });
}

#[test]
fn what_cannot_change_in_place_is_refused_by_name_and_nothing_changes() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &config(3, 1));
            fail(&fuse, 1).await;
            let before = payload(&store, &fuse).await;
            let renamed = Config::builder().key_prefix("other").build().unwrap();
            let refused = fuse.reconfigure(renamed).unwrap_err();
            assert_eq!(refused.setting(), "key_prefix", "{name}");
            let rate = Config::builder().policy(Policy::Rate).build().unwrap();
            assert_eq!(fuse.reconfigure(rate).unwrap_err().setting(), "policy");
            let throttled = Config::builder().throttle_k(2.0).build().unwrap();
            let refused = fuse.reconfigure(throttled).unwrap_err();
            assert_eq!(refused.setting(), "throttle_k", "{name}");
            assert_eq!(
                fuse.config(),
                &config(3, 1),
                "{name}: the old settings kept"
            );
            assert_eq!(fuse.local().config(), &config(3, 1), "{name}");
            assert_eq!(payload(&store, &fuse).await, before, "{name}");
            fail(&fuse, 2).await;
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn two_processes_on_one_key_keep_each_their_own_settings() {
    block_on(async {
        for (name, store) in stores() {
            let here = circuit(&store, "billing", &config(3, 1));
            let there = circuit(&store, "billing", &config(3, 1));
            fail(&there, 1).await;
            let before = payload(&store, &there).await;
            here.reconfigure(config(2, 1)).unwrap();
            assert_eq!(payload(&store, &there).await, before, "{name}");
            assert_eq!(here.config().failure_threshold(), 2, "{name}");
            assert_eq!(there.config().failure_threshold(), 3, "{name}");
            // Two failures in the window, the second judged by `there`'s 3.
            fail(&there, 1).await;
            assert_eq!(there.state().await.unwrap(), State::Closed, "{name}");
            // Two, the second judged by `here`'s 2: open for both.
            there.reset().await.unwrap();
            fail(&here, 1).await;
            assert_eq!(here.state().await.unwrap(), State::Closed, "{name}");
            fail(&there, 1).await;
            assert_eq!(there.state().await.unwrap(), State::Closed, "{name}");
            fail(&here, 1).await;
            assert_eq!(there.state().await.unwrap(), State::Open, "{name}");
            assert_eq!(there.config().failure_threshold(), 3, "{name}");
        }
    });
}

/// Every reconfiguration heard: `(key, by, changed settings)`.
#[derive(Default)]
struct Heard(Mutex<Vec<(String, String, Vec<&'static str>)>>);

impl Listener for Heard {
    fn on_transition(&self, _: &Transition) {}

    fn on_reconfigure(&self, event: &Reconfiguration) {
        let changed = event
            .changes()
            .iter()
            .map(|change| change.setting)
            .collect();
        let heard = (event.key.to_owned(), event.by.to_owned(), changed);
        self.0.lock().unwrap().push(heard);
    }
}

impl Heard {
    fn take(&self) -> Vec<(String, String, Vec<&'static str>)> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

#[test]
fn each_change_is_one_event_naming_who_asked() {
    let store = Arc::new(MemoryStore::new());
    let registry = Registry::builder().store(store).build().unwrap();
    let (on_circuit, on_registry) = (Arc::new(Heard::default()), Arc::new(Heard::default()));
    registry.on_transition(on_registry.clone());
    let billing = registry.get("billing");
    billing.on_transition(on_circuit.clone());
    let key = || billing.key().to_owned();

    billing.reconfigure(config(4, 1)).unwrap();
    let heard = vec![(
        key(),
        "code".to_owned(),
        vec!["failure_threshold", "half_open_probes"],
    )];
    assert_eq!(
        on_circuit.take(),
        heard,
        "one event, not one more of the fallback"
    );
    assert_eq!(on_registry.take(), heard);
    billing.reconfigure(config(4, 1)).unwrap();
    assert_eq!(on_circuit.take(), [], "nothing changed, nothing told");

    let probes = Overrides {
        half_open_probes: Some(3),
        ..Overrides::default()
    };
    registry.reconfigure("billing", &probes).unwrap();
    let heard = vec![(
        key(),
        "registry".to_owned(),
        vec!["failure_threshold", "half_open_probes"],
    )];
    assert_eq!(on_circuit.take(), heard);
    registry.reload(config(2, 1), &[]).unwrap();
    let heard = vec![(
        key(),
        "reload".to_owned(),
        vec!["failure_threshold", "half_open_probes"],
    )];
    assert_eq!(on_circuit.take(), heard);
    assert_eq!(on_registry.take().len(), 2);
}

#[test]
fn a_registry_name_reconfigured_reaches_its_circuits_and_later_ones() {
    block_on(async {
        for (name, store) in stores() {
            let registry = Registry::builder()
                .store(store.clone().as_store())
                .build()
                .unwrap();
            let charge = registry.get_operation("billing", "charge");
            let search = registry.get("search");
            fail(&charge, 1).await;
            let before = payload(&store, &charge).await;
            let stricter = Overrides {
                failure_threshold: Some(2),
                ..Overrides::default()
            };
            let config = registry.reconfigure("billing", &stricter).unwrap();
            assert_eq!(config.failure_threshold(), 2, "{name}");
            assert_eq!(charge.config().failure_threshold(), 2, "{name}");
            assert_eq!(charge.local().config().failure_threshold(), 2, "{name}");
            assert_eq!(search.config().failure_threshold(), 8, "{name}");
            assert_eq!(payload(&store, &charge).await, before, "{name}");
            let refund = registry.get_operation("billing", "refund");
            assert_eq!(
                refund.config().failure_threshold(),
                2,
                "{name}: a later one"
            );
            fail(&charge, 1).await;
            assert_eq!(charge.state().await.unwrap(), State::Open, "{name}");

            let rate = Overrides {
                policy: Some(Policy::Rate),
                ..Overrides::default()
            };
            let refused = registry.reconfigure("billing", &rate).unwrap_err();
            assert_eq!(refused.setting(), "policy", "{name}");
            let message = refused.to_string();
            assert!(message.contains("circuit fuse:billing:"), "{message}");
            assert_eq!(registry.config_for("billing").policy(), Policy::Count);
        }
    });
}

#[test]
fn a_reload_reaches_existing_and_new_circuits_and_spares_those_with_their_own() {
    block_on(async {
        for (name, store) in stores() {
            let registry = Registry::builder()
                .store(store.clone().as_store())
                .build()
                .unwrap();
            let billing = registry.get("billing");
            let own = registry.get_with_config("own", "", config(6, 1));
            fail(&billing, 1).await;
            let before = payload(&store, &billing).await;
            let search = Overrides {
                failure_threshold: Some(4),
                ..Overrides::default()
            };
            registry
                .reload(config(2, 1), &[("search".to_owned(), search)])
                .unwrap();
            assert_eq!(billing.config().failure_threshold(), 2, "{name}");
            assert_eq!(registry.get("search").config().failure_threshold(), 4);
            assert_eq!(registry.get("new").config().failure_threshold(), 2);
            assert_eq!(own.config().failure_threshold(), 6, "{name}: its own");
            assert_eq!(payload(&store, &billing).await, before, "{name}");
            fail(&billing, 1).await;
            assert_eq!(billing.state().await.unwrap(), State::Open, "{name}");

            let rate = Config::builder().policy(Policy::Rate).build().unwrap();
            let refused = registry.reload(rate, &[]).unwrap_err();
            assert_eq!(refused.setting(), "policy", "{name}");
            assert_eq!(billing.config().failure_threshold(), 2, "{name}: kept");
        }
    });
}

#[cfg(feature = "config-file")]
#[test]
fn a_settings_file_reloads_a_shared_registry_but_not_its_store_or_fallback() {
    use fuse_breaker::settings::Settings;
    let registry = Registry::builder()
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let billing = registry.get("billing");
    let file = "store = \"redis\"\nfailure_threshold = 3\n[breakers.billing]\nhalf_open_probes = 2";
    Settings::from_toml(file)
        .unwrap()
        .reload(&registry)
        .unwrap();
    assert_eq!(billing.config().failure_threshold(), 3);
    assert_eq!(billing.config().half_open_probes(), 2);
    for (file, setting) in [
        ("store = \"memory\"\nfailure_threshold = 4", "store"),
        ("store = \"redis\"\nfallback = \"reject\"", "fallback"),
    ] {
        let refused = Settings::from_toml(file).unwrap().reload(&registry);
        let message = refused.unwrap_err().to_string();
        assert!(
            message.contains(&format!("invalid {setting} = ")),
            "{message}"
        );
    }
    assert_eq!(billing.config().failure_threshold(), 3, "nothing changed");
}

#[test]
fn no_call_fails_while_another_thread_reconfigures_a_thousand_times() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let fuse = Arc::new(
        fuse_breaker::Fuse::builder("billing")
            .store(Arc::new(MemoryStore::new()))
            .config(config(3, 1))
            .cached(Duration::from_millis(1))
            .build(),
    );
    let changing = fuse.clone();
    let reconfiguring = std::thread::spawn(move || {
        for change in 0..1000 {
            let threshold = if change % 2 == 0 { 4 } else { 3 };
            changing.reconfigure(config(threshold, 1)).unwrap();
        }
    });
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let fuse = fuse.clone();
            runtime.spawn(async move {
                for _ in 0..200 {
                    let permit = fuse.try_acquire().await.expect("closed throughout");
                    permit.success().await.unwrap();
                }
            })
        })
        .collect();
    runtime.block_on(async {
        for call in calls {
            call.await.unwrap();
        }
    });
    reconfiguring.join().unwrap();
    assert_eq!(fuse.config().failure_threshold(), 3);
    runtime.block_on(async {
        fail(&fuse, 2).await;
        assert_eq!(fuse.state().await.unwrap(), State::Closed);
        fail(&fuse, 1).await;
        assert_eq!(fuse.state().await.unwrap(), State::Open);
    });
}

/// The `metrics` sink counts each change once (not once more for the
/// local fallback, a circuit of the same key), by who asked.
#[cfg(feature = "metrics")]
#[test]
fn each_change_is_counted_once_by_who_asked() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let registry = metrics::with_local_recorder(&recorder, || {
        Registry::builder()
            .store(Arc::new(MemoryStore::new()))
            .build()
            .unwrap()
    });
    let billing = registry.get("billing");
    let stricter = Overrides {
        failure_threshold: Some(2),
        ..Overrides::default()
    };
    metrics::with_local_recorder(&recorder, || {
        billing.reconfigure(config(4, 1)).unwrap();
        billing.reconfigure(config(5, 1)).unwrap();
        registry.reconfigure("billing", &stricter).unwrap();
    });
    let mut counted: Vec<(Vec<String>, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "fuse_reconfigurations_total")
        .map(|(key, _, _, value)| {
            let labels = key.key().labels();
            let labels = labels.map(|l| format!("{}={}", l.key(), l.value()));
            let DebugValue::Counter(count) = value else {
                panic!("a counter: {value:?}");
            };
            (labels.collect(), count)
        })
        .collect();
    counted.sort();
    let labels = |by: &str| vec!["key=fuse:billing".to_owned(), format!("by={by}")];
    assert_eq!(counted, [(labels("code"), 2), (labels("registry"), 1)]);
}
