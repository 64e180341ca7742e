//! How the engine keeps a closed circuit's window: `count`'s ring of
//! failure times, claimed in the compare-and-swap loop, and `rate`'s
//! tallies, added to after it.

use super::{Engine, Now, Step, Written};
use crate::model::{self, Grant};
use crate::packed::{CLAIMS_MODULUS, Word};
use crate::policy::{Limits, Outcome};
use crate::ring::Ring;

impl Engine<'_> {
    /// A closed verdict of a `rate` circuit, judged by `config` (the
    /// settings in force when it arrived) against their window `tallies`
    /// (and `throttle`, if it throttles), current when its word was
    /// read: added to the tallies; a failed or slow one then opens the
    /// circuit if the window makes the rule hold and the permit's epoch is
    /// still current (the move is the usual compare-and-swap, so exactly
    /// one caller opens).
    #[inline(never)]
    pub(super) fn record_rated(
        self,
        grant: Grant,
        outcome: Outcome,
        now: &Now<'_>,
        config: &crate::config::Config,
        tallies: &'static crate::policy::Tallies,
        throttle: Option<&'static crate::grade::Throttle>,
    ) {
        let at = self.occupant.window_time.now();
        if tallies.add(grant.epoch(), outcome, at)
            && let Some(throttle) = throttle
        {
            let share = &self.slot.words.share;
            throttle.entered(config, share, grant.epoch(), at, tallies);
        }
        if !(outcome.failed || outcome.slow) || !tallies.holds(config, grant.epoch(), at) {
            return;
        }
        let at = now.get();
        let ((), written) = self.update(self.load(), |word| {
            let (head, cursor) = word.unpack();
            let relapse = match self.relapse(word, at) {
                Ok(relapse) => relapse,
                Err(moved) => return Step::Moved(moved),
            };
            match model::trip(head, grant, relapse) {
                Some(open) => Step::Write(Word::next(&head, cursor, &open), ()),
                None => Step::Done(()),
            }
        });
        if let Some(written) = written {
            self.installed(written, None, now);
        }
    }

    /// A counted failure ([`Word::counted_failure`]) of a permit of this
    /// circuit, decided from scratch: the time is read, then the word, and
    /// the failure is recorded ([`record_failure`](Self::record_failure))
    /// while the word is still in the permit's closed epoch (once it is
    /// not, the verdict is stale and changes nothing). The whole of a
    /// `count` circuit's closed failure, inline in its one caller.
    #[inline]
    pub(crate) fn counted_failure(self, grant: Grant) {
        // Read the time before the word the failure is decided on: it can
        // then never be later than the claim that records it, even if this
        // verdict loses the slot to another one and writes it late.
        let at = self.occupant.time.now_inline();
        let settings = self.slot.config_number();
        if Limits::numbered(settings).threshold() == 0 {
            // Settings of `rate` put in force before the word was marked
            // (SPEC §12): a verdict under them, which marks it.
            self.verdict_from(
                self.load(),
                grant,
                crate::verdict::Verdict::Failure,
                false,
                None,
            );
            return;
        }
        let first = self.load();
        let (opens, written) = self.update(first, |word| {
            if word.counted_failure(grant) {
                self.record_failure(word, grant, at, settings)
            } else if first.counted_failure(grant) && word.counts_calls() {
                self.before_new_policy(first, word, grant, at, settings)
            } else {
                Step::Done(false)
            }
        });
        if let Some(written) = written {
            if opens {
                self.opened(written, at);
            } else {
                self.settle(settings, at);
            }
        } else if !first.counted_failure(grant) && first.counts_calls() {
            // The word took a `rate` policy before this failure read it
            // (SPEC §12): judged as a verdict under the settings now.
            self.verdict_from(first, grant, crate::verdict::Verdict::Failure, false, None);
        }
    }

    /// A counted failure at `at` that arrived while its circuit counted
    /// failures (`first`, under the settings numbered `settings`) and
    /// found `word` with a `rate` window since (SPEC §12: a new policy
    /// starts an empty window). It is judged as it arrived: if the
    /// failures of `first` and it make the old threshold in the old
    /// window, the circuit opens (from `word`, if still in the permit's
    /// closed epoch); otherwise it is left in the window the change
    /// emptied.
    #[cold]
    #[inline(never)]
    pub(super) fn before_new_policy(
        &self,
        first: Word,
        word: Word,
        grant: Grant,
        at: u64,
        settings: u32,
    ) -> Step<bool> {
        let limits = Limits::numbered(settings);
        let (claims, live) = first.failures();
        if limits.threshold() == 0 || !limits.could_open((live + 1).min(limits.threshold())) {
            return Step::Done(false);
        }
        let ring = self.occupant.rings.of(first);
        match self.all_in_window(first, ring, limits, claims, limits.threshold() - 1, at) {
            Ok(true) => self.trip(word, grant, at),
            // A claim of `first` was overwritten: it had moved on before.
            Ok(false) | Err(_) => Step::Done(false),
        }
    }

    /// After a failure at `at` was claimed under the settings numbered
    /// `settings`: if a reconfiguration put others in force meanwhile
    /// (SPEC §12), the claim may have come after its check of the word,
    /// and is judged again under the new settings, as a failure arriving
    /// after the change is: the failures it completes open the circuit.
    #[inline]
    pub(super) fn settle(&self, settings: u32, at: u64) {
        // See `sync::HEAD_TOUCH`.
        crate::sync::acquire_fence();
        if self.slot.config_number() != settings {
            self.judge_again(at);
        }
    }

    #[cold]
    #[inline(never)]
    fn judge_again(&self, at: u64) {
        let (opens, written) = self.update(self.load(), |word| {
            if word.state() != crate::snapshot::State::Closed || word.counts_calls() {
                return Step::Done(false);
            }
            let limits = Limits::of(self.config());
            let (claims, live) = word.failures();
            if !limits.could_open(live) {
                return Step::Done(false);
            }
            let ring = self.occupant.rings.of(word);
            match self.all_in_window(word, ring, limits, claims, limits.threshold(), at) {
                Ok(true) => {
                    let grant = Grant::new(crate::model::PermitKind::Closed, word.epoch());
                    self.trip(word, grant, at)
                }
                Ok(false) => Step::Done(false),
                Err(moved) => Step::Moved(moved),
            }
        });
        if opens && let Some(written) = written {
            self.opened(written, at);
        }
    }

    /// After a counted failure at `at` that opened the circuit (the only
    /// write of one that starts an epoch): see
    /// [`installed`](Self::installed).
    #[cold]
    #[inline(never)]
    fn opened(&self, written: Written, at: u64) {
        self.installed(written, None, &self.now_at(at));
    }

    /// [`record_failure`](Self::record_failure), out of line, for the
    /// verdicts that do not take [`counted_failure`](Self::counted_failure).
    #[inline(never)]
    pub(super) fn record_failure_from(
        &self,
        word: Word,
        grant: Grant,
        at: u64,
        settings: u32,
    ) -> Step<()> {
        self.record_failure(word, grant, at, settings).map(drop)
    }

    /// The step of a closed failure at `at` from `word` (a counted failure
    /// under `grant`): either the failures it completes open the circuit,
    /// or it claims the next slot of the ring (the step's output: whether
    /// its write opens the circuit). The time is written into that slot
    /// before the claim, so whoever sees a claim sees its time
    /// (`sync::RECORD_LOAD`), and the decision never waits for, or is left
    /// to, another thread.
    #[allow(clippy::inline_always)] // measured: a counted failure inlines whole
    #[inline(always)]
    fn record_failure(&self, word: Word, grant: Grant, at: u64, settings: u32) -> Step<bool> {
        // The settings numbered `settings`, read once before the loop: if
        // others replace them meanwhile, `settle` judges the claim again.
        let limits = Limits::numbered(settings);
        let ring = self.occupant.rings.of(word);
        let (claims, live) = word.failures();
        let live = (live + 1).min(limits.threshold());
        let epoch = word.epoch();
        // Only a failure that makes the threshold since the last clear
        // (`live` saturates there) can open the circuit: if the threshold
        // less one failures before it are all in the window.
        if limits.could_open(live) {
            match self.all_in_window(word, ring, limits, claims, limits.threshold() - 1, at) {
                Ok(true) => return self.trip(word, grant, at),
                Ok(false) => {}
                Err(moved) => return Step::Moved(moved),
            }
        }
        let claim = (claims + 1) % CLAIMS_MODULUS;
        if let Err(moved) = ring.write(epoch, claim, at, || self.unchanged(word)) {
            return Step::Moved(moved);
        }
        Step::Write(word.with_failures(claim, live), false)
    }

    /// Whether the `count` claims of `word`'s epoch ending with `last`
    /// (those of `word`) are all in the window of `limits` at `now`,
    /// reading oldest first (the likeliest to have left it) and stopping
    /// at the first that is not. `Err` with the current word when a slot
    /// holds another claim and `word` is out of date.
    #[inline]
    fn all_in_window(
        &self,
        word: Word,
        ring: &Ring,
        limits: Limits,
        last: u32,
        count: u32,
        now: u64,
    ) -> Result<bool, Word> {
        let epoch = word.epoch();
        let first = last.wrapping_sub(count).wrapping_add(1);
        for claim in (0..count).map(|next| first.wrapping_add(next) % CLAIMS_MODULUS) {
            match ring.read(epoch, claim) {
                Some(at) if limits.in_window(at, now) => {}
                Some(_) => return Ok(false),
                None => {
                    // Each of these claims wrote its slot before it was
                    // claimed, and only a later claim or epoch replaces
                    // it: the word has changed.
                    self.unchanged(word)?;
                    // Unreachable with the word unchanged; if it were
                    // reached, the claim's time is unknown and it is not
                    // counted.
                    debug_assert!(false, "a claim of a current word lost its slot");
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

impl Engine<'_> {
    /// The step of a counted failure at `at` that completes the threshold
    /// in the window: the open word, if the permit's epoch is still
    /// current (then `true`: the write opens the circuit), the next
    /// opening in a row if it relapses within a ramp (SPEC §11).
    #[cold]
    fn trip(&self, word: Word, grant: Grant, at: u64) -> Step<bool> {
        let (head, cursor) = word.unpack();
        let relapse = match self.relapse(word, at) {
            Ok(relapse) => relapse,
            Err(moved) => return Step::Moved(moved),
        };
        match model::trip(head, grant, relapse) {
            Some(next) => Step::Write(Word::next(&head, cursor, &next), true),
            None => Step::Done(false),
        }
    }
}
