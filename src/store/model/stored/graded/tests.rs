use std::time::Duration;

use super::{Share, Tag};
use crate::config::Config;
use crate::grade::{Grading, Shed};
use crate::store::model::stored::{At, Entry, Ramp, Stored};

const SEC: u64 = 1_000_000_000;

/// SPEC §11 in a store: a closed admission sheds by the fleet's throttle
/// share of its own epoch (not another's), with the ramp's, by one draw.
#[test]
fn a_closed_admission_sheds_by_the_fleet_s_throttle_share_of_its_epoch() {
    let config = Config::builder()
        .throttle_k(2.0)
        .ramp_up(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut stored = Stored::reset(9);
    let half = Share {
        tag: Tag {
            generation: 9,
            epoch: 1,
        },
        shed: Shed::of(0.5),
    };
    let admit = |stored: &mut Stored, throttle: Option<Share>, draw: u32| {
        let at = At {
            now: SEC,
            lease: 0,
            lease_id: 1,
            generation: 1,
            draw,
            throttle,
        };
        match stored.acquire(&config, at).0 {
            Entry::Granted(_) => None,
            Entry::Rejected { retry_after } => crate::error::shed_by(retry_after),
        }
    };
    assert_eq!(admit(&mut stored, Some(half), 0), Some(Grading::Throttle));
    assert_eq!(admit(&mut stored, Some(half), u32::MAX), None);
    assert_eq!(admit(&mut stored, None, 0), None);
    let other = Share {
        tag: Tag {
            generation: 9,
            epoch: 0,
        },
        ..half
    };
    assert_eq!(admit(&mut stored, Some(other), 0), None, "another epoch's");
    // Ramping at a tenth: a draw the throttle's half sheds is the
    // throttle's, one only the ramp's nine tenths shed is the ramp's.
    stored.ramp = Some(Ramp { n: 1, since: SEC });
    assert_eq!(admit(&mut stored, Some(half), 0), Some(Grading::Throttle));
    assert_eq!(
        admit(&mut stored, Some(half), 3 << 30),
        Some(Grading::RampUp)
    );
    assert_eq!(admit(&mut stored, Some(half), u32::MAX), None);
}
