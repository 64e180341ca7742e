//! A reconfiguration's one write to the state word (SPEC §12): the
//! failures a `count` circuit keeps under a smaller threshold.

use super::{Engine, Step};
use crate::config::Config;
use crate::snapshot::State;

impl Engine<'_> {
    /// Puts `config` (interned, numbered `number`, of the slot's shape) in
    /// force: every admission and verdict from now on reads it, and
    /// nothing transitions. A closed `count` word keeps at most the new
    /// threshold less one failures (the newest: its claims stay, and a
    /// failure's check reads back from the newest); the compare-and-swap
    /// that trims it comes after the new configuration is in place, so a
    /// failure decided under the old threshold on the old word loses it and
    /// decides again under the new one.
    pub(crate) fn reconfigure(&self, config: &'static Config, number: u32) {
        self.occupant.reconfigure(config);
        self.slot.reconfigure(config, number);
        let keep = config.failure_threshold() - 1;
        let ((), _) = self.update(self.load(), |word| {
            if word.state() != State::Closed || word.counts_calls() {
                return Step::Done(());
            }
            match word.failures() {
                (claims, live) if live > keep => Step::Write(word.with_failures(claims, keep), ()),
                _ => Step::Done(()),
            }
        });
    }
}
