use std::time::Duration;

use super::throttle::{self, Asked};
use super::{Grading, Shed, decide, in_force, ramp};
use crate::config::Config;

fn config(f: impl FnOnce(crate::config::ConfigBuilder) -> crate::config::ConfigBuilder) -> Config {
    f(Config::builder()).build().expect("a valid configuration")
}

#[test]
fn a_share_is_a_fraction_of_two_to_the_thirty_second() {
    assert_eq!(Shed::of(0.0), Shed::NONE);
    assert_eq!(Shed::of(0.5), Shed(1 << 31));
    assert_eq!(Shed::of(1.0), Shed(u32::MAX));
    assert_eq!(Shed::of(-3.0), Shed::NONE);
    assert_eq!(Shed::of(f64::NAN), Shed::NONE);
    assert!((Shed::of(0.25).probability() - 0.25).abs() < 1e-9);
    assert!(Shed(1).sheds(0) && !Shed(1).sheds(1) && !Shed::NONE.sheds(0));
}

#[test]
fn the_ramp_admits_its_floor_then_its_share_of_the_time() {
    let ramp = config(|b| b.ramp_up(Duration::from_secs(10)).ramp_up_floor(20));
    let shed = |t: u64| ramp::shed(&ramp, 1_000, 1_000 + t).map(Shed::probability);
    let second = 1_000_000_000;
    assert!((shed(0).unwrap() - 0.8).abs() < 1e-9);
    assert!(
        (shed(second).unwrap() - 0.8).abs() < 1e-9,
        "the floor holds at 10 %"
    );
    assert!((shed(5 * second).unwrap() - 0.5).abs() < 1e-9);
    assert!((shed(9 * second).unwrap() - 0.1).abs() < 1e-9);
    assert_eq!(shed(10 * second), None, "over at ramp_up");
    assert!(
        (ramp::shed(&ramp, 5_000, 10).unwrap().probability() - 0.8).abs() < 1e-9,
        "a clock behind the start reads as the start"
    );
    assert!(ramp::within(&ramp, 0, 10 * second - 1) && !ramp::within(&ramp, 0, 10 * second));
    let none = Config::default();
    assert_eq!(ramp::shed(&none, 0, 0), None);
    assert!(!ramp::within(&none, 0, 0));
}

#[test]
fn the_throttle_is_the_formula_from_its_minimum_up_to_its_maximum() {
    let k2 = config(|b| b.throttle_k(2.0).minimum_calls(10).max_throttle(50));
    let p = |requests, accepts| throttle::probability(&k2, Asked { requests, accepts });
    assert!(p(9, 0).abs() < 1e-12, "below minimum_calls");
    assert!((p(10, 3) - 4.0 / 11.0).abs() < 1e-12);
    assert!(p(100, 50).abs() < 1e-12, "never below 0");
    assert!((p(100, 0) - 0.5).abs() < 1e-12, "capped at max_throttle");
    let off = Asked {
        requests: 100,
        accepts: 0,
    };
    assert!(throttle::probability(&Config::default(), off).abs() < 1e-12);
}

#[test]
fn a_draw_either_rule_sheds_is_the_throttle_s() {
    let (ramp, throttle) = (Shed(100), Shed(40));
    assert_eq!(decide(ramp, throttle, 39), Some(Grading::Throttle));
    assert_eq!(decide(ramp, throttle, 40), Some(Grading::RampUp));
    assert_eq!(decide(ramp, throttle, 100), None);
    assert_eq!(in_force(Shed::NONE, Shed::NONE), None);
    assert_eq!(
        in_force(Shed(1 << 31), Shed(1 << 30)),
        Some((Grading::RampUp, 0.5))
    );
    assert_eq!(
        in_force(Shed(1 << 30), Shed(1 << 31)),
        Some((Grading::Throttle, 0.5))
    );
}
