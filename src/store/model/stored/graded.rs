//! What a stored circuit's graded admission (SPEC §11) decides: a closed
//! admission's graded share (the ramp-up's, and the fleet's throttle's as
//! a process last read it), and whether a trip relapses within the ramp.

use super::{At, Ramp, Stored};
use crate::config::Config;
use crate::grade::throttle::{self, Asked};
use crate::grade::{self, Grading, Shed, ramp};
use crate::snapshot::Snapshot;

/// The closed epoch a throttle window counts: the key's generation and
/// the epoch (the ticket's, see [`Ticket`](super::Ticket)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Tag {
    pub(crate) generation: u64,
    pub(crate) epoch: u64,
}

/// The share of a closed epoch's calls the fleet's throttle sheds, as a
/// process computed it from the fleet's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Share {
    pub(crate) tag: Tag,
    pub(crate) shed: Shed,
}

impl Stored {
    /// The graded admission (SPEC §11) of a closed circuit that ramps up
    /// or that the fleet's throttle (`at.throttle`, if it names this
    /// epoch) sheds calls of: the rule that sheds the call at `at` with its
    /// draw, if one does; and whether the ramp was found over and cleared
    /// (a change).
    pub(super) fn graded(&mut self, config: &Config, at: At) -> (Option<Grading>, bool) {
        let throttle = at
            .throttle
            .filter(|share| {
                share.tag.generation == self.generation && share.tag.epoch == self.epoch
            })
            .map_or(Shed::NONE, |share| share.shed);
        let mut ended = false;
        let ramp = match self.ramp {
            None => Shed::NONE,
            Some(Ramp { since, .. }) => ramp::shed(config, since, at.now).unwrap_or_else(|| {
                self.ramp = None;
                self.head.ramping = false;
                ended = true;
                Shed::NONE
            }),
        };
        (grade::decide(ramp, throttle, at.draw), ended)
    }

    /// The n a trip at `now` opens after, if it relapses within a ramp
    /// (SPEC §11).
    pub(super) fn relapse(&self, config: &Config, now: u64) -> Option<u32> {
        self.ramp
            .filter(|ramp| ramp::within(config, ramp.since, now))
            .map(|ramp| ramp.n)
    }

    /// `snapshot` (this circuit's at `now`) with the fleet's throttle
    /// window `asked` of its closed epoch (SPEC §11): the share it sheds,
    /// with the ramp's, and the counts.
    pub(crate) fn show_throttle(
        &self,
        config: &Config,
        now: u64,
        asked: Asked,
        snapshot: &mut Snapshot,
    ) {
        let ramp = self
            .ramp
            .and_then(|Ramp { since, .. }| ramp::shed(config, since, now))
            .unwrap_or(Shed::NONE);
        grade::show(snapshot, ramp, throttle::shed(config, asked), asked);
    }
}

#[cfg(test)]
mod tests;
