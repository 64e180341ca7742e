//! A reconfiguration's writes to the state word (SPEC §12): a ring grown
//! for a raised threshold, and the failures a `count` circuit keeps under a
//! smaller one.

use std::sync::PoisonError;

use super::{Engine, Step};
use crate::config::Config;
use crate::packed::{CLAIMS_MODULUS, Word};
use crate::policy::Limits;
use crate::snapshot::State;
use crate::sync::HEAD_TOUCH;

impl Engine<'_> {
    /// Puts `config` (interned, numbered `number`, of the slot's shape) in
    /// force: every admission and verdict from now on reads it, and
    /// nothing transitions. A `count` threshold above the ring's slots
    /// first grows the ring ([`grow`](Self::grow)). A closed `count` word
    /// keeps its newest failures still in its old window, at most the new
    /// threshold less one (see [`kept`](Self::kept); its
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
        let old = Limits::of(self.config());
        let threshold = config.failure_threshold();
        if !config.policy().counts_calls() && threshold > self.occupant.rings.newest().len() {
            // Twice: the second ends at ring parity 0 (see `Rings`).
            self.grow(threshold);
            self.grow(threshold);
        }
        self.occupant.reconfigure(config);
        self.slot.reconfigure(config, number);
        let now = self.occupant.time.now();
        // HEAD_TOUCH (AcqRel): see `sync`.
        let word = Word::from_bits(self.slot.words.head.fetch_add(0, HEAD_TOUCH));
        let ((), _) = self.update(word, |word| {
            if word.state() != State::Closed || word.counts_calls() {
                return Step::Done(());
            }
            match self.kept(word, old, threshold - 1, now) {
                Ok(keep) if keep < word.failures().1 => {
                    Step::Write(word.with_failures(word.failures().0, keep), ())
                }
                Ok(_) => Step::Done(()),
                Err(moved) => Step::Moved(moved),
            }
        });
    }

    /// How many of the closed `count` word's live failures a
    /// reconfiguration at `now` keeps: the newest, as long as they are in
    /// the window of the `old` limits (a failure that has left it is
    /// gone, and a wider window does not bring it back), at most `most`.
    /// `Err` with the current word when a claim's slot shows `word` moved.
    fn kept(&self, word: Word, old: Limits, most: u32, now: u64) -> Result<u32, Word> {
        let (last, live) = word.failures();
        let ring = self.occupant.rings.of(word);
        let mut kept = 0;
        while kept < live.min(most) {
            let claim = last.wrapping_sub(kept) % CLAIMS_MODULUS;
            match ring.read(word.epoch(), claim) {
                Some(at) if old.in_window(at, now) => kept += 1,
                Some(_) => break,
                None => {
                    self.unchanged(word)?;
                    break;
                }
            }
        }
        Ok(kept)
    }

    /// One step of a ring's growth for `threshold` (see
    /// [`Rings`](crate::ring::Rings)): pushes a ring, copies into it the
    /// live claims of the word (closed; none otherwise), and flips the
    /// word's ring parity to it; again from the word a lost
    /// compare-and-swap finds (the new ring is used by no word until then).
    ///
    /// The claims move on by the new ring's length as they are copied (a
    /// claim keeps its slot): a closed word after a growth never has the
    /// bits of one before it, so a failure that read the word before the
    /// growth, and wrote its time in the ring that word named, cannot
    /// claim on a word whose ring is another (two flips of the parity
    /// alone would bring the bits back).
    fn grow(&self, threshold: u32) {
        let (ring, parity) = self.occupant.rings.push(threshold);
        let shift = ring.len();
        let ((), _) = self.update(self.load(), |word| {
            let mut next = word.with_ring_parity(parity);
            if word.state() == State::Closed && !word.counts_calls() {
                let (last, live) = word.failures();
                let from = self.occupant.rings.of(word);
                for back in 0..live {
                    let claim = last.wrapping_sub(back) % CLAIMS_MODULUS;
                    match from.read(word.epoch(), claim) {
                        Some(at) => ring.copy(word.epoch(), (claim + shift) % CLAIMS_MODULUS, at),
                        None => {
                            // A live claim's slot is written before its
                            // claim: the word has moved on.
                            if let Err(moved) = self.unchanged(word) {
                                return Step::Moved(moved);
                            }
                        }
                    }
                }
                next = next.with_failures((last + shift) % CLAIMS_MODULUS, live);
            }
            Step::Write(next, ())
        });
    }
}
