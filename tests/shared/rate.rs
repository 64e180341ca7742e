//! SPEC §9 `rate` through a store, on every store with the test's clock:
//! the timeline, the rules (a success never clears the window, buckets
//! leave it, stale verdicts count nothing, slow calls), many writers at
//! once, and cached mode's batches. (These stores take the test's clock,
//! so successes take the compare-and-set step here; the increments that
//! commute are tested on the servers' own clocks in `increments` and
//! `fleet`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fuse_breaker::store::{Counting, SharedFuse, Store};
use fuse_breaker::{Config, State, config::Policy, events::Reason, events::Transition};

use super::{SteppedStore, block_on, circuit, runtime, secs, stores};

/// `rate` at `percent` over at least `minimum` calls; window 60 s in 10
/// buckets, open 30 s, 2 probes.
fn rate(percent: u32, minimum: u32) -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_rate(percent)
        .minimum_calls(minimum)
        .build()
        .expect("a valid configuration")
}

async fn call(fuse: &SharedFuse, fail: bool) {
    let permit = fuse.try_acquire().await.unwrap();
    if fail {
        permit.failure().await.unwrap();
    } else {
        permit.success().await.unwrap();
    }
}

#[test]
fn the_rate_timeline_through_a_store() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &rate(50, 4));
            for fail in [false, true, false] {
                call(&fuse, fail).await;
            }
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!((snapshot.calls, snapshot.failed), (3, 1), "{name}");
            assert!(snapshot.failures.is_empty(), "{name}: no failure list");
            assert_eq!(snapshot.state, State::Closed, "{name}: under the minimum");
            call(&fuse, true).await;
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}: 2 of 4");
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.calls, 0, "{name}: opening empties the window");
            store.advance(secs(29));
            assert!(fuse.try_acquire().await.is_err(), "{name}: cooling down");
            store.advance(secs(1));
            let first = fuse.try_acquire().await.unwrap();
            let second = fuse.try_acquire().await.unwrap();
            assert!(first.is_probe() && second.is_probe(), "{name}");
            assert!(fuse.try_acquire().await.is_err(), "{name}: two probes");
            first.success().await.unwrap();
            second.success().await.unwrap();
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::Closed, "{name}");
            assert_eq!(snapshot.calls, 0, "{name}: closes with an empty window");
            // A failed probe opens it again.
            fuse.force_open().await.unwrap();
            store.advance(secs(30));
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn a_success_never_clears_the_window_and_buckets_leave_it() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &rate(60, 3));
            call(&fuse, true).await;
            call(&fuse, false).await;
            call(&fuse, false).await;
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!((snapshot.calls, snapshot.failed), (3, 1), "{name}");
            // 6 s buckets: 54 s later the first bucket is still in the
            // window, 60 s later it has left.
            store.advance(secs(54));
            assert_eq!(fuse.snapshot().await.unwrap().calls, 3, "{name}");
            store.advance(secs(6));
            assert_eq!(fuse.snapshot().await.unwrap().calls, 0, "{name}");
            // A failure then counts alone: 1 call, under the minimum.
            call(&fuse, true).await;
            call(&fuse, true).await;
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
            call(&fuse, true).await;
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");
        }
    });
}

#[test]
fn a_verdict_from_another_epoch_counts_nothing_under_rate() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &rate(50, 1));
            let early = fuse.try_acquire().await.unwrap();
            let earlier = fuse.try_acquire().await.unwrap();
            fuse.force_open().await.unwrap();
            fuse.force_closed().await.unwrap();
            early.failure().await.unwrap();
            earlier.success().await.unwrap();
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(
                (snapshot.state, snapshot.calls),
                (State::Closed, 0),
                "{name}"
            );
        }
    });
}

#[test]
fn a_slow_call_counts_as_slow_and_a_slow_probe_fails() {
    let slow = rate(100, 2)
        .to_builder()
        .slow_call_duration(Duration::from_millis(40))
        .slow_call_rate(50)
        .build()
        .unwrap();
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &slow);
            call(&fuse, false).await;
            let permit = fuse.try_acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            permit.success().await.unwrap();
            // 1 slow of 2 calls: 50 %, evaluated on the slow call.
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");
            store.advance(secs(30));
            let probe = fuse.try_acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            probe.success().await.unwrap();
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::Open, "{name}: a slow probe fails");
        }
    });
    // Without a slow_call_duration nothing is slow.
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &rate(100, 1));
            let permit = fuse.try_acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            permit.success().await.unwrap();
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!((snapshot.calls, snapshot.slow), (1, 0), "{name}");
        }
    });
}

#[test]
fn many_writers_lose_no_call_and_the_rate_opens_once() {
    runtime().block_on(async {
        for (name, store) in stores() {
            let processes = 4;
            let tasks = 16;
            let total = u32::try_from(processes * tasks).unwrap();
            // Every call fails; the minimum is one more than all of them.
            let config = rate(100, total + 1);
            let fleet: Vec<Arc<SharedFuse>> = (0..processes)
                .map(|_| Arc::new(circuit(&store, "billing", &config)))
                .collect();
            let opened = Arc::new(AtomicUsize::new(0));
            for fuse in &fleet {
                let opened = opened.clone();
                fuse.on_transition(move |t: &Transition| {
                    if t.reason == Reason::ThresholdReached {
                        opened.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            let mut handles = Vec::new();
            for fuse in &fleet {
                for at in 0..tasks {
                    let fuse = fuse.clone();
                    handles.push(tokio::spawn(async move { call(&fuse, at % 2 == 0).await }));
                }
            }
            for handle in handles {
                handle.await.expect("a task");
            }
            let snapshot = fleet[0].snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::Closed, "{name}: under the minimum");
            assert_eq!(
                snapshot.calls,
                u64::from(total),
                "{name}: every call counted"
            );
            assert_eq!(snapshot.failed, u64::from(total / 2), "{name}");
            // The minimum reached: 33 failed of 65 is not 100 %.
            call(&fleet[1], true).await;
            assert_eq!(fleet[2].state().await.unwrap(), State::Closed, "{name}");
            assert_eq!(opened.load(Ordering::Relaxed), 0, "{name}");
            // 34 of 66 is 50 %: a circuit at 50 % opens on that failure.
            let half = rate(50, total + 1);
            let fuse = circuit(&store, "billing", &half);
            call(&fuse, true).await;
            assert_eq!(fleet[3].state().await.unwrap(), State::Open, "{name}");
        }
    });
}

fn cached(
    store: &Arc<dyn SteppedStore>,
    config: &Config,
    staleness: Duration,
) -> (SharedFuse, Arc<Counting<Arc<dyn Store>>>) {
    let trips = Arc::new(Counting::new(store.clone().as_store()));
    let fuse = fuse_breaker::Fuse::builder("billing")
        .store(trips.clone())
        .config(config.clone())
        .cached(staleness)
        .build();
    (fuse, trips)
}

#[test]
fn cached_mode_batches_successes_and_sends_failures_at_once() {
    block_on(async {
        for (name, store) in stores() {
            let (fuse, trips) = cached(&store, &rate(50, 10), Duration::from_mins(1));
            call(&fuse, true).await;
            let after_failure = trips.round_trips();
            // Closed with a failure in the window: still no round trip for
            // a success under `rate` (it clears nothing).
            for _ in 0..100 {
                call(&fuse, false).await;
            }
            assert_eq!(trips.round_trips(), after_failure, "{name}: none since");
            assert_eq!(fuse.unsent(), 100, "{name}");
            let seen = fuse.snapshot().await.unwrap();
            assert_eq!((seen.calls, seen.failed), (1, 1), "{name}: not sent yet");
            // A failure goes at once, and the batch with it.
            call(&fuse, true).await;
            assert_eq!(fuse.unsent(), 0, "{name}");
            let sent = fuse.snapshot().await.unwrap();
            assert_eq!((sent.calls, sent.failed), (102, 2), "{name}");
        }
    });
}

#[test]
fn cached_mode_sends_its_batch_at_least_once_per_staleness() {
    block_on(async {
        for (name, store) in stores() {
            let staleness = Duration::from_millis(100);
            let (fuse, trips) = cached(&store, &rate(50, 10), staleness);
            call(&fuse, false).await;
            let first = trips.round_trips();
            for _ in 0..10 {
                call(&fuse, false).await;
            }
            assert_eq!(trips.round_trips(), first, "{name}: batched");
            tokio::time::sleep(staleness + Duration::from_millis(20)).await;
            // The first admission after the staleness reads the key again
            // and sends the batch with that step, unless the circuit's task
            // took it first: then it waits (as unsent) until that task's
            // step is over.
            call(&fuse, false).await;
            assert!(trips.round_trips() > first, "{name}");
            let waited = std::time::Instant::now();
            while fuse.unsent() > 1 {
                assert!(
                    waited.elapsed() < Duration::from_secs(10),
                    "{name}: never sent"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.calls, 11, "{name}: the batch was sent");
            assert_eq!(fuse.unsent(), 1, "{name}: the last success waits");
        }
    });
}

#[test]
fn cached_mode_sends_a_slow_call_at_once() {
    let slow = rate(100, 1)
        .to_builder()
        .slow_call_duration(Duration::from_millis(30))
        .slow_call_rate(100)
        .build()
        .unwrap();
    block_on(async {
        for (name, store) in stores() {
            let (fuse, _) = cached(&store, &slow, Duration::from_mins(1));
            call(&fuse, false).await;
            assert_eq!(fuse.unsent(), 1, "{name}");
            let permit = fuse.try_acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(40)).await;
            permit.success().await.unwrap();
            // 1 slow of 2: under 100 %, but sent (with the batch).
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!((snapshot.calls, snapshot.slow), (2, 1), "{name}");
            // The store keeps slow calls, not their verdicts.
            assert_eq!(snapshot.slow_failed, None, "{name}");
            assert_eq!(fuse.unsent(), 0, "{name}");
        }
    });
}

#[test]
fn a_batch_survives_another_process_naming_the_key() {
    block_on(async {
        // The memory store announces the key's first write to the other
        // circuit's mirror, whose permits then name the generation.
        let store: Arc<dyn Store> = Arc::new(fuse_breaker::store::MemoryStore::frozen());
        let build = || {
            fuse_breaker::Fuse::builder("billing")
                .store(store.clone())
                .config(rate(50, 100))
                .cached(Duration::from_mins(1))
                .build()
        };
        let (here, there) = (build(), build());
        call(&here, false).await;
        call(&here, false).await;
        assert_eq!(here.unsent(), 2, "batched while the key is absent");
        call(&there, true).await;
        call(&here, false).await;
        call(&here, true).await;
        let snapshot = here.snapshot().await.unwrap();
        assert_eq!((snapshot.calls, snapshot.failed), (5, 2));
    });
}

#[cfg(any(feature = "redis", feature = "sql"))]
#[test]
fn cached_mode_sends_its_batch_when_no_call_comes() {
    block_on(async {
        for (name, store) in stores() {
            let staleness = Duration::from_millis(50);
            let (fuse, _) = cached(&store, &rate(50, 10), staleness);
            for _ in 0..5 {
                call(&fuse, false).await;
            }
            assert_eq!(fuse.unsent(), 5, "{name}");
            // No call: the circuit's own task sends the batch.
            tokio::time::sleep(staleness * 3).await;
            assert_eq!(fuse.unsent(), 0, "{name}");
            assert_eq!(fuse.snapshot().await.unwrap().calls, 5, "{name}");
        }
    });
}
