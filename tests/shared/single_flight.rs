//! One read of a cached circuit's key in flight at a time (SPEC §8): an
//! announcement is a hint that asks for a read, and however many arrive
//! while one is under way, one more read follows it, no more; calls that
//! find the mirror older than the staleness all wait for one read. While a
//! read is under way, calls go on deciding from the mirror.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuse_breaker::store::{Changes, Loaded, MemoryStore, Store, StoreError, Swap};

use super::block_on;

/// A memory store whose reads wait while it is held, counting them.
#[derive(Debug)]
struct Held {
    inner: MemoryStore,
    loads: AtomicU64,
    gate: tokio::sync::Semaphore,
}

/// As many reads as a held store lets through once released.
const RELEASED: u32 = 1 << 20;

impl Held {
    fn new() -> Self {
        Held {
            inner: MemoryStore::new(),
            loads: AtomicU64::new(0),
            gate: tokio::sync::Semaphore::new(RELEASED as usize),
        }
    }

    fn loads(&self) -> u64 {
        self.loads.load(Ordering::SeqCst)
    }

    /// Reads wait from now on.
    async fn hold(&self) {
        self.gate.acquire_many(RELEASED).await.unwrap().forget();
    }

    fn release(&self) {
        self.gate.add_permits(RELEASED as usize);
    }
}

#[async_trait::async_trait]
impl Store for Held {
    fn name(&self) -> &'static str {
        "held"
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        drop(self.gate.acquire().await.unwrap());
        self.inner.load(key).await
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        self.inner.swap(key, expected, new, ttl, announce).await
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        self.inner.delete(key, announce).await
    }

    fn changes(&self) -> Option<&Changes> {
        self.inner.changes()
    }
}

/// Lets every task that can run do so.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[test]
fn announcements_cost_one_read_under_way_and_one_after_it() {
    block_on(async {
        let store = Arc::new(Held::new());
        let fuse = fuse_breaker::Fuse::builder("billing")
            .store(store.clone())
            .cached(Duration::from_mins(1))
            .build();
        fuse.try_acquire().await.unwrap().success().await.unwrap();
        assert_eq!(store.loads(), 1, "the first call reads the key");
        store.hold().await;
        let changes = store.changes().unwrap();
        for _ in 0..1_000 {
            changes.changed(fuse.key());
        }
        settle().await;
        assert_eq!(
            store.loads(),
            2,
            "one read under way for 1,000 announcements"
        );
        // Calls go on from the mirror meanwhile, without waiting.
        for _ in 0..100 {
            let admitted = tokio::time::timeout(Duration::from_secs(1), fuse.try_acquire()).await;
            admitted
                .expect("not held up")
                .unwrap()
                .success()
                .await
                .unwrap();
        }
        for _ in 0..1_000 {
            changes.changed(fuse.key());
        }
        settle().await;
        assert_eq!(
            store.loads(),
            2,
            "the next read waits for the one under way"
        );
        store.release();
        settle().await;
        assert_eq!(
            store.loads(),
            3,
            "one read after the one under way, for the announcements it may have missed"
        );
        settle().await;
        assert_eq!(store.loads(), 3, "and no more");
    });
}

#[test]
fn calls_that_find_the_mirror_old_share_one_read() {
    block_on(async {
        let store = Arc::new(Held::new());
        let staleness = Duration::from_millis(20);
        let fuse = Arc::new(
            fuse_breaker::Fuse::builder("billing")
                .store(store.clone())
                .cached(staleness)
                .build(),
        );
        fuse.try_acquire().await.unwrap().success().await.unwrap();
        assert_eq!(store.loads(), 1);
        store.hold().await;
        tokio::time::sleep(3 * staleness).await;
        let calls: Vec<_> = (0..64)
            .map(|_| {
                let fuse = fuse.clone();
                tokio::spawn(async move {
                    fuse.try_acquire().await.unwrap().success().await.unwrap();
                })
            })
            .collect();
        settle().await;
        assert_eq!(store.loads(), 2, "one read for 64 calls");
        store.release();
        for call in calls {
            call.await.expect("admitted");
        }
        assert_eq!(store.loads(), 2, "the others decided from what it read");
    });
}
