//! A store that stops answering (SPEC §8): the fallback decides, the
//! outage is reported, and the store is used again once it answers.

use std::sync::Arc;
use std::time::Duration;

use std::sync::Mutex;

use fuse_breaker::config::Fallback;
use fuse_breaker::events::StoreEvent;
use fuse_breaker::store::{MemoryStore, Refusal, SharedFuse};
use fuse_breaker::{State, events::Listener, events::Transition};

use super::{block_on, config};

fn fuse(store: &Arc<MemoryStore>, fallback: Fallback) -> SharedFuse {
    fuse_breaker::Fuse::builder("billing")
        .store(store.clone())
        .config(config(2, 1))
        .fallback(fallback)
        .build()
}

/// Records what the store's events said: `(reachable, error)`.
#[derive(Default)]
struct Outages(Mutex<Vec<(bool, Option<String>)>>);

impl Listener for Outages {
    fn on_transition(&self, _: &Transition) {}

    fn on_store(&self, event: &StoreEvent) {
        assert_eq!((event.key, event.store), ("fuse:billing", "memory"));
        let error = event.error.map(ToString::to_string);
        self.0.lock().unwrap().push((event.reachable, error));
    }
}

/// Longer than the first backoff after an outage.
const PAST_BACKOFF: Duration = Duration::from_millis(150);

#[test]
fn the_local_circuit_decides_while_the_store_is_down_then_the_store_again() {
    block_on(async {
        let store = Arc::new(MemoryStore::new());
        let fuse = fuse(&store, Fallback::Local);
        let outages = Arc::new(Outages::default());
        fuse.on_transition(outages.clone());
        store.set_unreachable(true);
        for _ in 0..2 {
            let permit = fuse.try_acquire().await.expect("the local circuit admits");
            assert!(!permit.from_store());
            permit.failure().await.unwrap();
        }
        assert!(!fuse.store_reachable());
        assert_eq!(fuse.local().state(), State::Open);
        assert!(fuse.try_acquire().await.unwrap_err().open_error().is_some());

        store.set_unreachable(false);
        tokio::time::sleep(PAST_BACKOFF).await;
        let permit = fuse
            .try_acquire()
            .await
            .expect("the store's circuit is closed");
        assert!(permit.from_store());
        assert!(fuse.store_reachable());
        permit.success().await.unwrap();
        assert_eq!(
            fuse.state().await.unwrap(),
            State::Closed,
            "the store's circuit"
        );
        assert_eq!(
            *outages.0.lock().unwrap(),
            [
                (
                    false,
                    Some("store memory unreachable: the store is stopped".to_owned())
                ),
                (true, None)
            ],
            "one event as it stopped answering, one as it came back"
        );
    });
}

#[test]
fn allow_runs_every_call_and_records_nothing() {
    block_on(async {
        let store = Arc::new(MemoryStore::new());
        let fuse = fuse(&store, Fallback::Allow);
        store.set_unreachable(true);
        for _ in 0..5 {
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
        }
        assert_eq!(fuse.local().state(), State::Closed, "not the local circuit");
        store.set_unreachable(false);
        assert!(store.is_empty(), "nothing recorded");
    });
}

#[test]
fn reject_refuses_with_the_store_s_error() {
    block_on(async {
        let store = Arc::new(MemoryStore::new());
        let fuse = fuse(&store, Fallback::Reject);
        store.set_unreachable(true);
        let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
            panic!("not refused by the store");
        };
        assert!(err.is_unreachable());
        assert_eq!(err.store(), "memory");
        // Within the backoff the store is not asked again.
        store.set_unreachable(false);
        assert!(fuse.try_acquire().await.is_err());
        tokio::time::sleep(PAST_BACKOFF).await;
        assert!(fuse.try_acquire().await.is_ok());
    });
}

#[test]
fn a_verdict_the_store_cannot_take_is_an_error_and_marks_it_down() {
    block_on(async {
        let store = Arc::new(MemoryStore::new());
        let fuse = fuse(&store, Fallback::Local);
        let permit = fuse.try_acquire().await.unwrap();
        store.set_unreachable(true);
        let err = permit.failure().await.unwrap_err();
        assert!(err.is_unreachable());
        assert!(!fuse.store_reachable());
    });
}

/// A memory store whose next read's reply is held back (it was read while
/// the store answered) until the test lets it go.
#[derive(Debug)]
struct LateReply {
    inner: Arc<MemoryStore>,
    hold: Mutex<
        Option<(
            tokio::sync::oneshot::Sender<()>,
            tokio::sync::oneshot::Receiver<()>,
        )>,
    >,
}

#[async_trait::async_trait]
impl fuse_breaker::store::Store for LateReply {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn load(
        &self,
        key: &str,
    ) -> Result<fuse_breaker::store::Loaded, fuse_breaker::store::StoreError> {
        let reply = self.inner.load(key).await;
        let held = self.hold.lock().unwrap().take();
        if let Some((parked, release)) = held {
            let _ = parked.send(());
            let _ = release.await;
        }
        reply
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<fuse_breaker::store::Swap, fuse_breaker::store::StoreError> {
        self.inner.swap(key, expected, new, ttl, announce).await
    }

    async fn delete(
        &self,
        key: &str,
        announce: bool,
    ) -> Result<(), fuse_breaker::store::StoreError> {
        self.inner.delete(key, announce).await
    }
}

#[test]
fn a_reply_that_left_before_the_outage_does_not_end_it() {
    block_on(async {
        let memory = Arc::new(MemoryStore::new());
        let (parked_tx, parked) = tokio::sync::oneshot::channel();
        let (release, release_rx) = tokio::sync::oneshot::channel();
        let store = Arc::new(LateReply {
            inner: memory.clone(),
            hold: Mutex::new(Some((parked_tx, release_rx))),
        });
        let fuse = Arc::new(
            fuse_breaker::Fuse::builder("billing")
                .store(store)
                .config(config(2, 1))
                .fallback(Fallback::Reject)
                .build(),
        );
        let outages = Arc::new(Outages::default());
        fuse.on_transition(outages.clone());

        // A call reads the key while the store answers; its reply is late.
        let early = fuse.clone();
        let early = tokio::spawn(async move { early.try_acquire().await.is_ok() });
        parked.await.unwrap();
        // The store goes down, and a later call sees it.
        memory.set_unreachable(true);
        assert!(matches!(fuse.try_acquire().await, Err(Refusal::Store(_))));
        assert!(!fuse.store_reachable());
        // The early reply arrives: it was true when it left, not now.
        release.send(()).unwrap();
        assert!(early.await.unwrap(), "admitted by the reading it had");
        assert!(!fuse.store_reachable(), "an old reply ended the outage");
        assert!(matches!(fuse.try_acquire().await, Err(Refusal::Store(_))));
        assert_eq!(outages.0.lock().unwrap().len(), 1, "no return reported");

        // A round trip begun after the outage was seen ends it.
        memory.set_unreachable(false);
        tokio::time::sleep(PAST_BACKOFF).await;
        fuse.try_acquire()
            .await
            .expect("the store again")
            .success()
            .await
            .unwrap();
        assert!(fuse.store_reachable());
        let seen: Vec<bool> = outages
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(up, _)| *up)
            .collect();
        assert_eq!(seen, [false, true]);
    });
}

#[test]
fn a_store_that_cannot_list_says_so_and_is_no_outage() {
    use fuse_breaker::store::Store as _;
    block_on(async {
        let store = LateReply {
            inner: Arc::new(MemoryStore::new()),
            hold: Mutex::new(None),
        };
        let err = store.keys("fuse:", None, 10).await.unwrap_err();
        assert!(err.is_unsupported() && !err.is_unreachable(), "{err}");
        assert_eq!(err.to_string(), "store memory cannot list its keys");
    });
}

/// The builder's clock is the local fallback's: what it decides while
/// the store is down is on that clock's time.
#[test]
fn the_builder_s_clock_is_the_local_fallback_s() {
    block_on(async {
        let (clock, mock) = fuse_breaker::quanta::Clock::mock();
        mock.increment(Duration::from_secs(42));
        let store = Arc::new(MemoryStore::new());
        let fuse = fuse_breaker::Fuse::builder("billing")
            .clock(clock)
            .store(store.clone())
            .config(config(1, 1))
            .build();
        store.set_unreachable(true);
        let permit = fuse.try_acquire().await.expect("the local circuit admits");
        assert!(!permit.from_store());
        permit.failure().await.unwrap();
        assert_eq!(
            fuse.local().snapshot().opened_at,
            Some(Duration::from_secs(42)),
            "opened at the mock clock's time"
        );
    });
}

/// A registry's clock reaches its shared circuits' local fallbacks.
#[test]
fn a_shared_registry_s_clock_is_its_circuits_fallbacks() {
    block_on(async {
        let (clock, mock) = fuse_breaker::quanta::Clock::mock();
        mock.increment(Duration::from_secs(7));
        let store = Arc::new(MemoryStore::new());
        let registry = fuse_breaker::Registry::builder()
            .clock(clock)
            .defaults(config(1, 1))
            .store(store.clone())
            .build()
            .unwrap();
        let fuse = registry.get("billing");
        store.set_unreachable(true);
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        assert_eq!(
            fuse.local().snapshot().opened_at,
            Some(Duration::from_secs(7))
        );
    });
}
