//! Many writers on one key (SPEC §8 "Atomic steps"): circuits of several
//! "processes" (one `SharedFuse` each) over one store, many tasks each, on
//! a multi-threaded runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fuse_breaker::store::SharedFuse;
use fuse_breaker::{State, events::Reason, events::Transition};

use super::{SteppedStore, circuit, config, runtime, secs, stores};

const PROCESSES: usize = 4;
const TASKS: usize = 16;

fn fleet(store: &Arc<dyn SteppedStore>, threshold: u32, probes: u32) -> Vec<Arc<SharedFuse>> {
    (0..PROCESSES)
        .map(|_| Arc::new(circuit(store, "billing", &config(threshold, probes))))
        .collect()
}

/// Runs `task(fuse)` `TASKS` times per process at once.
async fn all_at_once<F, Fut>(fleet: &[Arc<SharedFuse>], task: F)
where
    F: Fn(Arc<SharedFuse>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut handles = Vec::new();
    for fuse in fleet {
        for _ in 0..TASKS {
            handles.push(tokio::spawn(task(fuse.clone())));
        }
    }
    for handle in handles {
        handle.await.expect("a task");
    }
}

#[test]
fn no_counted_failure_is_lost_and_the_threshold_opens_exactly() {
    runtime().block_on(async {
        for (name, store) in stores() {
            let total = PROCESSES * TASKS;
            let threshold = u32::try_from(total + 1).unwrap();
            let fleet = fleet(&store, threshold, 1);
            let opened = Arc::new(AtomicUsize::new(0));
            for fuse in &fleet {
                let opened = opened.clone();
                fuse.on_transition(move |t: &Transition| {
                    if t.reason == Reason::ThresholdReached {
                        opened.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            all_at_once(&fleet, |fuse| async move {
                fuse.try_acquire().await.unwrap().failure().await.unwrap();
            })
            .await;
            let snapshot = fleet[0].snapshot().await.unwrap();
            assert_eq!(
                snapshot.state,
                State::Closed,
                "{name}: one short of the threshold"
            );
            assert_eq!(
                snapshot.failures.len(),
                total,
                "{name}: every failure counted"
            );
            fleet[1]
                .try_acquire()
                .await
                .unwrap()
                .failure()
                .await
                .unwrap();
            assert_eq!(fleet[2].state().await.unwrap(), State::Open, "{name}");
            assert_eq!(
                opened.load(Ordering::Relaxed),
                1,
                "{name}: one process won it"
            );
        }
    });
}

#[test]
fn the_probe_limit_holds_across_processes() {
    runtime().block_on(async {
        for (name, store) in stores() {
            let probes = 3;
            let fleet = fleet(&store, 1, probes);
            fleet[0].force_open().await.unwrap();
            store.advance(secs(30));
            let running = Arc::new(AtomicUsize::new(0));
            let most = Arc::new(AtomicUsize::new(0));
            let granted = Arc::new(AtomicUsize::new(0));
            let cooled = Arc::new(AtomicUsize::new(0));
            for fuse in &fleet {
                let cooled = cooled.clone();
                fuse.on_transition(move |t: &Transition| {
                    if t.reason == Reason::CooldownEnded {
                        cooled.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            all_at_once(&fleet, |fuse| {
                let (running, most, granted) = (running.clone(), most.clone(), granted.clone());
                async move {
                    for _ in 0..20 {
                        let Ok(permit) = fuse.try_acquire().await else {
                            tokio::task::yield_now().await;
                            continue;
                        };
                        assert!(permit.is_probe());
                        granted.fetch_add(1, Ordering::Relaxed);
                        // The protected dependency counts the probes at once.
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        // Ignored: the circuit stays half-open, the slot frees.
                        permit.ignore().await.unwrap();
                    }
                }
            })
            .await;
            let most = most.load(Ordering::SeqCst);
            assert!(most <= probes as usize, "{name}: {most} probes at once");
            assert!(granted.load(Ordering::Relaxed) > 0, "{name}");
            assert_eq!(
                cooled.load(Ordering::Relaxed),
                1,
                "{name}: one move to half-open"
            );
            let snapshot = fleet[0].snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::HalfOpen, "{name}");
            assert_eq!(
                snapshot.half_open_inflight, 0,
                "{name}: every slot came back"
            );
        }
    });
}

/// One process's writers on one key never lose a race to each other: a
/// writer that waited for the write turn decides on what the writer before
/// it left, so each of many failures at once costs exactly its three round
/// trips (the admission's read, the verdict's read and its write).
#[test]
fn one_process_s_writers_cost_no_round_trip_of_each_other() {
    const FAILURES: u64 = 48;
    runtime().block_on(async {
        for (name, store) in stores() {
            let trips = Arc::new(fuse_breaker::store::Counting::new(store.clone().as_store()));
            let fuse = Arc::new(
                fuse_breaker::Fuse::builder("billing")
                    .store(trips.clone())
                    .config(config(1000, 1))
                    .build(),
            );
            let handles: Vec<_> = (0..FAILURES)
                .map(|_| {
                    let fuse = fuse.clone();
                    tokio::spawn(async move {
                        fuse.try_acquire().await.unwrap().failure().await.unwrap();
                    })
                })
                .collect();
            for handle in handles {
                handle.await.expect("a task");
            }
            let held = fuse.snapshot().await.unwrap().failures.len();
            assert_eq!(held as u64, FAILURES, "{name}: every failure held");
            // The snapshot's own read is the last round trip.
            assert_eq!(trips.round_trips(), 3 * FAILURES + 1, "{name}");
        }
    });
}
