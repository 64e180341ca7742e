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
        let from = self.config();
        let old = Limits::of(from);
        let reshape = crate::reconfigure::reshapes(from, config);
        let rate = config.policy().counts_calls();
        let threshold = config.failure_threshold();
        if !rate && threshold > self.occupant.rings.newest().len() {
            // Twice: the second ends at ring parity 0 (see `Rings`).
            self.grow(threshold);
            self.grow(threshold);
        }
        self.slot.reconfigure(config, number, reshape);
        self.occupant.reconfigure(config, self.slot.windows());
        let now = self.occupant.time.now();
        // HEAD_TOUCH (AcqRel): see `sync`.
        let word = Word::from_bits(self.slot.words.head.fetch_add(0, HEAD_TOUCH));
        let throttle = config.throttle_k().is_some();
        let was_rate = from.policy().counts_calls();
        let ((), _) = self.update(word, |word| {
            let mut next = self.marked(word, config);
            if word.state() == State::Closed && next.counts_calls() == word.counts_calls() {
                // The policy's window as it was (a verdict that helped
                // change the policy has emptied it already).
                if !rate && !was_rate {
                    match self.kept(word, old, threshold - 1, now) {
                        Ok(keep) if keep < word.failures().1 => {
                            next = next.with_failures(word.failures().0, keep);
                        }
                        Ok(_) => {}
                        Err(moved) => return Step::Moved(moved),
                    }
                }
            }
            if next == word {
                Step::Done(())
            } else {
                Step::Write(next, ())
            }
        });
        if reshape && throttle {
            // A new throttle sheds nothing until its window says so.
            self.slot.words.share.reset(self.load().epoch());
        }
    }

    /// `word` with the marks of `config` (its policy, its timing or a
    /// `count` word's ring parity, whether it throttles); a closed word
    /// given another policy starts an empty window (SPEC §12: no
    /// failures). What a reconfiguration writes, and what a verdict that
    /// finds the settings ahead of the word writes to help it.
    pub(super) fn marked(&self, word: Word, config: &Config) -> Word {
        let rate = config.policy().counts_calls();
        let policy_changed = word.counts_calls() != rate;
        // The timed mark: a `rate` word's timing, a `count` word's ring
        // parity (the newest ring's, for a word that was `rate`).
        let timed = match (rate, policy_changed) {
            (true, _) => config.times_calls(),
            (false, true) => self.occupant.rings.newest_parity(),
            (false, false) => word.ring_parity(),
        };
        let next = word.with_marks(rate, timed, config.throttle_k().is_some());
        if policy_changed && word.state() == State::Closed {
            next.with_failures(0, 0)
        } else {
            next
        }
    }

    /// The word a verdict judged by `config` (the settings in force when
    /// it arrived) decides from, `word` or later: if `word` is of another
    /// policy than `config`, a reconfiguration has put `config` in force
    /// and not yet marked the word, which the verdict then does (helping:
    /// no verdict waits for a reconfiguration).
    #[cold]
    #[inline(never)]
    pub(super) fn helped(&self, word: Word, config: &Config) -> Word {
        let ((), written) = self.update(word, |word| {
            if word.counts_calls() == config.policy().counts_calls() {
                Step::Done(())
            } else {
                Step::Write(self.marked(word, config), ())
            }
        });
        written.map_or_else(|| self.load(), |written| written.to)
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
            if word.counts_calls() {
                // A `rate` word's timed mark is no parity: the word takes
                // the newest ring's when its policy becomes `count`.
                return Step::Done(());
            }
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
