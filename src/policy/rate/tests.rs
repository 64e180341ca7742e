use super::*;
use crate::config::Policy;

fn config(minimum: u32, rate: u32) -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(minimum)
        .failure_rate(rate)
        .window_buckets(4)
        .failure_window(std::time::Duration::from_nanos(400))
        .build()
        .unwrap()
}

#[test]
fn the_rate_opens_once_the_minimum_is_reached() {
    let config = config(4, 50);
    let mut window = Buckets::empty(&config);
    window.record(&config, Outcome::SUCCESS, 0);
    assert!(
        !window.record(&config, Outcome::FAILURE, 1).opens,
        "2 calls"
    );
    window.record(&config, Outcome::SUCCESS, 2);
    assert!(window.record(&config, Outcome::FAILURE, 3).opens, "2 of 4");
}

#[test]
fn a_success_never_opens() {
    let config = config(1, 1);
    let mut window = Buckets::from_entries([(
        0,
        Counts {
            calls: 9,
            failed: 9,
            slow: 0,
            slow_failed: 0,
        },
    )]);
    assert!(!window.record(&config, Outcome::SUCCESS, 0).opens);
    assert!(window.record(&config, Outcome::FAILURE, 0).opens);
}

#[test]
fn buckets_leave_the_window_at_their_edge() {
    // Width 100: bucket 0 is [0, 100); at 399 the window is buckets 0..=3,
    // at 400 it is 1..=4.
    let config = config(1, 100);
    let mut window = Buckets::empty(&config);
    window.record(&config, Outcome::FAILURE, 99);
    assert_eq!(window.sum(&config, 399).failed, 1);
    assert_eq!(window.sum(&config, 400).failed, 0);
    assert_eq!(bucket(&config, 100), 1);
    assert!(window.prune(&config, 400));
    assert!(window.entries().is_empty());
}

#[test]
fn slow_calls_count_only_with_a_slow_call_duration() {
    let base = config(2, 100);
    assert!(!trips(
        &base,
        Counts {
            calls: 2,
            failed: 0,
            slow: 2,
            slow_failed: 0,
        }
    ));
    let slow = base
        .to_builder()
        .slow_call_duration(std::time::Duration::from_nanos(10))
        .slow_call_rate(50)
        .build()
        .unwrap();
    assert!(trips(
        &slow,
        Counts {
            calls: 2,
            failed: 0,
            slow: 1,
            slow_failed: 0,
        }
    ));
    assert!(is_slow(&slow, 10) && !is_slow(&slow, 9));
    assert!(!is_slow(&base, u64::MAX));
}

#[test]
fn sums_saturate() {
    let big = Counts {
        calls: u64::MAX,
        failed: u64::MAX,
        slow: 0,
        slow_failed: 0,
    };
    assert_eq!(big.plus(big), big);
    assert!(trips(&config(1, 100), big));
}
