//! Graded admission (SPEC §11): a closed circuit that ramps up or
//! throttles decides its admission out of line, from the share each rule
//! sheds and one draw of this thread's generator; and what a ramp changes
//! about a relapse.

use super::{Engine, Step};
use crate::epoch::Epoch;
use crate::grade::{self, Grading, Shed, ramp};
use crate::model::{Decision, Grant};
use crate::packed::Word;

impl Engine<'_> {
    /// The admission of the closed `word`, whose admission is graded
    /// ([`Word::graded`]), `grant` its closed permit: the throttle's share
    /// (one load), and while the epoch ramps up the ramp's (the `phase`
    /// record and the clock; the first admission to find the ramp over
    /// clears it from the word). A call the throttle sheds is one more
    /// request in its window.
    #[inline]
    pub(super) fn graded(self, word: Word, grant: Grant) -> Decision {
        let by_throttle = self.slot.words.share.get(word.epoch());
        if by_throttle == Shed::NONE && !word.ramping() {
            // A throttling circuit that sheds nothing now: one load.
            return Decision::Granted(grant);
        }
        self.shedding(word, grant, by_throttle)
    }

    /// [`graded`](Self::graded) when a rule may shed the call: the
    /// throttle sheds `by_throttle`, or the epoch ramps up.
    #[cold]
    #[inline(never)]
    fn shedding(self, word: Word, grant: Grant, by_throttle: Shed) -> Decision {
        let epoch = word.epoch();
        let throttle = self.slot.throttle();
        let by_ramp = if word.ramping() {
            match self.ramp_shed(word, epoch) {
                Ok(shed) => shed,
                // The word moved on: admission from the new one.
                Err(()) => return self.acquire(),
            }
        } else {
            Shed::NONE
        };
        if by_ramp == Shed::NONE && by_throttle == Shed::NONE {
            return Decision::Granted(grant);
        }
        match grade::decide(by_ramp, by_throttle, grade::draw()) {
            None => Decision::Granted(grant),
            Some(why) => {
                if why == Grading::Throttle
                    && let Some(throttle) = throttle
                {
                    let now = self.occupant.window_time.now();
                    let share = &self.slot.words.share;
                    let rate = self.slot.tallies();
                    throttle.ask(self.config(), share, epoch, false, now, rate);
                }
                Decision::shed(why)
            }
        }
    }

    /// The share the ramp of the closed epoch of `word` sheds now; the
    /// ramp is ended in the word once it is over. `Err` when the word has
    /// left the epoch.
    fn ramp_shed(&self, word: Word, epoch: Epoch) -> Result<Shed, ()> {
        let now = self.now();
        let (_, since) = self.phase_since(epoch, &now).map_err(drop)?;
        let shed = ramp::shed(self.config(), since, now.get());
        if shed.is_none() {
            self.end_ramp(word);
        }
        Ok(shed.unwrap_or(Shed::NONE))
    }

    /// Clears the ramp from the closed epoch of `word` (its ramp is over),
    /// unless the word has left it.
    #[cold]
    fn end_ramp(&self, word: Word) {
        let epoch = word.epoch();
        let ((), _) = self.update(word, |word| {
            if word.ramping() && word.epoch() == epoch {
                Step::Write(word.ramp_over(), ())
            } else {
                Step::Done(())
            }
        });
    }

    /// For a trip at `at` of the closed epoch of `word`: the n of the
    /// opening before it if the epoch ramps up and `at` is within the ramp
    /// (SPEC §11: the trip opens as the next in a row), else `None`. `Err`
    /// with the current word when the word has left the epoch.
    #[inline]
    pub(super) fn relapse(&self, word: Word, at: u64) -> Result<Option<u32>, Word> {
        if word.ramping() {
            self.relapse_in_ramp(word, at)
        } else {
            Ok(None)
        }
    }

    /// [`relapse`](Self::relapse) for a word that ramps up, out of line:
    /// a trip without a ramp reads nothing more.
    #[cold]
    #[inline(never)]
    fn relapse_in_ramp(&self, word: Word, at: u64) -> Result<Option<u32>, Word> {
        let (n, since) = self.phase_since(word.epoch(), &self.now_at(at))?;
        Ok(ramp::within(self.config(), since, at).then_some(n))
    }
}
