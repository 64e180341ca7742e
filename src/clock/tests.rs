use super::*;

#[test]
fn both_readings_of_a_mock_clock_are_its_value() {
    let (clock, mock) = Clock::mock();
    let precise = Time::new(Some(clock.clone()), false);
    let coarse = Time::new(Some(clock), true);
    assert!(coarse.is_coarse());
    assert_eq!((precise.now(), coarse.now()), (0, 0));
    mock.increment(1_234_567);
    assert_eq!((precise.now(), coarse.now()), (1_234_567, 1_234_567));
}

#[test]
fn the_coarse_clock_moves_on_its_own() {
    let time = Time::new(None, true);
    assert!(matches!(time, Time::Coarse));
    let start = time.now();
    std::thread::sleep(UPKEEP_INTERVAL * 20);
    let later = time.now();
    assert!(later > start, "the upkeep thread refreshes the coarse time");
    // In nanoseconds: 20 ms of sleep is well over 2 ms of coarse time,
    // however late the upkeep thread runs.
    assert!(later - start >= 2_000_000, "{start} -> {later}");
}
