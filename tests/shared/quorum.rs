//! SPEC §8's quorum (`min_reporters`) through a store, on every store the
//! machine has: each `SharedFuse` is a reporter (two here stand for two
//! processes); a closed circuit opens only once its rule holds and its
//! window's failures came from `min_reporters` of them.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::SharedFuse;
use fuse_breaker::{Config, State, config::Policy};

use super::{SteppedStore, block_on, circuit, secs, stores};

/// `threshold` failures in a minute, from `quorum` reporters.
fn quorum(threshold: u32, quorum: u32) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .min_reporters(quorum)
        .build()
        .expect("a valid configuration")
}

/// `n` failed calls of `fuse`, each of which ran.
async fn fail(fuse: &SharedFuse, n: u32) {
    for _ in 0..n {
        let permit = fuse.try_acquire().await.expect("the call runs");
        permit.failure().await.unwrap();
    }
}

/// Two processes' circuits on one key of `store`.
fn two(store: &Arc<dyn SteppedStore>, name: &str, config: &Config) -> (SharedFuse, SharedFuse) {
    (circuit(store, name, config), circuit(store, name, config))
}

#[test]
fn one_process_cannot_open_the_circuit_a_second_opens_it() {
    block_on(async {
        for (name, store) in stores() {
            let (sick, other) = two(&store, "quorum-two", &quorum(3, 2));
            fail(&sick, 10).await;
            let snapshot = sick.snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::Closed, "{name}: one reporter");
            assert_eq!(snapshot.reporters, 1, "{name}");
            assert_eq!(snapshot.failures.len(), 3, "{name}: the newest threshold");
            fail(&other, 1).await;
            let snapshot = other.snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::Open, "{name}: two reporters");
            assert_eq!(snapshot.reporters, 0, "{name}: no window while open");
        }
    });
}

#[test]
fn under_rate_the_quorum_holds_too() {
    block_on(async {
        for (name, store) in stores() {
            let config = Config::builder()
                .policy(Policy::Rate)
                .failure_rate(50)
                .minimum_calls(4)
                .min_reporters(2)
                .build()
                .unwrap();
            let (sick, other) = two(&store, "quorum-rate", &config);
            fail(&sick, 10).await;
            let snapshot = sick.snapshot().await.unwrap();
            assert_eq!(
                (snapshot.state, snapshot.failed, snapshot.reporters),
                (State::Closed, 10, 1),
                "{name}"
            );
            fail(&other, 1).await;
            assert_eq!(other.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn under_count_a_success_clears_the_reporters_with_the_failures() {
    block_on(async {
        for (name, store) in stores() {
            let (one, other) = two(&store, "quorum-cleared", &quorum(2, 2));
            fail(&one, 1).await;
            other.try_acquire().await.unwrap().success().await.unwrap();
            assert_eq!(other.snapshot().await.unwrap().reporters, 0, "{name}");
            fail(&other, 1).await;
            assert_eq!(one.state().await.unwrap(), State::Closed, "{name}");
            fail(&one, 1).await;
            assert_eq!(one.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn a_process_whose_failures_left_the_window_no_longer_counts() {
    block_on(async {
        for (name, store) in stores() {
            let (one, other) = two(&store, "quorum-window", &quorum(2, 2));
            fail(&one, 1).await;
            store.advance(secs(61));
            fail(&other, 2).await;
            let snapshot = other.snapshot().await.unwrap();
            assert_eq!(
                (snapshot.state, snapshot.reporters),
                (State::Closed, 1),
                "{name}: the first process's failure left the window"
            );
            fail(&one, 1).await;
            assert_eq!(one.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn probes_and_manual_changes_ignore_the_quorum() {
    block_on(async {
        for (name, store) in stores() {
            let config = quorum(2, 3);
            let fuse = circuit(&store, "quorum-manual", &config);
            fuse.force_open().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");
            store.advance(secs(30));
            let probe = fuse.try_acquire().await.unwrap();
            assert!(probe.is_probe(), "{name}");
            probe.failure().await.unwrap();
            assert_eq!(
                fuse.state().await.unwrap(),
                State::Open,
                "{name}: one process's failed probe reopens"
            );
            fuse.force_closed().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}

#[test]
fn failures_milon_wrote_are_one_anonymous_reporter_s() {
    block_on(async {
        for (name, store) in stores() {
            let key = "fuse:quorum-milon";
            let as_store = store.clone().as_store();
            let now = as_store.load(key).await.unwrap().now.as_secs();
            let payload = format!(
                r#"{{"state":"closed","opened_at":null,"failures":[{},{}],"half_open_successes":0,"half_open_inflight":0}}"#,
                now - 2,
                now - 1
            );
            as_store
                .swap(key, None, payload.as_bytes(), Duration::from_mins(2), false)
                .await
                .unwrap();
            let config = quorum(2, 2);
            let fuse = circuit(&store, "quorum-milon", &config);
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(
                (snapshot.failures.len(), snapshot.reporters),
                (2, 1),
                "{name}"
            );
            // This crate's process is a second reporter.
            fail(&fuse, 1).await;
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn an_in_process_circuit_ignores_the_quorum() {
    let fuse = fuse_breaker::Fuse::new("quorum-local", quorum(1, 4));
    fuse.try_acquire().unwrap().failure();
    assert_eq!(fuse.snapshot().state, State::Open);
    assert_eq!(fuse.snapshot().reporters, 0);
}
