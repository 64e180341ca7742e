//! The coarse clock keeps every rule.

use super::*;

#[test]
fn coarse_clock_on_a_mock_clock_follows_the_mock() {
    let (clock, mock) = Clock::mock();
    let fuse = Fuse::builder("coarse")
        .config(config(1, 1))
        .clock(clock)
        .coarse_clock(true)
        .build();
    set_time(&mock, secs(5));
    fuse.try_acquire().expect("closed").failure();
    assert_eq!(fuse.snapshot(), open(secs(5)));
    set_time(&mock, just_before(secs(35)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(35));
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
}
