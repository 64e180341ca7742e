//! A server stopped and restarted under load (SPEC §8): no panic, the
//! fallback decides and the outage is seen, the store is used again when it
//! answers, and the circuit's payload is readable after.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::config::Fallback;
use fuse_breaker::store::Store;
use fuse_breaker::{Config, State, Verdict};

/// Eight tasks of failures and successes on the circuit `restart` in
/// `store`, while `run(false)` stops its server and, 700 ms later,
/// `run(true)` starts it again.
pub(super) async fn under_load(store: Arc<dyn Store>, mut run: impl FnMut(bool)) {
    let config = Config::builder()
        .failure_threshold(1000)
        .open_duration(Duration::from_millis(300))
        .build()
        .expect("a valid configuration");
    let fuse = Arc::new(
        fuse_breaker::Fuse::builder("restart")
            .store(store.clone())
            .config(config)
            .fallback(Fallback::Local)
            .build(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (local, from_store, down) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let mut load = Vec::new();
    for _ in 0..8 {
        let (fuse, stop) = (fuse.clone(), stop.clone());
        let (local, from_store, down) = (local.clone(), from_store.clone(), down.clone());
        load.push(tokio::spawn(async move {
            // A failure then a success, again and again: writes that
            // never open the circuit (each success clears).
            let mut fail = false;
            while !stop.load(Ordering::Relaxed) {
                fail = !fail;
                match fuse.try_acquire().await {
                    Ok(permit) => {
                        let counter = if permit.from_store() {
                            &from_store
                        } else {
                            &local
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        let verdict = if fail {
                            Verdict::Failure
                        } else {
                            Verdict::Success
                        };
                        if permit.conclude(verdict).await.is_err() {
                            down.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(refusal) => panic!("refused: {refusal}"),
                }
                if !fuse.store_reachable() {
                    down.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    run(false);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let local_during = local.load(Ordering::Relaxed);
    run(true);
    // Back to the store within two of the longest backoffs (the try
    // that finds the connection being remade fails, the next succeeds).
    let started = Instant::now();
    let before = from_store.load(Ordering::Relaxed);
    while from_store.load(Ordering::Relaxed) < before + 20 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the store was not used again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.expect("no task panicked");
    }
    assert!(
        local_during > 0,
        "the local circuit decided while the server was down"
    );
    assert!(down.load(Ordering::Relaxed) > 0, "the outage was seen");
    assert!(fuse.store_reachable());
    // The key is readable: no corrupt payload was left.
    let snapshot = fuse.snapshot().await.expect("a readable circuit");
    assert_eq!(snapshot.state, State::Closed);
    assert!(
        snapshot.failures.len() <= 8,
        "at most one failure per task: {snapshot:?}"
    );
    assert!(store.load("fuse:restart").await.is_ok());
}
