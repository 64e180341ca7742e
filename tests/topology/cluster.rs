//! A Redis Cluster's topology changing under a busy circuit: a primary
//! killed and its replica promoted, a busy key's slot migrated.

use super::*;

#[test]
fn a_primary_killed_under_load_fails_over_to_its_replica() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(url) = server("FUSE_TEST_REDIS_CLUSTER_URL", "Redis Cluster") else {
        return;
    };
    let dir = server("FUSE_TEST_REDIS_CLUSTER_DIR", "Redis Cluster").unwrap();
    runtime().block_on(async {
        settled(&url).await;
        let store: Arc<dyn Store> = Arc::new(RedisStore::open(&url).unwrap());
        // Three circuits in one slot (a hash tag): a busy one, one opened
        // and replicated before the kill, one opened after the replica's
        // link was cut.
        let tag = unique("failover");
        let seen = Arc::new(Seen::default());
        let fuse = busy(&store, &format!("{{{tag}}}busy"), &seen);
        let replicated = fuse_breaker::Fuse::builder(format!("{{{tag}}}replicated"))
            .store(store.clone())
            .build();
        let cut = fuse_breaker::Fuse::builder(format!("{{{tag}}}cut"))
            .store(store.clone())
            .build();
        // And a cached circuit in that slot, and another process's.
        let (here, counted, there) = cached_pair(&store, &url, &format!("{{{tag}}}cached")).await;
        let primary = primary_of(&url, fuse.key()).await;
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = load(&fuse, &seen, &stop, None);
        writes_again(&seen, 50, Duration::from_secs(10)).await;

        replicated.force_open().await.unwrap();
        wait_for_replica(primary.port).await;

        // The replica's link cut (and kept down: it authenticates to a
        // primary that has no password), an opening written, the primary
        // killed: what the replica holds of `cut` is what survives.
        let replica_port = replica_of(&url, &primary).await;
        let mut on_replica = cut_link(replica_port).await;
        cut.force_open().await.unwrap();
        kill(&dir, primary.port);
        let killed_at = Instant::now();
        let _: () = redis::cmd("READONLY")
            .query_async(&mut on_replica)
            .await
            .unwrap();
        let held: Option<Vec<u8>> = redis::cmd("GET")
            .arg(cut.key())
            .query_async(&mut on_replica)
            .await
            .unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("masterauth")
            .arg("")
            .query_async(&mut on_replica)
            .await
            .unwrap();

        // Calls go on, locally, until the replica is promoted; then to
        // the cluster again.
        writes_again(&seen, 50, Duration::from_secs(20)).await;
        let back_after = killed_at.elapsed();
        stop.store(true, Ordering::Relaxed);
        for task in tasks {
            task.await.expect("no task panicked");
        }
        let promoted = primary_of(&url, fuse.key()).await;
        assert_eq!(promoted.port, replica_port, "the replica serves the slot");
        // The subscription of the slot moved to the promoted replica.
        mirrored(&here, &counted, &there).await;

        let local = seen.local.load(Ordering::Relaxed);
        let outages = seen.outages.load(Ordering::Relaxed);
        let returns = seen.returns.load(Ordering::Relaxed);
        assert!(
            local > 0,
            "the fallback decided while the slot had no primary"
        );
        assert!(
            outages >= 1 && returns >= 1,
            "{outages} outages, {returns} returns"
        );
        assert!(fuse.store_reachable());
        let snapshot = fuse.snapshot().await.expect("a readable circuit");
        assert_eq!(snapshot.state, State::Closed);

        let kept = replicated.snapshot().await.unwrap();
        assert_eq!(kept.state, State::Open, "a replicated opening survives");
        let survived = cut.snapshot().await.unwrap();
        assert!(held.is_none(), "the replica's link was down");
        let expected = State::Closed;
        assert_eq!(
            survived.state, expected,
            "what the replica held when its primary died is what survives"
        );
        println!(
            "failover: primary on port {} killed; the replica on port {replica_port} served \
             the slot again and the circuit wrote to it {back_after:.1?} after the kill; {local} \
             calls decided locally meanwhile, {outages} outage(s) and {returns} return(s) \
             reported, {} verdicts unacknowledged (the fallback's); the replicated opening \
             survived; the opening written after the replica's link was cut had not reached \
             it, and was lost: the circuit there is {:?}",
            primary.port,
            seen.unacknowledged.load(Ordering::Relaxed),
            survived.state
        );

        // The killed node comes back, as a replica of the promoted one.
        let restarted = Instant::now();
        restart_node(&dir, primary.port);
        settled(&url).await;
        println!(
            "failover: the killed node rejoined in {:.1?}",
            restarted.elapsed()
        );
    });
}

#[test]
fn a_busy_key_s_slot_migrates_under_load_and_no_failure_is_lost() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(url) = server("FUSE_TEST_REDIS_CLUSTER_URL", "Redis Cluster") else {
        return;
    };
    runtime().block_on(async {
        settled(&url).await;
        let store: Arc<dyn Store> = Arc::new(RedisStore::open(&url).unwrap());
        // A key in the first slot of a primary: `--cluster reshard` moves
        // a node's slots from its first.
        let nodes = nodes(&url).await;
        // `from` serves the lowest slots: once moved, they are the lowest
        // of `to`, and moving `to`'s first slots takes them back.
        // A primary that serves no slot (a failover's old primary that
        // came back as one, or a test's reshard) is left out.
        let mut primaries: Vec<&Node> = nodes
            .iter()
            .filter(|n| n.primary && !n.slots.is_empty())
            .collect();
        primaries.sort_by_key(|n| n.slots.iter().map(|&(a, _)| a).min());
        let from = primaries[0];
        let to = primaries[1];
        let first = from.slots.iter().map(|&(a, _)| a).min().unwrap();
        let (name, first) = (unique("reshard"), Slot::new(first).unwrap());
        let tag = (0u32..1_000_000)
            .map(|n| format!("{name}-{n}"))
            .find(|tag| Slot::for_key(tag) == first)
            .unwrap();
        let seen = Arc::new(Seen::default());
        let fuse = busy(&store, &format!("{{{tag}}}"), &seen);
        // A cached circuit in the same slot, and another process's.
        let (here, counted, there) = cached_pair(&store, &url, &format!("{{{tag}}}cached")).await;
        let stop = Arc::new(AtomicBool::new(false));
        // 1,600 failures (under the threshold), over 2 s at least.
        let tasks = load(&fuse, &seen, &stop, Some(200));
        writes_again(&seen, 50, Duration::from_secs(10)).await;

        let moved = Instant::now();
        reshard(from.port, &from.id, &to.id, SLOTS);
        assert_eq!(primary_of(&url, fuse.key()).await.id, to.id, "moved");
        writes_again(&seen, 50, Duration::from_secs(10)).await;
        // The slot's subscription moved with it: an opening elsewhere
        // reaches the cached circuit through the read its announcement
        // asks for.
        mirrored(&here, &counted, &there).await;
        reshard(to.port, &to.id, &from.id, SLOTS);
        assert_eq!(primary_of(&url, fuse.key()).await.id, from.id, "moved back");
        let took = moved.elapsed();
        let during = seen.failures_written.load(Ordering::Relaxed);
        for task in tasks {
            task.await.expect("no task panicked");
        }
        let written = seen.failures_written.load(Ordering::Relaxed);
        assert!(during < written, "the load outlasted the resharding");
        let unacknowledged = seen.unacknowledged.load(Ordering::Relaxed);
        let local = seen.local.load(Ordering::Relaxed);
        let snapshot = fuse.snapshot().await.expect("a readable circuit");
        assert_eq!(snapshot.state, State::Closed);
        assert_eq!(
            snapshot.failures.len() as u64,
            written,
            "every failure the store acknowledged is in it"
        );
        println!(
            "resharding: {SLOTS} slots (the busy key's first) moved to another primary and back \
             in {took:.1?} under load; {written} failures acknowledged, {} in the key; {} \
             verdicts unacknowledged, {local} calls decided locally",
            snapshot.failures.len(),
            unacknowledged
        );
        settled(&url).await;
    });
}
