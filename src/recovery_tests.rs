use super::*;

const FIXED: u32 = 1_000_000;
const MAX_BACKOFF: u32 = 10_000_000;
const WHOLE_JITTER: u32 = 1_000_000;
use proptest::prelude::*;

const SECOND: u64 = 1_000_000_000;

fn backoff(factor: u32, max_seconds: u64, jitter: u32) -> Backoff {
    Backoff {
        open: 30 * SECOND,
        max_open: max_seconds * SECOND,
        factor,
        jitter,
    }
}

#[test]
fn a_fixed_opening_lasts_the_open_duration_every_time() {
    let fixed = backoff(FIXED, 30, 0);
    for n in [0, 1, 7, u32::MAX] {
        assert_eq!(fixed.duration(n, u32::MAX), 30 * SECOND);
    }
}

#[test]
fn openings_grow_by_the_factor_up_to_the_cap() {
    let doubling = backoff(2_000_000, 300, 0);
    let seconds: Vec<u64> = (0..6).map(|n| doubling.duration(n, 0) / SECOND).collect();
    assert_eq!(seconds, [30, 60, 120, 240, 300, 300]);
    assert_eq!(doubling.duration(u32::MAX, 0), 300 * SECOND);
    let half_again = backoff(1_500_000, 3_600, 0);
    assert_eq!(half_again.duration(2, 0), 67_500_000_000);
}

#[test]
fn jitter_shortens_by_up_to_its_share() {
    let jittered = backoff(FIXED, 30, 200_000);
    assert_eq!(jittered.duration(0, 0), 30 * SECOND);
    assert_eq!(jittered.duration(0, 1 << 31), 27 * SECOND);
    let longest_cut = 30 * SECOND - jittered.duration(0, u32::MAX);
    assert!(
        (6 * SECOND - 2..6 * SECOND).contains(&longest_cut),
        "{longest_cut}"
    );
}

#[test]
fn a_hint_lengthens_an_opening_up_to_the_cap_and_never_shortens_it() {
    let doubling = backoff(2_000_000, 300, 0);
    assert_eq!(doubling.with_hint(0, 0, Some(90 * SECOND)), 90 * SECOND);
    assert_eq!(doubling.with_hint(0, 0, Some(10 * SECOND)), 30 * SECOND);
    assert_eq!(doubling.with_hint(0, 0, Some(u64::MAX)), 300 * SECOND);
    assert_eq!(doubling.with_hint(1, 0, None), 60 * SECOND);
}

proptest! {
    /// Every opening lasts between `(1 - jitter)` of its base and its
    /// base, the base never exceeds the cap, and it never shrinks as
    /// `n` grows.
    #[test]
    fn durations_stay_in_their_bounds(
        open in 1..=1_000 * SECOND,
        extra in 0..=10_000 * SECOND,
        factor in FIXED..=MAX_BACKOFF,
        jitter in 0..WHOLE_JITTER,
        n in 0..200_u32,
        u in any::<u32>(),
    ) {
        let b = Backoff { open, max_open: open + extra, factor, jitter };
        let base = b.base(n);
        prop_assert!(base >= open && base <= open + extra);
        prop_assert!(b.base(n + 1) >= base);
        let d = b.duration(n, u);
        prop_assert!(d <= base);
        let floor = u128::from(base) * u128::from(WHOLE_JITTER - jitter) / u128::from(WHOLE_JITTER);
        prop_assert!(u128::from(d) + 1 >= floor, "{} < {}", d, floor);
    }

    /// A draw is a function of its seed and time, and spreads: over many
    /// openings its mean is near the middle.
    #[test]
    fn draws_are_the_same_for_one_opening(seed in any::<u64>(), at in any::<u64>()) {
        prop_assert_eq!(draw(seed, at), draw(seed, at));
    }
}

/// A factor too close to 1 for a short duration's nanoseconds stops
/// growing it at once, and the n-th opening is computed without n steps.
#[test]
fn a_factor_that_no_longer_grows_the_duration_stops_the_steps() {
    let tiny = Backoff {
        open: 1,
        max_open: 10,
        factor: 1_000_001,
        jitter: 0,
    };
    let started = std::time::Instant::now();
    assert_eq!(tiny.base(u32::MAX), 1);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

#[test]
fn draws_spread_over_the_unit() {
    let draws: Vec<f64> = (0..10_000_u64)
        .map(|at| f64::from(draw(42, at * 1_000_000_007)) / 4_294_967_296.0)
        .collect();
    let mean = draws.iter().sum::<f64>() / 10_000.0;
    assert!((mean - 0.5).abs() < 0.02, "{mean}");
    assert!(draws.iter().any(|&u| u < 0.01) && draws.iter().any(|&u| u > 0.99));
    assert_ne!(draw(1, 5), draw(2, 5));
}
