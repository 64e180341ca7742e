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

#[test]
fn the_shortest_opening_is_the_open_duration_less_the_whole_jitter() {
    assert_eq!(backoff(FIXED, 30, 0).shortest(), 30 * SECOND);
    assert_eq!(backoff(2_000_000, 300, 200_000).shortest(), 24 * SECOND);
    assert_eq!(backoff(FIXED, 30, WHOLE_JITTER - 1).shortest(), 30_000);
}

proptest! {
    /// No opening, whatever its place in a row, its draw and its hint, is
    /// shorter than the shortest (a rejection that finds its opening's
    /// end no further than that from its clock skips reading its start),
    /// and the shortest is about the longest cut of the first.
    #[test]
    fn no_opening_is_shorter_than_the_shortest(
        open in 1..=1_000 * SECOND,
        extra in 0..=10_000 * SECOND,
        factor in FIXED..=MAX_BACKOFF,
        jitter in 0..WHOLE_JITTER,
        n in any::<u32>(),
        u in any::<u32>(),
        hint in proptest::option::of(any::<u64>()),
    ) {
        let b = Backoff { open, max_open: open + extra, factor, jitter };
        let shortest = b.shortest();
        prop_assert!(shortest <= open);
        prop_assert!(b.with_hint(n, u, hint) >= shortest);
        prop_assert!(b.duration(0, u32::MAX) <= shortest + (open >> 32) + 1);
    }

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

/// The n-th opening is computed in a bounded number of multiplications,
/// whatever `n` and the factor (issue 31: a factor of 1.000001 and a
/// payload's `openings` of 4294967295 took millions of steps).
#[test]
fn the_nth_opening_takes_a_bounded_number_of_steps() {
    for factor in [1_000_001, 1_000_100, 1_010_000, 2_000_000, MAX_BACKOFF] {
        for (open, max_open) in [(30 * SECOND, 3_600 * SECOND), (1, 10), (1, u64::MAX)] {
            let b = Backoff {
                open,
                max_open,
                factor,
                jitter: 0,
            };
            for n in [0, 1, 2, 199, 1 << 20, u32::MAX - 1, u32::MAX] {
                let (base, steps) = b.base_counted(n);
                assert!(steps <= 64, "{factor} {open} {max_open} {n}: {steps} steps");
                assert_eq!(base, b.base(n));
                assert!((open..=max_open).contains(&base));
            }
        }
    }
    // A factor that grows the duration slowly still reaches the cap.
    let slow = backoff(1_000_001, 300, 0);
    assert_eq!(slow.base(u32::MAX), 300 * SECOND);
    assert_eq!(slow.base(u32::MAX - 1), 300 * SECOND);
    // 30 s * 1.000001^1000000 is 81.548414079581... s: the steps' rounding
    // stays within a microsecond of it.
    let grown = slow.base(1_000_000);
    assert!(grown.abs_diff(81_548_414_079) < 1_000, "{grown}");
}

/// Factors with few decimals give exact durations: 30 s * 1.1^2 is 36.3 s.
#[test]
fn short_decimal_factors_give_exact_durations() {
    let b = backoff(1_100_000, 3_600, 0);
    assert_eq!(b.base(1), 33 * SECOND);
    assert_eq!(b.base(2), 36_300_000_000);
    assert_eq!(b.base(3), 39_930_000_000);
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

proptest! {
    /// However large `n`, a longer row never makes a shorter opening, and
    /// every opening stays between the open duration and the cap.
    #[test]
    fn large_rows_never_shorten_the_opening(
        open in 1..=1_000 * SECOND,
        extra in 0..=10_000 * SECOND,
        factor in FIXED..=MAX_BACKOFF,
        n in any::<u32>(),
    ) {
        let b = Backoff { open, max_open: open + extra, factor, jitter: 0 };
        let n = n.min(u32::MAX - 1);
        let (base, steps) = b.base_counted(n);
        prop_assert!(steps <= 64);
        prop_assert!(base >= open && base <= open + extra);
        prop_assert!(b.base(n + 1) >= base);
    }

    /// The wide product agrees with u128 arithmetic where that fits.
    #[test]
    fn wide_products_agree_with_narrow_ones(a in any::<u64>(), b in any::<u64>(), shift in 0..72_u32) {
        let exact = u128::from(a) * u128::from(b);
        prop_assert_eq!(product_shifted(u128::from(a), u128::from(b), shift), Some(exact >> shift));
        prop_assert_eq!(product_shifted(u128::MAX, 2, 0), None);
        prop_assert_eq!(product_shifted(u128::MAX, 2, 1), Some(u128::MAX));
    }
}
