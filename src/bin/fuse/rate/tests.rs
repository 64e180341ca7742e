use super::*;

fn rate(calls: u64, failed: u64, slow: u64, slow_call: Option<Duration>) -> Window {
    Window {
        calls,
        failed,
        slow,
        failure_rate: 50,
        minimum_calls: 20,
        slow_call_rate: 100,
        slow_call,
    }
}

#[test]
fn a_rate_circuit_is_described_with_its_share_and_its_rule() {
    assert_eq!(
        rate(40, 12, 0, None).to_string(),
        "rate 12/40 failed (30 %, opens at 50 % of >= 20)"
    );
    assert_eq!(
        rate(40, 12, 3, Some(Duration::from_secs(2))).to_string(),
        "rate 12/40 failed (30 %, opens at 50 % of >= 20), \
         3/40 slow over 2s (7 %, opens at 100 %)"
    );
    // No calls: no share to show.
    assert_eq!(
        rate(0, 0, 0, None).to_string(),
        "rate 0/0 failed (opens at 50 % of >= 20)"
    );
    // Rounded down: 2 of 3 is 66 %, never above what the rule sees.
    assert_eq!(
        rate(3, 2, 0, None).to_string(),
        "rate 2/3 failed (66 %, opens at 50 % of >= 20)"
    );
    // Counts as large as a store may hold do not overflow.
    assert!(
        rate(u64::MAX, u64::MAX, 0, None)
            .to_string()
            .contains("100 %")
    );
}

#[test]
fn only_a_rate_circuit_is_described_so() {
    let count = Config::default();
    let mut snapshot = fuse_breaker::Fuse::new("n", count.clone()).snapshot();
    assert_eq!(Window::of_snapshot(&snapshot, &count), None);
    let config = Config::builder()
        .policy(Policy::Rate)
        .failure_rate(25)
        .build()
        .unwrap();
    (snapshot.calls, snapshot.failed, snapshot.slow) = (8, 2, 1);
    let rate = Window::of_snapshot(&snapshot, &config).expect("a rate circuit");
    assert_eq!(
        rate.to_string(),
        "rate 2/8 failed (25 %, opens at 25 % of >= 20)"
    );
    let json = rate.json();
    assert_eq!(json["policy"], "rate");
    assert_eq!((&json["calls"], &json["failed"]), (&8.into(), &2.into()));
    assert_eq!(json["slow_call_duration_ms"], serde_json::Value::Null);

    let view = fuse_breaker::admin::CircuitView::of(&fuse_breaker::Fuse::new("n", config));
    assert_eq!(
        Window::of_view(&view).map(|rate| rate.to_string()),
        Some("rate 0/0 failed (opens at 25 % of >= 20)".to_owned())
    );
}
