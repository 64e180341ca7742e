//! A store clock that steps back (SPEC §9's `rate` window kept in a
//! store): a window written on a clock that then went back, by less than
//! the window or by more, is read, incremented and written on every store
//! without a payload its readers refuse. The window is filled through a
//! view of the store whose clock is ahead of the server's by the step
//! (the times the server showed before it went back); then circuits on
//! the server's own clock take calls, successes as increments.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuse_breaker::config::Fallback;
use fuse_breaker::store::{Loaded, Store, StoreError, Swap};
use fuse_breaker::{Config, config::Policy};

use super::block_on;
use super::common::unique;
use super::increments::raw_stores;

/// A store seen on a clock the test sets (the server's clock before it
/// stepped back); no increment, so every verdict is the model's step.
#[derive(Debug)]
struct Before {
    inner: Arc<dyn Store>,
    now: Mutex<Duration>,
}

impl Before {
    fn set(&self, now: Duration) {
        *self.now.lock().unwrap() = now;
    }

    fn shifted(&self, mut loaded: Loaded) -> Loaded {
        loaded.now = *self.now.lock().unwrap();
        loaded
    }
}

#[async_trait::async_trait]
impl Store for Before {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        let loaded = self.inner.load(key).await?;
        Ok(self.shifted(loaded))
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        match self.inner.swap(key, expected, new, ttl, announce).await? {
            Swap::Written => Ok(Swap::Written),
            Swap::Changed(loaded) => Ok(Swap::Changed(self.shifted(loaded))),
        }
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        self.inner.delete(key, announce).await
    }
}

/// `rate` over a 6 s window of `buckets` buckets, which never opens (the
/// window is what is tested, not a transition).
fn rate(buckets: u32) -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_window(Duration::from_secs(6))
        .window_buckets(buckets)
        .minimum_calls(100_000)
        .failure_rate(100)
        .build()
        .expect("a valid configuration")
}

#[test]
fn a_store_clock_that_steps_back_leaves_every_window_readable() {
    block_on(async {
        for (name, store) in raw_stores() {
            for buckets in [10, 60] {
                for step in [
                    Duration::from_millis(300),
                    Duration::from_secs(10),
                    Duration::from_secs(59),
                ] {
                    let refused = stepped_back(&store, buckets, step).await;
                    eprintln!("{name}: {buckets} buckets, back {step:?}: {refused} refused");
                    assert_eq!(
                        refused, 0,
                        "{name}: {buckets} buckets, the clock back {step:?}: {refused} of 100 calls refused"
                    );
                }
            }
        }
    });
}

/// Fills every bucket of a window on `store`'s clock as it was `step`
/// ahead of now, then takes 100 calls (one in ten a failure, the first a
/// success: an increment) on the store's clock: how many were refused.
async fn stepped_back(store: &Arc<dyn Store>, buckets: u32, step: Duration) -> usize {
    let config = rate(buckets);
    let name = unique(&format!("stepped-back-{buckets}-{}", step.as_millis()));
    let before = Arc::new(Before {
        inner: store.clone(),
        now: Mutex::new(Duration::ZERO),
    });
    let then = store.load("fuse:clock").await.unwrap().now + step;
    let width = Duration::from_secs(6) / buckets;
    let filler = fuse_breaker::Fuse::builder(&name)
        .store(before.clone())
        .config(config.clone())
        .build();
    for i in 0..buckets {
        before.set(then.saturating_sub(width * (buckets - 1 - i)));
        let permit = filler.try_acquire().await.unwrap();
        if i % 3 == 0 {
            permit.failure().await.unwrap();
        } else {
            permit.success().await.unwrap();
        }
    }
    let fuse = fuse_breaker::Fuse::builder(&name)
        .store(store.clone())
        .config(config)
        .fallback(Fallback::Allow)
        .build();
    let mut refused = 0;
    for call in 0..100 {
        let Ok(permit) = fuse.try_acquire().await else {
            refused += 1;
            continue;
        };
        let verdict = if call % 10 == 9 {
            permit.failure().await
        } else {
            permit.success().await
        };
        refused += usize::from(verdict.is_err());
    }
    store.delete(&format!("fuse:{name}"), false).await.unwrap();
    refused
}
