//! Cached mode (SPEC §8): decisions from a mirror no older than the
//! staleness bound, round trips only where the rules need the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuse_breaker::State;
use fuse_breaker::store::{Loaded, MemoryStore, SharedFuse, Store, StoreError, Swap};

use super::{SteppedStore, block_on, config, stores};

/// A store that counts its round trips.
#[derive(Debug)]
struct Trips {
    inner: Arc<dyn Store>,
    count: AtomicU64,
}

impl Trips {
    fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Store for Trips {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.inner.load(key).await
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
    ) -> Result<Swap, StoreError> {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.inner.swap(key, expected, new, ttl).await
    }
}

fn cached(store: &Arc<dyn SteppedStore>, staleness: Duration) -> (SharedFuse, Arc<Trips>) {
    let trips = Arc::new(Trips {
        inner: store.clone().as_store(),
        count: AtomicU64::new(0),
    });
    let fuse = SharedFuse::builder("billing", trips.clone())
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
                trips.count(),
                1,
                "{name}: the first admission reads the key"
            );
            for _ in 0..100 {
                fuse.try_acquire().await.unwrap().success().await.unwrap();
                fuse.try_acquire().await.unwrap().ignore().await.unwrap();
            }
            assert_eq!(trips.count(), 1, "{name}: none since");
        }
    });
}

#[test]
fn failures_always_go_to_the_store_and_a_success_clears_them_there() {
    block_on(async {
        for (name, store) in stores() {
            let (fuse, trips) = cached(&store, LONG);
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            let after_failure = trips.count();
            assert!(
                after_failure >= 3,
                "{name}: read, read, write: {after_failure}"
            );
            // The mirror holds a failure: the next admission and its
            // success go to the store, which clears it.
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert!(trips.count() > after_failure, "{name}");
            assert!(fuse.snapshot().await.unwrap().failures.is_empty(), "{name}");
            let quiet = trips.count();
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert_eq!(trips.count(), quiet, "{name}: quiet again");
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
            // Within the staleness the mirror still says closed.
            assert!(
                fuse.try_acquire().await.is_ok(),
                "{name}: seen up to the staleness late"
            );
            tokio::time::sleep(staleness).await;
            assert!(
                fuse.try_acquire().await.is_err(),
                "{name}: open once re-read"
            );
            let read = trips.count();
            for _ in 0..50 {
                let refused = fuse.try_acquire().await.unwrap_err();
                assert!(refused.open_error().is_some(), "{name}");
            }
            assert_eq!(trips.count(), read, "{name}: rejections from the mirror");
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
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            strict.try_acquire().await.unwrap().failure().await.unwrap();
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert_eq!(
                strict.snapshot().await.unwrap().failures.len(),
                1,
                "{name}: not sent"
            );
            tokio::time::sleep(staleness).await;
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
