use super::*;

/// Waits for the in-process engine's rate path.
#[test]
fn a_rate_circuit_trips_past_the_successes_in_its_window() {
    let config = Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(10)
        .failure_rate(50)
        .build()
        .unwrap();
    let test = TestFuse::new("search", config);
    test.succeed(30);
    test.assert_window(30, 0, 0);
    test.trip();
    test.assert_window(0, 0, 0);
    test.fuse.force_closed();
    // Fresh: the minimum of failures opens it.
    test.trip();
    test.assert_state(State::Open);
}

#[test]
#[should_panic(expected = "holds 0 calls, 0 failed and 0 slow, expected 1, 0 and 0")]
fn assert_window_names_what_the_window_holds() {
    let rate = Config::builder().policy(Policy::Rate).build().unwrap();
    TestFuse::new("search", rate).assert_window(1, 0, 0);
}
