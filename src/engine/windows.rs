//! How the engine keeps a closed circuit's window: `count`'s ring of
//! failure times, claimed in the compare-and-swap loop, and `rate`'s
//! tallies, added to after it.

use super::{Engine, Now, Step};
use crate::epoch::Epoch;
use crate::model::{self, Grant, Head};
use crate::packed::{CLAIMS_MODULUS, Cursor, Word};
use crate::policy::{self, Outcome};

impl Engine<'_> {
    /// A closed verdict of a `rate` circuit, current when its word was
    /// read: added to the tallies; a failed or slow one then opens the
    /// circuit if the window makes the rule hold and the permit's epoch is
    /// still current (the move is the usual compare-and-swap, so exactly
    /// one caller opens).
    #[inline(never)]
    pub(super) fn record_rated(self, grant: Grant, outcome: Outcome, now: &Now<'_>) {
        let Some(tallies) = self.slot.tallies.as_deref() else {
            return;
        };
        let at = self.occupant.window_time.now();
        tallies.add(grant.epoch(), outcome, at);
        if !(outcome.failed || outcome.slow) || !tallies.holds(self.config(), grant.epoch(), at) {
            return;
        }
        now.get();
        let ((), written) = self.update(self.load(), |word| {
            let (head, cursor) = word.unpack();
            match model::trip(head, grant) {
                Some(open) => Step::Write(Word::next(&head, cursor, &open), ()),
                None => Step::Done(()),
            }
        });
        if let Some(written) = written {
            self.installed(written, None, now);
        }
    }

    /// The step of a closed failure at `at` from `word`: either the
    /// failures it completes open the circuit, or it claims the next slot of
    /// the ring. The time is written into that slot before the claim, so
    /// whoever sees a claim sees its time (`sync::RECORD_LOAD`), and the
    /// decision never waits for, or is left to, another thread. Kept out of
    /// line: it is not the path the fast cases share.
    #[inline(never)]
    pub(super) fn record_failure(
        &self,
        word: Word,
        head: &Head,
        cursor: Cursor,
        grant: Grant,
        at: u64,
    ) -> Step<()> {
        let threshold = self.config().failure_threshold();
        let live = (cursor.live + 1).min(threshold);
        if policy::could_open(self.config(), live) {
            let earlier = (live - 1).min(threshold - 1);
            let counted = match self.count_in_window(word, head.epoch, cursor.claims, earlier, at) {
                Ok(counted) => counted,
                Err(moved) => return Step::Moved(moved),
            };
            if policy::could_open(self.config(), counted + 1)
                && let Some(next) = model::trip(*head, grant)
            {
                return Step::Write(Word::next(head, cursor, &next), ());
            }
        }
        let claim = (cursor.claims + 1) % CLAIMS_MODULUS;
        if let Err(moved) = self
            .occupant
            .ring
            .write(head.epoch, claim, at, || self.unchanged(word))
        {
            return Step::Moved(moved);
        }
        Step::Write(
            Word::pack(
                head,
                Cursor {
                    claims: claim,
                    live,
                    ..cursor
                },
            ),
            (),
        )
    }

    /// How many of the `count` claims of `epoch` ending with `last` (those
    /// of `word`) are in the window at `now`, reading oldest first and
    /// stopping once the threshold is out of reach. `Err` with the current
    /// word when a slot holds another claim and `word` is out of date.
    fn count_in_window(
        &self,
        word: Word,
        epoch: Epoch,
        last: u32,
        count: u32,
        now: u64,
    ) -> Result<u32, Word> {
        let (mut counted, mut unread) = (0, count);
        for at in self.occupant.ring.recent(epoch, last, count) {
            unread -= 1;
            let Some(at) = at else {
                // Each of these claims wrote its slot before it was
                // claimed, and only a later claim or epoch replaces it:
                // the word has changed.
                self.unchanged(word)?;
                // Unreachable with the word unchanged; if it were reached,
                // the claim's time is unknown and it is not counted.
                debug_assert!(false, "a claim of a current word lost its slot");
                continue;
            };
            if policy::in_window(self.config(), at, now) {
                counted += 1;
            } else if !policy::could_open(self.config(), counted + unread + 1) {
                return Ok(counted);
            }
        }
        Ok(counted)
    }
}
