//! Foreign writers (SPEC §8): a process that writes milon/fuse's five
//! fields alone (milon/fuse itself) shares the key. A write of its that
//! keeps `state` and `opened_at` starts no epoch for the crate's permits:
//! their verdicts still apply, on every store, in strict and cached mode.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::State;
use fuse_breaker::store::{SharedFuse, Store, Swap};

use super::{SteppedStore, block_on, config, secs, stores};

/// How old a cached circuit's mirror may be.
const STALENESS: Duration = Duration::from_millis(50);

/// A circuit named `name` in `store`, strict or cached.
fn circuit(store: &Arc<dyn SteppedStore>, name: &str, probes: u32, cached: bool) -> SharedFuse {
    let builder = fuse_breaker::Fuse::builder(name)
        .store(store.clone().as_store())
        .config(config(3, probes));
    if cached {
        builder.cached(STALENESS).build()
    } else {
        builder.build()
    }
}

/// What milon/fuse does around a call: reads the key's five fields,
/// changes them with `change` (given the store's Unix second), and writes
/// them back alone, dropping the crate's part.
async fn as_milon(store: &dyn Store, key: &str, change: impl Fn(&mut serde_json::Value, u64)) {
    let loaded = store.load(key).await.expect("a load");
    let held = loaded.payload.expect("a payload");
    let read: serde_json::Value = serde_json::from_slice(&held).expect("JSON");
    let mut five = serde_json::json!({});
    for field in [
        "state",
        "opened_at",
        "failures",
        "half_open_successes",
        "half_open_inflight",
    ] {
        five[field] = read[field].clone();
    }
    change(&mut five, loaded.now.as_secs());
    let written = serde_json::to_vec(&five).expect("JSON");
    let swap = store
        .swap(key, Some(&held), &written, secs(120), false)
        .await
        .expect("a write");
    assert_eq!(swap, Swap::Written, "nothing else writes the key");
}

/// An open circuit cooled down, as a store holds it after `force_open`
/// (a cached circuit's mirror of the opening too old to decide).
async fn cooled(store: &Arc<dyn SteppedStore>, fuse: &SharedFuse) {
    fuse.force_open().await.expect("force_open");
    store.advance(secs(31));
    tokio::time::sleep(STALENESS * 2).await;
}

#[test]
fn a_probe_s_success_after_milon_s_probe_s_closes_the_circuit() {
    block_on(async {
        for (name, store) in stores() {
            for cached in [false, true] {
                let fuse = circuit(&store, &format!("probes-{cached}"), 2, cached);
                cooled(&store, &fuse).await;
                let ours = fuse.try_acquire().await.expect("a probe");
                assert!(ours.is_probe(), "{name}");
                // milon/fuse takes the second slot, and its probe succeeds.
                as_milon(&*store.clone().as_store(), fuse.key(), |five, _| {
                    five["half_open_successes"] = 1.into();
                    five["half_open_inflight"] = 1.into();
                })
                .await;
                ours.success().await.expect("the verdict");
                assert_eq!(
                    fuse.state().await.unwrap(),
                    State::Closed,
                    "{name}, cached {cached}: the second success closes it"
                );
            }
        }
    });
}

#[test]
fn a_probe_s_failure_after_milon_s_probe_s_success_opens_the_circuit() {
    block_on(async {
        for (name, store) in stores() {
            for cached in [false, true] {
                let fuse = circuit(&store, &format!("relapse-{cached}"), 2, cached);
                cooled(&store, &fuse).await;
                let ours = fuse.try_acquire().await.expect("a probe");
                as_milon(&*store.clone().as_store(), fuse.key(), |five, _| {
                    five["half_open_successes"] = 1.into();
                    five["half_open_inflight"] = 1.into();
                })
                .await;
                ours.failure().await.expect("the verdict");
                assert_eq!(
                    fuse.state().await.unwrap(),
                    State::Open,
                    "{name}, cached {cached}: a failed probe opens it again"
                );
            }
        }
    });
}

#[test]
fn no_closed_failure_is_lost_to_milon_s_write() {
    block_on(async {
        for (name, store) in stores() {
            for cached in [false, true] {
                let fuse = circuit(&store, &format!("closed-{cached}"), 1, cached);
                // A key of a named generation, in a later closed epoch.
                fuse.force_open().await.expect("force_open");
                fuse.force_closed().await.expect("force_closed");
                let first = fuse.try_acquire().await.expect("a permit");
                let second = fuse.try_acquire().await.expect("a permit");
                first.failure().await.expect("the verdict");
                // milon/fuse counts a failure of its own.
                as_milon(&*store.clone().as_store(), fuse.key(), |five, now| {
                    five["failures"]
                        .as_array_mut()
                        .expect("a list")
                        .push(now.into());
                })
                .await;
                second.failure().await.expect("the verdict");
                let snapshot = fuse.snapshot().await.unwrap();
                assert_eq!(
                    snapshot.state,
                    State::Open,
                    "{name}, cached {cached}: three failures of three reported"
                );
            }
        }
    });
}
