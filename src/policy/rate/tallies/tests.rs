use super::*;
use crate::config::Policy;
use std::time::Duration;

fn config(buckets: u32) -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .window_buckets(buckets)
        .failure_window(Duration::from_nanos(100 * u64::from(buckets)))
        .minimum_calls(2)
        .failure_rate(50)
        .build()
        .unwrap()
}

#[test]
fn verdicts_count_in_their_bucket_until_it_leaves_the_window() {
    let config = config(3);
    let tallies: &'static Tallies = Box::leak(Box::new(Tallies::new(&config)));
    let epoch = Epoch::new(4);
    tallies.add(epoch, Outcome::SUCCESS, 50);
    tallies.add(epoch, Outcome::FAILURE, 150);
    let at = |now| tallies.sum(&config, epoch, now);
    assert_eq!(
        at(299),
        Counts {
            calls: 2,
            failed: 1,
            slow: 0,
            slow_failed: 0,
        }
    );
    assert_eq!(
        at(300),
        Counts {
            calls: 1,
            failed: 1,
            slow: 0,
            slow_failed: 0,
        }
    );
    assert_eq!(at(400), Counts::default());
    assert!(tallies.holds(&config, epoch, 299));
    assert_eq!(tallies.sum(&config, Epoch::new(5), 299), Counts::default());
}

#[test]
fn a_lane_reuses_its_cells_round_the_ring() {
    let config = config(2);
    let tallies: &'static Tallies = Box::leak(Box::new(Tallies::new(&config)));
    let epoch = Epoch::ZERO;
    for bucket in 0..20u64 {
        tallies.add(epoch, Outcome::FAILURE, bucket * 100);
        tallies.add(epoch, Outcome::SUCCESS, bucket * 100 + 99);
        let sum = tallies.sum(&config, epoch, bucket * 100 + 99);
        let live = (bucket + 1).min(2);
        assert_eq!(
            sum,
            Counts {
                calls: 2 * live,
                failed: live,
                slow: 0,
                slow_failed: 0,
            },
            "bucket {bucket}"
        );
    }
}

#[test]
fn every_thread_counts_and_a_reader_sums_to_the_latest_bucket() {
    let config = config(2);
    let tallies: &'static Tallies = Box::leak(Box::new(Tallies::new(&config)));
    let epoch = Epoch::ZERO;
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                for _ in 0..1000 {
                    tallies.add(epoch, Outcome::SUCCESS, 10);
                }
            });
        }
    });
    assert_eq!(tallies.sum(&config, epoch, 10).calls, 3000);
    // A thread that reached bucket 3 makes bucket 0 leave the window
    // even for a reader whose own time is in bucket 0.
    std::thread::scope(|scope| {
        scope.spawn(|| tallies.add(epoch, Outcome::SUCCESS, 300));
    });
    assert_eq!(tallies.sum(&config, epoch, 10).calls, 1);
}

#[test]
fn a_quick_success_counts_once_after_its_first_verdict_and_only_in_its_window() {
    let config = config(3);
    let one: &'static Tallies = Box::leak(Box::new(Tallies::new(&config)));
    let two: &'static Tallies = Box::leak(Box::new(Tallies::new(&config)));
    let epoch = Epoch::new(6);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Nothing added yet on this thread: no quick path.
            assert!(!Tallies::add_success_quickly(one.address(), epoch, 10));
            one.add(epoch, Outcome::SUCCESS, 10);
            assert!(Tallies::add_success_quickly(one.address(), epoch, 20));
            // Another epoch, the next bucket, another window: not quick.
            assert!(!Tallies::add_success_quickly(
                one.address(),
                epoch.next(),
                20
            ));
            assert!(!Tallies::add_success_quickly(one.address(), epoch, 100));
            assert!(!Tallies::add_success_quickly(two.address(), epoch, 20));
            assert!(!Tallies::add_success_quickly(0, epoch, 20));
            two.add(epoch, Outcome::SUCCESS, 20);
            // The thread's recent window is now `two`.
            assert!(!Tallies::add_success_quickly(one.address(), epoch, 30));
            assert!(Tallies::add_success_quickly(two.address(), epoch, 30));
        });
    });
    assert_eq!(one.sum(&config, epoch, 99).calls, 2);
    assert_eq!(two.sum(&config, epoch, 99).calls, 2);
}

#[test]
fn lanes_of_exited_threads_keep_their_counts_for_the_next_threads() {
    let config = config(3);
    let tallies: &'static Tallies = Box::leak(Box::new(Tallies::new(&config)));
    let epoch = Epoch::new(2);
    for round in 1..=4 {
        // One thread at a time: each after the first is likely given
        // the lane of the one before (its id is reused).
        std::thread::spawn(move || {
            tallies.add(epoch, Outcome::SUCCESS, 10);
            for _ in 0..99 {
                assert!(Tallies::add_success_quickly(tallies.address(), epoch, 10));
            }
        })
        .join()
        .unwrap();
        assert_eq!(tallies.sum(&config, epoch, 10).calls, round * 100);
    }
}

#[test]
fn a_circuit_that_reuses_a_rate_slot_starts_with_an_empty_window() {
    // A configuration of this test's own, so that the second circuit
    // takes the first's slot (and this thread's recent window).
    let config = Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(4321)
        .build()
        .unwrap();
    let ok = || Ok::<(), std::io::Error>(());
    let first = crate::Fuse::new("first", config.clone());
    for _ in 0..5 {
        first.run(ok).unwrap();
    }
    assert_eq!(first.snapshot().calls, 5);
    let slot = first.slot();
    drop(first);
    let second = crate::Fuse::new("second", config);
    assert!(std::ptr::eq(slot, second.slot()), "the slot was not reused");
    assert_eq!(second.snapshot().calls, 0);
    for _ in 0..3 {
        second.run(ok).unwrap();
    }
    assert_eq!(second.snapshot().calls, 3);
}

#[test]
fn slow_calls_are_kept_by_verdict_and_a_cell_saturates_each_half() {
    let config = config(2);
    let tallies: &'static Tallies = Box::leak(Box::new(Tallies::new(&config)));
    let epoch = Epoch::new(1);
    let slow = |failed| Outcome { failed, slow: true };
    tallies.add(epoch, slow(false), 10);
    tallies.add(epoch, slow(true), 20);
    tallies.add(epoch, slow(true), 30);
    tallies.add(epoch, Outcome::FAILURE, 40);
    let sum = tallies.sum(&config, epoch, 50);
    assert_eq!(
        (sum.calls, sum.failed, sum.slow, sum.slow_failed),
        (4, 3, 3, 2)
    );
    // A restored bucket past what one thread's cell holds.
    let huge = Counts {
        calls: u64::MAX,
        failed: u64::MAX,
        slow: u64::MAX,
        slow_failed: u64::MAX,
    };
    tallies.add_counts(epoch, huge, 150);
    tallies.add(epoch, slow(true), 160);
    let sum = tallies.sum(&config, epoch, 160);
    let most = u64::from(u32::MAX);
    assert_eq!((sum.slow, sum.slow_failed), (3 + most, 2 + most));
    assert_eq!((sum.calls, sum.failed), (u64::MAX, u64::MAX));
}
