//! The oracle beside the reference circuit where the differential
//! histories never go.

use std::time::Duration;

use super::{Admit, Oracle};
use crate::epoch::Epoch;
use crate::model::Decision;
use crate::reference::Reference;

const SEC: u64 = 1_000_000_000;

/// A clock that steps back and the clock's last instants: the reference
/// and the oracle reject alike, with the same `retry_after` (never more
/// than the opening), and admit at the same instant.
#[test]
fn the_reference_follows_the_oracle_back_in_time_and_at_the_end_of_time() {
    let config = crate::Config::builder()
        .open_backoff(1.5)
        .max_open_duration(Duration::from_mins(5))
        .build()
        .unwrap();
    let last = u64::MAX;
    for opened in [
        50 * SEC,
        last - 100 * SEC,
        last - 30 * SEC,
        last - SEC,
        last,
    ] {
        let mut reference = Reference::starting_at(config.clone(), Epoch::new(0));
        let mut oracle = Oracle::new(&config);
        reference.force_open(opened);
        oracle.force_open(opened);
        let times = [
            0,
            10 * SEC,
            opened.saturating_sub(SEC),
            opened,
            opened.saturating_add(29 * SEC),
            opened.saturating_add(30 * SEC),
            last - 1,
            last,
        ];
        for now in times {
            match (reference.clone().acquire(now), oracle.clone().acquire(now)) {
                (Decision::Rejected { retry_after }, Admit::Rejected(expected)) => {
                    assert_eq!(retry_after, expected, "opened {opened}, now {now}");
                    assert!(retry_after <= 30 * SEC, "opened {opened}, now {now}");
                }
                (Decision::Granted(_), Admit::Granted(_)) => {}
                (model, oracle) => panic!("opened {opened}, now {now}: {model:?} {oracle:?}"),
            }
        }
    }
}
