//! The nanoseconds of a duration (see [`nanos`]).

use std::time::Duration;

use super::{MAX_DURATION, nanos};

#[test]
fn nanos_are_exact_and_saturate() {
    for duration in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::new(1, 999_999_999),
        MAX_DURATION,
        Duration::from_nanos(u64::MAX),
    ] {
        assert_eq!(u128::from(nanos(duration)), duration.as_nanos());
    }
    assert_eq!(
        nanos(Duration::from_nanos(u64::MAX) + Duration::from_nanos(1)),
        u64::MAX
    );
    assert_eq!(nanos(Duration::MAX), u64::MAX);
    assert_eq!(
        nanos(Duration::new(u64::MAX / 1_000_000_000, 999_999_999)),
        u64::MAX
    );
}
