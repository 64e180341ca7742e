use std::sync::Arc;
use std::time::Duration;

use futures::executor::block_on;

use super::*;
use crate::store::{Loaded, MemoryStore};

const KEY: &str = "fuse:billing";

fn config() -> Config {
    Config::builder()
        .failure_window(Duration::from_secs(10))
        .window_buckets(10)
        .minimum_calls(1)
        .throttle_k(2.0)
        .build()
        .unwrap()
}

fn tag(epoch: u64) -> Tag {
    Tag {
        generation: 7,
        epoch,
    }
}

fn asked(requests: u64, accepts: u64) -> Asked {
    Asked { requests, accepts }
}

fn sender(store: Arc<dyn Store>) -> Sender {
    Sender {
        store,
        key: asked::key(KEY),
        live: Arc::new(Live::new(config(), None)),
    }
}

/// A store that applies no increment (the trait's default): every
/// sending is a compare-and-set.
#[derive(Debug, Default)]
struct NoIncrement(MemoryStore);

#[async_trait::async_trait]
impl Store for NoIncrement {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
        self.0.load(key).await
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError> {
        self.0.swap(key, expected, new, ttl, announce).await
    }

    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
        self.0.delete(key, announce).await
    }
}

fn stores() -> [Arc<dyn Store>; 2] {
    [
        Arc::new(MemoryStore::new()),
        Arc::new(NoIncrement::default()),
    ]
}

#[test]
fn a_first_sending_writes_the_record_and_later_ones_add_to_it() {
    for store in stores() {
        let sender = sender(store.clone());
        let sent = |counts| block_on(sender.send(sender.live.get(), tag(3), counts)).unwrap();
        assert_eq!(sent(asked(5, 2)), Some(asked(5, 2)), "{store:?}");
        assert_eq!(sent(asked(3, 3)), Some(asked(8, 5)), "{store:?}");
        // Nothing to send: the window is read again.
        assert_eq!(sent(Asked::default()), Some(asked(8, 5)), "{store:?}");
        let record = block_on(store.load(&asked::key(KEY))).unwrap();
        assert!(record.payload.unwrap().starts_with(b"{\"fuse_throttle\":"));
    }
}

#[test]
fn a_later_epoch_replaces_the_record_and_an_earlier_one_s_counts_are_dropped() {
    for store in stores() {
        let sender = sender(store.clone());
        let sent =
            |epoch, counts| block_on(sender.send(sender.live.get(), tag(epoch), counts)).unwrap();
        assert_eq!(sent(3, asked(5, 2)), Some(asked(5, 2)));
        assert_eq!(sent(4, asked(1, 1)), Some(asked(1, 1)), "a new window");
        assert_eq!(sent(3, asked(7, 0)), None, "epoch 3's window is over");
        assert_eq!(sent(4, Asked::default()), Some(asked(1, 1)), "{store:?}");
    }
}

#[test]
fn a_record_this_crate_did_not_write_is_replaced() {
    let store = Arc::new(MemoryStore::new());
    let sender = sender(store.clone());
    for bad in [
        &b"not a record"[..],
        b"{\"fuse_throttle\":{\"generation\":7}}",
    ] {
        store.put(&asked::key(KEY), bad, Duration::from_mins(1));
        let sent = block_on(sender.send(sender.live.get(), tag(3), asked(2, 1))).unwrap();
        assert_eq!(sent, Some(asked(2, 1)));
    }
}

#[test]
fn the_share_in_use_is_what_was_read_last_and_sheds_nothing_once_a_reading_fails() {
    let config = config();
    let throttle = FleetThrottle::default();
    assert!(!throttle.shedding());
    assert_eq!(throttle.take(), None, "nothing counted, nothing in use");
    for accepted in [false, false, true] {
        throttle.ask(tag(3), accepted);
    }
    assert_eq!(throttle.take(), Some((tag(3), asked(3, 1))));
    throttle.keep(&config, tag(3), Some(asked(100, 10)));
    assert!(throttle.shedding());
    let share = throttle.share().unwrap();
    assert_eq!(share.tag, tag(3));
    assert_eq!(
        share.shed,
        crate::grade::throttle::shed(&config, asked(100, 10))
    );
    // A shed call is a request of the epoch in use.
    throttle.refused();
    assert_eq!(throttle.take(), Some((tag(3), asked(1, 0))));
    // Nothing counted since: the epoch in use is read again.
    assert_eq!(throttle.take(), Some((tag(3), Asked::default())));
    // A later epoch's count drops an earlier one's, not the reverse.
    throttle.ask(tag(3), true);
    throttle.ask(tag(4), true);
    throttle.ask(tag(3), true);
    assert_eq!(throttle.take(), Some((tag(4), asked(1, 1))));
    // A permit of no generation yet counts in the key's first epoch,
    // whatever generation names it, before or after.
    let unnamed = Tag {
        generation: 0,
        epoch: 0,
    };
    throttle.ask(unnamed, true);
    throttle.ask(tag(0), false);
    throttle.ask(unnamed, true);
    assert_eq!(throttle.take(), Some((tag(0), asked(3, 2))));
    // A window fully accepted sheds nothing; a failed reading neither.
    throttle.keep(&config, tag(4), Some(asked(100, 100)));
    assert!(!throttle.shedding());
    assert_eq!(throttle.share(), None);
    throttle.keep(&config, tag(4), Some(asked(100, 0)));
    assert!(throttle.shedding());
    throttle.keep(&config, tag(4), None);
    assert!(!throttle.shedding());
    assert_eq!(throttle.share(), None);
}

#[test]
fn the_interval_is_half_a_bucket_from_5_ms_to_a_second() {
    let of = |window: u64, buckets: u32| {
        let config = Config::builder()
            .failure_window(Duration::from_millis(window))
            .window_buckets(buckets)
            .build()
            .unwrap();
        interval(&config)
    };
    assert_eq!(of(2_000, 10), Duration::from_millis(100));
    assert_eq!(of(60_000, 10), Duration::from_secs(1));
    assert_eq!(of(20, 10), Duration::from_millis(5));
}
