use super::*;

#[test]
fn threads_add_to_one_count_and_it_survives_them() {
    let count = Count::new();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..1000 {
                    count.add_one();
                }
            });
        }
    });
    count.add_one();
    assert_eq!(count.sum(), 4001);
}

#[test]
fn every_thread_counts_in_a_lane_of_its_own() {
    let count = Count::new();
    let id = count.id.expect("an id");
    let barrier = std::sync::Barrier::new(16);
    let counters: Vec<usize> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                scope.spawn(|| {
                    count.add_one();
                    let at = LANE.with(|lane| std::ptr::from_ref(lane.0.counter(id)) as usize);
                    // All alive at once, so no lane is reused.
                    barrier.wait();
                    at
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut distinct = counters.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 16, "one counter per thread");
    assert_eq!(count.sum(), 16);
}

#[test]
fn a_dropped_count_leaves_nothing_for_the_next_holder_of_its_id() {
    let first = Count::new();
    std::thread::scope(|scope| {
        scope.spawn(|| first.add_one());
    });
    first.add_one();
    assert_eq!(first.sum(), 2, "a departed thread's count and this one's");
    let id = first.id.expect("an id");
    drop(first);
    let lanes = lanes();
    assert!(lanes.live.iter().all(|lane| lane.get(id) == 0));
    assert_eq!(lanes.departed.get(id).copied().unwrap_or(0), 0);
    assert!(lanes.free.contains(&id) || lanes.next > id);
}

#[test]
fn a_departed_thread_s_lane_is_folded_cleared_and_spare() {
    let count = Count::new();
    let id = count.id.expect("an id");
    let registered = Registered::new();
    let at = std::ptr::from_ref(registered.0) as usize;
    registered.0.counter(id).store(5, Relaxed);
    assert_eq!(count.sum(), 5, "a live lane is summed");
    drop(registered);
    assert_eq!(count.sum(), 5, "folded into the departed threads' counts");
    let lanes = lanes();
    assert!(
        lanes
            .spare
            .iter()
            .chain(&lanes.live)
            .any(|l| std::ptr::from_ref(*l) as usize == at),
        "kept, spare or taken by the next thread that counts"
    );
    assert!(
        lanes
            .spare
            .iter()
            .all(|lane| lane.each().all(|(_, c)| c.load(Relaxed) == 0)),
        "every spare lane is cleared"
    );
}

#[test]
fn the_next_thread_that_counts_takes_a_spare_lane() {
    // Other tests' threads take spare lanes too: try until this one gets
    // the lane it made spare.
    let reused = (0..100).any(|_| {
        let lane: &'static Lane = Box::leak(Box::new(Lane::new()));
        lanes().spare.push(lane);
        let registered = Registered::new();
        let same = std::ptr::eq(registered.0, lane);
        drop(registered);
        same
    });
    assert!(reused);
}

#[test]
fn a_thread_s_recent_counters_are_its_own_and_survive_a_third_count() {
    let (a, b, c) = (Count::new(), Count::new(), Count::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..10 {
                a.add_one();
                b.add(2);
                c.add(3);
            }
        });
        scope.spawn(|| {
            for _ in 0..10 {
                a.add_one();
            }
        });
    });
    assert_eq!((a.sum(), b.sum(), c.sum()), (20, 20, 30));
}
