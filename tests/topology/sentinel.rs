//! A Sentinel failover under a busy circuit, followed and told, and the
//! mirrors of cached circuits following it.

use super::*;

#[test]
fn a_sentinel_failover_under_load_is_followed_and_told() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(url) = server("FUSE_TEST_REDIS_SENTINEL_URL", "Redis Sentinel") else {
        return;
    };
    runtime().block_on(async {
        let sentinel = RedisStore::open(&url).unwrap();
        let store: Arc<dyn Store> = Arc::new(sentinel.clone());
        let seen = Arc::new(Seen::default());
        let name = unique("sentinel");
        let fuse = busy(&store, &name, &seen);
        // A cached circuit here, and another process's strict one.
        let here = fuse_breaker::Fuse::builder(&name)
            .store(store.clone())
            .config(fuse.config().clone())
            .cached(Duration::from_mins(1))
            .build();
        let elsewhere: Arc<dyn Store> = Arc::new(RedisStore::open(&url).unwrap());
        let there = fuse_breaker::Fuse::builder(&name)
            .store(elsewhere.clone())
            .config(fuse.config().clone())
            .build();
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = load(&fuse, &seen, &stop, None);
        writes_again(&seen, 50, Duration::from_secs(10)).await;
        let before = store
            .changes()
            .unwrap()
            .primary()
            .expect("the primary was found");
        assert_eq!(store.changes().unwrap().failovers(), 0);

        let port: u16 = url
            .trim_start_matches("redis+sentinel://")
            .split([',', '/'])
            .next()
            .and_then(|node| node.rsplit(':').next()?.parse().ok())
            .unwrap();
        let _: () = redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg("fuse")
            .query_async(&mut raw(port).await)
            .await
            .unwrap();
        let asked = Instant::now();
        while store.changes().unwrap().failovers() == 0 {
            assert!(
                asked.elapsed() < Duration::from_secs(20),
                "the failover was never found"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let found = asked.elapsed();
        writes_again(&seen, 50, Duration::from_secs(10)).await;
        stop.store(true, Ordering::Relaxed);
        for task in tasks {
            task.await.expect("no task panicked");
        }
        let after = store.changes().unwrap().primary().unwrap();
        assert_ne!(after, before, "the primary moved");
        assert_eq!(
            *seen.failovers.lock().unwrap(),
            std::slice::from_ref(&after),
            "told once"
        );
        assert!(fuse.store_reachable());

        // The cached circuit hears the new primary's announcements.
        here.try_acquire().await.unwrap().success().await.unwrap();
        there.force_open().await.unwrap();
        let started = Instant::now();
        while here.try_acquire().await.is_ok() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the opening never reached the mirror"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        println!(
            "sentinel: SENTINEL FAILOVER moved the primary from {before} to {after}; found \
             {found:.1?} after it was asked, {} calls decided locally meanwhile, {} verdicts \
             unacknowledged; the failover told once; the cached circuit hears the new primary",
            seen.local.load(Ordering::Relaxed),
            seen.unacknowledged.load(Ordering::Relaxed),
        );
        // The old primary replicates from the new one (the sentinels turn
        // it into a replica seconds later): the next run can fail over
        // back.
        let old: u16 = before.rsplit(':').next().unwrap().parse().unwrap();
        let started = Instant::now();
        loop {
            // The sentinels close the old primary's clients as they turn it
            // into a replica: an error is a "not yet".
            let info = replication(old)
                .await
                .unwrap_or_else(|error| error.to_string());
            if info.contains("role:slave") && info.contains("master_link_status:up") {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the old primary never became a replica: {info}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// What the node on `port` says of its replication.
async fn replication(port: u16) -> redis::RedisResult<String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut connection)
        .await
}
