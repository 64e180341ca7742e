//! Cached mode (SPEC §8): decisions from a mirror no older than the
//! staleness bound, round trips only where the rules need the store.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::State;
use fuse_breaker::store::{Counting, MemoryStore, SharedFuse, Store};

use super::{SteppedStore, block_on, config, stores};

fn cached(
    store: &Arc<dyn SteppedStore>,
    staleness: Duration,
) -> (SharedFuse, Arc<Counting<Arc<dyn Store>>>) {
    let trips = Arc::new(Counting::new(store.clone().as_store()));
    let fuse = fuse_breaker::Fuse::builder("billing")
        .store(trips.clone())
        .config(config(3, 1))
        .cached(staleness)
        .build();
    (fuse, trips)
}

const LONG: Duration = Duration::from_mins(1);

#[test]
fn a_closed_circuit_without_failures_makes_no_round_trip() {
    block_on(async {
        for (name, store) in stores() {
            let (fuse, trips) = cached(&store, LONG);
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert_eq!(
                trips.round_trips(),
                1,
                "{name}: the first admission reads the key"
            );
            for _ in 0..100 {
                fuse.try_acquire().await.unwrap().success().await.unwrap();
                fuse.try_acquire().await.unwrap().ignore().await.unwrap();
            }
            assert_eq!(trips.round_trips(), 1, "{name}: none since");
        }
    });
}

#[test]
fn failures_always_go_to_the_store_and_a_success_clears_them_there() {
    block_on(async {
        for (name, store) in stores() {
            let (fuse, trips) = cached(&store, LONG);
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            let after_failure = trips.round_trips();
            assert!(
                after_failure >= 3,
                "{name}: read, read, write: {after_failure}"
            );
            // The mirror holds a failure: the next admission and its
            // success go to the store, which clears it.
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert!(trips.round_trips() > after_failure, "{name}");
            assert!(fuse.snapshot().await.unwrap().failures.is_empty(), "{name}");
            let quiet = trips.round_trips();
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert_eq!(trips.round_trips(), quiet, "{name}: quiet again");
        }
    });
}

#[test]
fn an_open_mirror_rejects_locally_and_another_process_s_opening_shows_within_the_staleness() {
    block_on(async {
        for (name, store) in stores() {
            let staleness = Duration::from_millis(100);
            let (fuse, trips) = cached(&store, staleness);
            let strict = super::circuit(&store, "billing", &config(3, 1));
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            strict.force_open().await.unwrap();
            if store.changes().is_some() {
                // Announced: the mirror is open once the read the
                // announcement asks for is back, well within the
                // staleness.
                super::announced::eventually(name, async || fuse.try_acquire().await.is_err())
                    .await;
            } else {
                // Not announced: within the staleness the mirror still
                // says closed.
                assert!(
                    fuse.try_acquire().await.is_ok(),
                    "{name}: seen up to the staleness late"
                );
                // Past the staleness on the coarse clock too (1 ms ticks).
                tokio::time::sleep(2 * staleness).await;
                assert!(
                    fuse.try_acquire().await.is_err(),
                    "{name}: open once re-read"
                );
            }
            let read = trips.round_trips();
            for _ in 0..50 {
                let refused = fuse.try_acquire().await.unwrap_err();
                assert!(refused.open_error().is_some(), "{name}");
            }
            assert_eq!(
                trips.round_trips(),
                read,
                "{name}: rejections from the mirror"
            );
        }
    });
}

#[test]
fn a_success_may_leave_another_process_s_recent_failure_as_documented() {
    block_on(async {
        for (name, store) in stores() {
            let staleness = Duration::from_millis(100);
            let (fuse, _) = cached(&store, staleness);
            let strict = super::circuit(&store, "billing", &config(3, 1));
            // The key's first write is announced (a new circuit): make it
            // before the mirror is read; a failure after is not announced.
            strict.try_acquire().await.unwrap().failure().await.unwrap();
            strict.try_acquire().await.unwrap().success().await.unwrap();
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            strict.try_acquire().await.unwrap().failure().await.unwrap();
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert_eq!(
                strict.snapshot().await.unwrap().failures.len(),
                1,
                "{name}: not sent"
            );
            // Past the staleness on the coarse clock too (1 ms ticks).
            tokio::time::sleep(2 * staleness).await;
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert!(
                strict.snapshot().await.unwrap().failures.is_empty(),
                "{name}: cleared"
            );
        }
    });
}

#[test]
fn the_mirror_goes_with_the_connection() {
    block_on(async {
        let memory = Arc::new(MemoryStore::frozen());
        let store: Arc<dyn SteppedStore> = memory.clone();
        let (fuse, _) = cached(&store, LONG);
        fuse.try_acquire().await.unwrap().success().await.unwrap();
        memory.set_unreachable(true);
        let permit = fuse.try_acquire().await.expect("from the mirror");
        assert!(permit.from_store());
        assert!(permit.failure().await.is_err(), "a failure needs the store");
        let permit = fuse.try_acquire().await.expect("the local circuit");
        assert!(
            !permit.from_store(),
            "the mirror was dropped: the fallback decides"
        );
        assert_eq!(fuse.local().state(), State::Closed);
    });
}
