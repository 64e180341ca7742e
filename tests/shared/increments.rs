//! SPEC §9 in a shared store: a closed verdict under `rate` is an
//! increment the store applies in one atomic step (a failure's or a slow
//! call's records its reporter and answers with what it wrote). On every
//! store the
//! machine has (each a store of its own, on its own clock): the store
//! applies exactly [`Increment::apply`] (the rule the model pins, see
//! `src/store/model/increment/tests.rs`) on random payloads, and many processes'
//! concurrent successes all count, one round trip each, with no
//! compare-and-set to lose.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{Counting, Increment, Incremented, MemoryStore, SharedFuse, Store};
use fuse_breaker::{Config, State, config::Policy};

use super::block_on;
use super::common::unique;

/// Every store to run on, unwrapped (the server's own clock): memory,
/// Redis, a Redis Cluster, SQLite and PostgreSQL where the build and the
/// machine have them.
pub(super) fn raw_stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    #[cfg_attr(not(any(feature = "redis", feature = "sql")), allow(unused_mut))]
    let mut stores: Vec<(&'static str, Arc<dyn Store>)> =
        vec![("memory", Arc::new(MemoryStore::new()))];
    #[cfg(feature = "redis")]
    if let Some(url) = super::redis_url() {
        let store = fuse_breaker::store::RedisStore::open(&url).expect("a Redis URL");
        stores.push(("redis", Arc::new(store)));
    }
    #[cfg(feature = "redis")]
    if let Some(url) = super::redis_cluster_url() {
        let store = fuse_breaker::store::RedisStore::open(&url).expect("a Redis Cluster URL");
        stores.push(("redis-cluster", Arc::new(store)));
    }
    #[cfg(feature = "sql")]
    {
        stores.push(("sqlite", Arc::new(super::sql_store(&super::sqlite_url()))));
        if let Some(url) = super::database_url() {
            stores.push(("postgres", Arc::new(super::sql_store(&url))));
        }
    }
    stores
}

/// A small deterministic generator (xorshift), so that a failure repeats.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A window's buckets as a payload holds them, around `current`: old ones,
/// live ones, now and then one ahead (a clock that went back), a duplicate,
/// counts near the bound; or, now and then, text that is not one.
fn body(random: &mut Random, current: u64) -> String {
    match random.below(12) {
        0 => return format!("[ [{current},1,0,0]]"),
        1 => return format!("[[0{current},1,0,0]]"),
        2 => return format!("[[{current},1,0]]"),
        3 => return format!("[[{current},-1,0,0]]"),
        4 => return format!("[[{},1,0,0]]", Increment::MAX + 1),
        _ => {}
    }
    let entries = (0..random.below(8))
        .map(|_| {
            let bucket = match random.below(10) {
                0 => current + random.below(3),
                1 => current.saturating_sub(100 + random.below(100)),
                _ => current.saturating_sub(random.below(70)),
            };
            let calls = if random.below(20) == 0 {
                Increment::MAX - random.below(3)
            } else {
                1 + random.below(50)
            };
            let failed = random.below(calls.min(50) + 1);
            format!("[{bucket},{calls},{failed},{}]", random.below(failed + 1))
        })
        .collect::<Vec<_>>();
    format!("[{}]", entries.join(","))
}

/// What follows a payload's buckets: mostly `}}}`, now and then the
/// window's reporters (SPEC §8's quorum: kept as they are by a success,
/// recorded by a failure; some of them at `now_us`, the store's time, or
/// a little before), or JSON that is neither (not incremented), or
/// reporters a failure does not apply to.
fn tail(random: &mut Random, now_us: u64) -> String {
    let recent = now_us.saturating_sub(random.below(3_000_000));
    match random.below(24) {
        0..=3 => r#"},"reporters":[[7,1700000000000000],[0,2]]}}"#.to_owned(),
        4 => r#"},"reporters":[]}}"#.to_owned(),
        5 => r#"},"reporters":[[7,"x"]]}}"#.to_owned(),
        6 => r#"},"other":[1]}}"#.to_owned(),
        7..=9 => format!(
            r#"}},"reporters":[[7,{recent}],[3,{}],[{},{now_us}]]}}}}"#,
            recent.saturating_sub(1),
            Increment::MAX
        ),
        10 => format!(r#"}},"reporters":[[7,{recent}],[7,{now_us}]]}}}}"#),
        11 => format!(r#"}},"reporters":[[7,{}]]}}}}"#, 1u64 << 53),
        12 => format!(r#"}},"reporters":[[{},{recent}]]}}}}"#, Increment::MAX + 1),
        _ => "}}}".to_owned(),
    }
}

#[test]
fn every_store_applies_an_increment_as_the_rule_says() {
    block_on(async {
        for (name, store) in raw_stores() {
            let mut random = Random(0x9e37_79b9_7f4a_7c15);
            // The tails from a sequence of their own, the payloads' as
            // they were.
            let mut tails = Random(0x2545_f491_4f6c_dd1d);
            let (mut applied, mut reported) = (0, 0);
            for case in 0..240 {
                let width_us =
                    [1, 1_000_000, 6_000_000, 7][usize::try_from(random.below(4)).unwrap_or(0)];
                let buckets = [1, 3, 10, 60][usize::try_from(random.below(4)).unwrap_or(0)];
                let calls = 1 + random.below(3);
                let mut increment = Increment::new(
                    format!("{{\"case\":{case},\"x\":{{\"y\":{{\"b\":").into_bytes(),
                    width_us,
                    buckets,
                    calls,
                    Duration::from_mins(1),
                );
                // Half of them a failure's or a slow call's, of one of the
                // reporters the tails name or another.
                if random.below(2) == 0 {
                    let id =
                        [7, 3, 11, Increment::MAX][usize::try_from(random.below(4)).unwrap_or(0)];
                    let (failed, slow) = (random.below(2), random.below(2));
                    let kept = 1 + u32::try_from(random.below(3)).unwrap_or(0);
                    increment = increment.reported(failed.max(1 - slow), slow, id, kept);
                }
                let key = unique(&format!("fuse:increment-{case}"));
                let now = store.load(&key).await.unwrap().now;
                let now_us = u64::try_from(now.as_micros()).unwrap();
                let before = format!(
                    "{}{}{}",
                    String::from_utf8_lossy(increment.prefix()),
                    body(&mut random, increment.bucket(now)),
                    tail(&mut tails, now_us)
                );
                let written = store
                    .swap(&key, None, before.as_bytes(), Duration::from_mins(1), false)
                    .await;
                match written {
                    Ok(_) => {}
                    // A `json` column (PostgreSQL) holds only JSON.
                    Err(_)
                        if name == "postgres"
                            && serde_json::from_str::<serde_json::Value>(&before).is_err() =>
                    {
                        continue;
                    }
                    Err(err) => panic!("{name}: {err}"),
                }
                let earliest = store.load(&key).await.unwrap().now;
                let done = store.increment(&key, &increment).await.unwrap();
                let after = store.load(&key).await.unwrap();
                if let Incremented::Wrote(wrote) = &done {
                    // What it answers is what it wrote, the rule at its time.
                    assert!(increment.answers(), "{name} case {case}: answered");
                    assert_eq!(wrote.payload, after.payload, "{name} case {case}");
                    let ruled = increment.apply(before.as_bytes(), wrote.now);
                    assert_eq!(
                        ruled.as_deref().map(String::from_utf8_lossy),
                        wrote.payload.as_deref().map(String::from_utf8_lossy),
                        "{name} case {case}: {before} at {:?}",
                        wrote.now
                    );
                } else if let Incremented::Unchanged(held) = &done {
                    // What it answers is what the key holds, unchanged.
                    assert!(increment.answers(), "{name} case {case}: answered");
                    assert_eq!(held.payload, after.payload, "{name} case {case}");
                } else if done.is_applied() {
                    assert!(!increment.answers(), "{name} case {case}: no answer");
                }
                let answered = matches!(done, Incremented::Wrote(_));
                reported += usize::from(answered);
                let done = done.is_applied();
                let latest = after.now;
                let after = after.payload.expect("the key is there");
                // The store's time of the increment is between the two
                // readings: the rule at one of them (or in a bucket between).
                let expected: Vec<Option<Vec<u8>>> = [earliest, latest]
                    .into_iter()
                    .map(|at| increment.apply(before.as_bytes(), at))
                    .collect();
                let text = String::from_utf8_lossy(&after);
                if done {
                    applied += 1;
                    // (An answer was checked at its own time above.)
                    let ruled = answered
                        || expected.iter().flatten().any(|e| *e == after)
                        || increment.bucket(earliest) != increment.bucket(latest);
                    assert!(
                        ruled,
                        "{name} case {case}: {before} became {text}, not {expected:?}"
                    );
                } else {
                    assert!(
                        expected.iter().any(Option::is_none),
                        "{name} case {case}: {before} not incremented, the rule applies"
                    );
                    assert_eq!(text, before, "{name} case {case}: changed all the same");
                }
                store.delete(&key, false).await.unwrap();
            }
            eprintln!("{name}: {applied} of 240 applied, {reported} answered");
            assert!(applied > 60, "{name}: only {applied} of 240 applied");
            assert!(reported > 15, "{name}: only {reported} failures applied");
        }
    });
}

/// The `rate` configuration of these tests: 50 %, over 20 calls.
fn rate() -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_rate(50)
        .minimum_calls(20)
        .build()
        .expect("a valid configuration")
}

#[test]
fn two_processes_successes_all_count_one_round_trip_each() {
    block_on(async {
        for (name, store) in raw_stores() {
            let key = unique("commuting");
            // Two processes: a store (a connection) of their own each, on
            // one key.
            let here = Arc::new(Counting::new(store.clone()));
            let there = Arc::new(Counting::new(store.clone()));
            let a = fuse_breaker::Fuse::builder(&key)
                .store(here.clone())
                .config(rate())
                .build();
            let b = fuse_breaker::Fuse::builder(&key)
                .store(there.clone())
                .config(rate())
                .build();
            // The key's first success makes it (a compare-and-set).
            a.try_acquire().await.unwrap().success().await.unwrap();
            let (before_a, before_b) = (here.round_trips(), there.round_trips());
            let per_task = 10;
            let tasks = 16;
            futures::future::join(succeed(&a, tasks, per_task), succeed(&b, tasks, per_task)).await;
            let (here, there) = (
                here.round_trips() - before_a,
                there.round_trips() - before_b,
            );
            eprintln!("{name}: {here} and {there} round trips");
            let trips = here + there;
            assert_eq!(trips, 2 * 2 * (tasks * per_task) as u64, "{name}");
            let snapshot = a.snapshot().await.unwrap();
            let total = 1 + 2 * tasks * per_task;
            assert_eq!(
                snapshot.calls, total as u64,
                "{name}: every success counted"
            );
            assert_eq!(
                (snapshot.failed, snapshot.state),
                (0, State::Closed),
                "{name}"
            );
            // An admission (a read) and an increment per call: no call
            // read again or retried a compare-and-set.
            store.delete(&format!("fuse:{key}"), false).await.unwrap();
        }
    });
}

/// `tasks` tasks at once, each `per_task` successes one after the other.
async fn succeed(fuse: &SharedFuse, tasks: usize, per_task: usize) {
    futures::future::join_all((0..tasks).map(|_| async move {
        for _ in 0..per_task {
            fuse.try_acquire().await.unwrap().success().await.unwrap();
        }
    }))
    .await;
}

#[test]
fn the_first_successes_on_a_new_key_do_not_race_the_increments() {
    block_on(async {
        for (name, store) in raw_stores() {
            let key = unique("first");
            let counted = Arc::new(Counting::new(store.clone()));
            let fuse = fuse_breaker::Fuse::builder(&key)
                .store(counted.clone())
                .config(rate())
                .build();
            // 64 permits granted while the key is absent (no generation
            // yet); the first success writes the key; then 64 permits of
            // the named key, and all the successes at once: the unnamed
            // ones find the key named and increment it too, rather than
            // race the increments with compare-and-sets.
            let mut unnamed = futures::future::join_all((0..64).map(|_| fuse.try_acquire())).await;
            unnamed.pop().unwrap().unwrap().success().await.unwrap();
            let named = futures::future::join_all((0..64).map(|_| fuse.try_acquire())).await;
            let before = counted.round_trips();
            let successes = unnamed
                .into_iter()
                .chain(named)
                .map(|permit| permit.unwrap().success());
            futures::future::join_all(successes).await;
            let trips = counted.round_trips() - before;
            // A read and an increment for each unnamed one, an increment
            // for each named one.
            assert_eq!(trips, 2 * 63 + 64, "{name}");
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.calls, 128, "{name}: every success counted");
            store.delete(&format!("fuse:{key}"), false).await.unwrap();
        }
    });
}
