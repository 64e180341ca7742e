//! What a stored circuit's ramp-up (SPEC §11) decides: a closed
//! admission's graded share, and whether a trip relapses within the ramp.

use super::{At, Ramp, Stored};
use crate::config::Config;
use crate::grade::{self, Grading, Shed, ramp};

impl Stored {
    /// The graded admission (SPEC §11) of a closed circuit that ramps up:
    /// the rule that sheds the call at `at` with its draw, if one does;
    /// and whether the ramp was found over and cleared (a change).
    pub(super) fn graded(&mut self, config: &Config, at: At) -> (Option<Grading>, bool) {
        let Some(Ramp { since, .. }) = self.ramp else {
            return (None, false);
        };
        if let Some(shed) = ramp::shed(config, since, at.now) {
            return (grade::decide(shed, Shed::NONE, at.draw), false);
        }
        self.ramp = None;
        self.head.ramping = false;
        (None, true)
    }

    /// The n a trip at `now` opens after, if it relapses within a ramp
    /// (SPEC §11).
    pub(super) fn relapse(&self, config: &Config, now: u64) -> Option<u32> {
        self.ramp
            .filter(|ramp| ramp::within(config, ramp.since, now))
            .map(|ramp| ramp.n)
    }
}
