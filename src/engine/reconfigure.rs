//! A reconfiguration's writes to the state word (SPEC §12): a ring grown
//! for a raised threshold, and the failures a `count` circuit keeps under a
//! smaller one.

use std::sync::PoisonError;

use super::{Engine, Step};
use crate::config::Config;
use crate::packed::{CLAIMS_MODULUS, Word};
use crate::snapshot::State;
use crate::sync::HEAD_TOUCH;

impl Engine<'_> {
    /// Puts `config` (interned, numbered `number`, of the slot's shape) in
    /// force: every admission and verdict from now on reads it, and
    /// nothing transitions. A `count` threshold above the ring's slots
    /// first grows the ring ([`grow`](Self::grow)). A closed `count` word
    /// keeps at most the new threshold less one failures (the newest: its
    /// claims stay, and a failure's check reads back from the newest); it
    /// reads the word after the new configuration is in place by a
    /// read-modify-write, so that a failure claimed under the old
    /// threshold is seen by it or sees the new one (see
    /// `sync::HEAD_TOUCH`).
    pub(crate) fn reconfigure(&self, config: &'static Config, number: u32) {
        let _one_at_a_time = self
            .occupant
            .reconfiguring
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let threshold = config.failure_threshold();
        if !config.policy().counts_calls() && threshold > self.occupant.rings.newest().len() {
            // Twice: the second ends at ring parity 0 (see `Rings`).
            self.grow(threshold);
            self.grow(threshold);
        }
        self.occupant.reconfigure(config);
        self.slot.reconfigure(config, number);
        // HEAD_TOUCH (AcqRel): see `sync`.
        let word = Word::from_bits(self.slot.words.head.fetch_add(0, HEAD_TOUCH));
        let keep = threshold - 1;
        let ((), _) = self.update(word, |word| {
            if word.state() != State::Closed || word.counts_calls() {
                return Step::Done(());
            }
            match word.failures() {
                (claims, live) if live > keep => Step::Write(word.with_failures(claims, keep), ()),
                _ => Step::Done(()),
            }
        });
    }

    /// One step of a ring's growth for `threshold` (see
    /// [`Rings`](crate::ring::Rings)): pushes a ring, copies into it the
    /// live claims of the word (closed; none otherwise), and flips the
    /// word's ring parity to it; again from the word a lost
    /// compare-and-swap finds (the new ring is used by no word until then).
    fn grow(&self, threshold: u32) {
        let (ring, parity) = self.occupant.rings.push(threshold);
        let ((), _) = self.update(self.load(), |word| {
            if word.state() == State::Closed && !word.counts_calls() {
                let (last, live) = word.failures();
                let from = self.occupant.rings.of(word);
                for back in 0..live {
                    let claim = last.wrapping_sub(back) % CLAIMS_MODULUS;
                    match from.read(word.epoch(), claim) {
                        Some(at) => ring.copy(word.epoch(), claim, at),
                        None => {
                            // A live claim's slot is written before its
                            // claim: the word has moved on.
                            if let Err(moved) = self.unchanged(word) {
                                return Step::Moved(moved);
                            }
                        }
                    }
                }
            }
            Step::Write(word.with_ring_parity(parity), ())
        });
    }
}
