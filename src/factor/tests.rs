use super::*;
use proptest::prelude::*;

#[test]
fn text_is_refused_with_why() {
    for bad in [
        "",
        "x",
        "-1",
        "1.",
        ".5",
        "1.2.3",
        "1e3",
        "0.1234567",
        "5000",
    ] {
        assert!(bad.parse::<Factor>().is_err(), "{bad}");
    }
    assert_eq!("10".parse::<Factor>(), Ok(Factor(10 * MILLION)));
    assert_eq!(" 0.000001 ".parse::<Factor>(), Ok(Factor(1)));
}

#[test]
fn floats_that_no_factor_holds_give_the_largest() {
    for bad in [f64::NAN, -0.5, f64::INFINITY, 1e12] {
        assert_eq!(Factor::from_f64(bad), Factor(u32::MAX));
    }
    assert_eq!(Factor::from_f64(1.000_000_4), Factor::ONE);
}

proptest! {
    #[test]
    fn display_reads_back(millionths in any::<u32>()) {
        let factor = Factor(millionths);
        prop_assert_eq!(factor.to_string().parse::<Factor>(), Ok(factor));
        prop_assert_eq!(Factor::from_f64(factor.to_f64()), factor);
    }
}
