use super::*;

#[test]
fn the_threshold_opens_and_a_success_clears() {
    let config = Config::builder().failure_threshold(2).build().unwrap();
    let mut window = Failures::empty(&config);
    assert!(!window.record(&config, Outcome::SUCCESS, 0).changed);
    assert!(!window.record(&config, Outcome::FAILURE, 1).opens);
    let cleared = window.record(&config, Outcome::SUCCESS, 2);
    assert_eq!(
        cleared,
        Recorded {
            changed: true,
            opens: false
        }
    );
    window.record(&config, Outcome::FAILURE, 3);
    assert!(window.record(&config, Outcome::FAILURE, 4).opens);
}

#[test]
fn failures_leave_the_window_after_it_inclusively() {
    let config = Config::default();
    let window_nanos = config.window_nanos();
    assert!(in_window(&config, 10, 10 + window_nanos));
    assert!(!in_window(&config, 10, 11 + window_nanos));
    assert!(in_window(&config, 10, 5), "a clock that went backwards");
}

#[test]
fn prune_keeps_the_newest() {
    let config = Config::builder().failure_threshold(2).build().unwrap();
    let mut window = Failures::from_times(vec![3, 1, 2]);
    assert!(window.prune(&config, 3));
    assert_eq!(window.times(), &[2, 3]);
}
