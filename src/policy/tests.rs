use super::*;

#[test]
fn names_round_trip() {
    for policy in Policy::ALL {
        assert_eq!(policy.as_str().parse::<Policy>(), Ok(policy));
        assert_eq!(policy.to_string(), policy.as_str());
    }
    assert!("".parse::<Policy>().is_err());
}

#[test]
fn a_window_of_another_policy_starts_over() {
    let count = Config::default();
    let rate = Config::builder().policy(Policy::Rate).build().unwrap();
    let mut window = Window::empty(&count);
    window.record(&count, Outcome::FAILURE, 5);
    assert_eq!(window.view(&rate, 5), View::default());
    window.record(&rate, Outcome::FAILURE, 5);
    assert_eq!(window.view(&rate, 5).counts.failed, 1);
    assert!(matches!(window, Window::Rate(_)));
}
