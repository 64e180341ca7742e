//! The one path by which both kinds of permit conclude (SPEC §3): a
//! success on a closed circuit without failures is one load and one
//! compare, inline; any other verdict goes out of line, to the word, then
//! (if it may write) to the engine of the permit's circuit.

use crate::engine::Engine;
use crate::model::{self, Effect, Grant};
use crate::packed::Word;
use crate::policy;
use crate::slot::{Occupant, Slot};
use crate::snapshot::State;
use crate::verdict::Verdict;

/// Whose verdict a permit gives: the circuit it borrows, or (an owned
/// permit, `None`) the circuit of its slot with the permit's tag, if it is
/// still there. Two scalars, so that it travels in registers.
#[derive(Clone, Copy)]
pub(crate) struct Circuit<'a> {
    pub(crate) borrowed: Option<&'a Occupant>,
    pub(crate) tag: u32,
}

impl Engine<'_> {
    /// The verdict of a permit of this circuit, admitted at `started`
    /// (read only by a circuit that times its calls).
    #[inline]
    pub(crate) fn verdict(self, grant: Grant, verdict: Verdict, started: u64) {
        let circuit = Circuit {
            borrowed: Some(self.occupant),
            // Asked only of an owned permit.
            tag: 0,
        };
        self.slot.conclude(grant, verdict, started, circuit);
    }
}

impl Slot {
    /// The verdict of a permit of `circuit` (SPEC §3), admitted at
    /// `started`, for both kinds of permit. A success on a closed `count`
    /// circuit without failures is one load and one compare, here, inline;
    /// everything else goes out of line (a `rate` circuit's closed success
    /// first of all, so that it adds nothing to the registers the `count`
    /// path inlined in a caller's loop holds).
    #[allow(clippy::inline_always)] // measured: a closed success in a loop of its own 2.8 ns without, 1.9 with
    #[inline(always)]
    pub(crate) fn conclude(
        &'static self,
        grant: Grant,
        verdict: Verdict,
        started: u64,
        circuit: Circuit<'_>,
    ) {
        if verdict == Verdict::Success {
            let word = self.load();
            if word.quiet_success(grant) {
                return;
            }
            if let Some(occupant) = circuit.borrowed
                && Self::count_quickly(word, grant, started, occupant)
            {
                return;
            }
        } else if verdict == Verdict::Failure
            && let Some(occupant) = circuit.borrowed
        {
            return self.conclude_failure(grant, started, occupant);
        }
        self.conclude_loudly(grant, verdict, started, circuit);
    }

    /// A failure of a borrowed permit of `occupant`, admitted at
    /// `started`: a counted failure of a `count` circuit is recorded by
    /// its engine here ([`Engine::counted_failure`], inline: one call for
    /// the whole of it); any other goes on from the word.
    #[inline(never)]
    fn conclude_failure(&'static self, grant: Grant, started: u64, occupant: &Occupant) {
        let word = self.load();
        if word.counted_failure(grant) {
            Engine::new(self, occupant).counted_failure(grant);
        } else {
            let circuit = Circuit {
                borrowed: Some(occupant),
                tag: 0,
            };
            self.conclude_from_word(word, grant, Verdict::Failure, started, circuit, None);
        }
    }

    /// A success that is not quiet, admitted at `started`: if it is a
    /// closed success of a `rate` circuit read on the coarse time, not
    /// slow, and this thread's last verdict on its window was at the
    /// permit's epoch and the coarse time's bucket, it is added to that
    /// cell here, inline: a mask, a coarse read, one thread-local read and
    /// three compares. `false` if not (nothing was done).
    #[inline]
    fn count_quickly(word: Word, grant: Grant, started: u64, occupant: &Occupant) -> bool {
        if word.accepted_success(grant) {
            return Self::accept_quickly(grant, occupant);
        }
        word.counted_success(grant)
            && occupant.count_success_quickly(grant.epoch(), word.times_calls(), started)
    }

    /// A throttling `count` circuit's closed success with no failures to
    /// clear: an accept (SPEC §11), added to this thread's cell of the
    /// throttle's window if it can be quickly (see
    /// [`Occupant::accept_quickly`]); out of line, so that the inline path
    /// of every other circuit stays as it was.
    #[inline(never)]
    fn accept_quickly(grant: Grant, occupant: &Occupant) -> bool {
        occupant.accept_quickly(grant.epoch())
    }

    /// A verdict that is not a quiet success, nor a quick one
    /// ([`count_quickly`](Self::count_quickly)), nor a failure of a
    /// borrowed permit ([`conclude_failure`](Self::conclude_failure)): a
    /// closed success of a borrowed permit of a `rate` circuit (not slow)
    /// is added to its thread's lane; everything else goes on from the
    /// word.
    #[inline(never)]
    fn conclude_loudly(
        &'static self,
        grant: Grant,
        verdict: Verdict,
        started: u64,
        circuit: Circuit<'_>,
    ) {
        if verdict == Verdict::Success
            && let Some(occupant) = circuit.borrowed
        {
            let word = self.load();
            if word.counted_success(grant)
                && occupant.count_success(self, grant.epoch(), word.times_calls(), started)
            {
                return;
            }
        }
        self.conclude_from_word(self.load(), grant, verdict, started, circuit, None);
    }

    /// A failure carrying the server's `hint` (nanoseconds) of when to
    /// come back (SPEC §10): straight to the word and the engine, which
    /// honour it if this verdict opens the circuit.
    #[inline(never)]
    pub(crate) fn conclude_with_hint(
        &'static self,
        grant: Grant,
        started: u64,
        circuit: Circuit<'_>,
        hint: u64,
    ) {
        let word = self.load();
        self.conclude_from_word(word, grant, Verdict::Failure, started, circuit, Some(hint));
    }

    /// A verdict that may write, from `word` (just read): decided from the
    /// word alone when it changes nothing (stale, an ignore on a closed
    /// circuit, a success with no failures to clear), otherwise by the
    /// engine of the permit's circuit, if it is still in the slot, with the
    /// failure's `hint`. (The `metrics` feature counts verdicts where the
    /// permits give them.)
    #[allow(clippy::inline_always)] // measured: one call less for every verdict that writes
    #[inline(always)]
    fn conclude_from_word(
        &'static self,
        word: Word,
        grant: Grant,
        verdict: Verdict,
        started: u64,
        circuit: Circuit<'_>,
        hint: Option<u64>,
    ) {
        let (head, cursor) = word.unpack();
        if head.state == State::Closed && !cursor.marks.rate && !cursor.marks.throttle {
            match model::verdict(self.config(), head, grant, verdict) {
                Effect::Stale | Effect::Nothing => return,
                Effect::Record(outcome) if !outcome.failed && cursor.live == 0 => return,
                _ => {}
            }
        }
        let guard;
        let occupant = if let Some(occupant) = circuit.borrowed {
            occupant
        } else {
            guard = self.occupant();
            match guard.as_deref() {
                Some(occupant) if occupant.tag() == circuit.tag => occupant,
                // Gone, or another circuit took the slot: the permit is
                // stale.
                _ => return,
            }
        };
        let slow = word.times_calls()
            && verdict != Verdict::Ignore
            && policy::is_slow(self.config(), occupant.time().now().saturating_sub(started));
        Engine::new(self, occupant).verdict_from(word, grant, verdict, slow, hint);
    }
}
