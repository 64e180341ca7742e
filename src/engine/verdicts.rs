//! The writes a call or an operator asks for: a permit's verdict (SPEC
//! §3's success, failure and ignore, with the server's hint), `force_open`,
//! `force_closed` and `reset`, and the retirement of a circuit whose slot
//! is being freed.

use super::{Engine, Now, Step};
use crate::config::Config;
use crate::model::{self, Effect, Grant, Head};
use crate::packed::{Cursor, Word};
use crate::slot::Windows;
use crate::snapshot::State;
use crate::transition::Reason;
use crate::verdict::Verdict;

impl Engine<'_> {
    /// A verdict that may write, from `word` (read by
    /// [`Slot::conclude`](crate::slot::Slot::conclude)), on a call that was
    /// `slow` or not, with the server's `hint` (nanoseconds) of when to come
    /// back, if it gave one.
    pub(crate) fn verdict_from(
        self,
        word: Word,
        grant: Grant,
        verdict: Verdict,
        slow: bool,
        hint: Option<u64>,
    ) {
        let now = Now { hint, ..self.now() };
        // The settings in force when the verdict arrives: read once, and
        // judged by throughout (see `settle` for a claim they raced).
        let (mut settings, mut windows) = self.slot.settings();
        let mut config = crate::config::numbered(settings);
        let mut word = if verdict == Verdict::Failure {
            // Read the time before the word a failure is decided on: it can
            // then never be later than the claim that records it, even if
            // this verdict loses the slot to another one and writes it late.
            now.get();
            self.load()
        } else {
            word
        };
        if word.counts_calls() != config.policy().counts_calls() {
            // A change of policy under way (SPEC §12): the settings are
            // read again after the word, which a reconfiguration marks
            // after putting its settings in force, so they are at least as
            // new as the word; a word behind them is marked by this verdict.
            (settings, windows) = self.slot.settings();
            config = crate::config::numbered(settings);
            word = self.helped(word, config);
        }
        let first = word;
        let rated = config.policy().counts_calls();
        let ((recorded, n), written) = self.update(word, |word| {
            let (mut head, cursor) = word.unpack();
            if head.state == State::HalfOpen
                && (verdict == Verdict::Failure
                    || slow
                    || (verdict == Verdict::Success && config.ramp_up().is_some()))
            {
                // A failed probe (or a slow one) opens the next opening in
                // a row, and a closing that ramps up keeps the n before it
                // (SPEC §11): its n. Nothing else a probe ends with needs it.
                if let Err(moved) = self.half_open_n(&mut head, &now) {
                    return Step::Moved(moved);
                }
            }
            let n = head.n;
            match model::timed_verdict(config, head, grant, verdict, slow) {
                Effect::Stale | Effect::Nothing => Step::Done((None, n)),
                // Judged as it arrived (SPEC §12): under `rate`, the
                // tallies of its settings record it, after the loop.
                Effect::Record(outcome) if rated => Step::Done((Some(outcome), n)),
                // Under `count`, on a word given `rate` since: a failure
                // may open from the window it arrived in; the rest is in
                // the window the change emptied.
                Effect::Record(outcome) if cursor.marks.rate && outcome.failed => self
                    .before_new_policy(first, word, grant, now.get(), settings)
                    .map(|_| (None, n)),
                Effect::Record(_) if cursor.marks.rate => Step::Done((None, n)),
                Effect::Record(outcome) if !outcome.failed && cursor.live == 0 => {
                    Step::Done((Some(outcome), n))
                }
                Effect::Record(outcome) if !outcome.failed => Step::Write(
                    Word::pack(&head, Cursor { live: 0, ..cursor }),
                    (Some(outcome), n),
                ),
                Effect::Record(outcome) => self
                    .record_failure_from(word, grant, now.get(), settings)
                    .map(|()| (Some(outcome), n)),
                Effect::Move(next) => Step::Write(Word::next(&head, cursor, &next), (None, n)),
            }
        });
        if let Some(written) = written {
            self.installed_with(written, None, n, &now);
            if verdict == Verdict::Failure && !written.new_epoch() {
                // A claim under settings replaced meanwhile (SPEC §12).
                self.settle(settings, now.get());
            }
        }
        if let Some(outcome) = recorded
            && (rated || windows.throttle.is_some())
        {
            self.windowed(grant, outcome, &now, config, windows);
        }
    }

    /// A closed verdict of its epoch, `outcome`, of a circuit that keeps a
    /// window beside its word: the `rate` window's (which a throttling
    /// `rate` circuit's throttle reads as its requests and accepts), or a
    /// request in the throttle's, an accept if it succeeded (SPEC §11).
    #[inline(never)]
    fn windowed(
        &self,
        grant: Grant,
        outcome: crate::policy::Outcome,
        now: &Now<'_>,
        config: &Config,
        windows: &'static Windows,
    ) {
        if let Some(tallies) = windows.tallies {
            self.record_rated(grant, outcome, now, config, tallies, windows.throttle);
        } else if let Some(throttle) = windows.throttle {
            let at = self.occupant.window_time.now();
            let share = &self.slot.words.share;
            throttle.ask(config, share, grant.epoch(), !outcome.failed, at, None);
        }
    }

    /// `force_open`, `force_closed` or `reset`: a step that ignores the
    /// current state but not its epoch.
    pub(crate) fn force(&self, step: impl Fn(Head) -> Head, reason: Reason) {
        let now = self.now();
        // The time of the change (an opening's), read before the word.
        now.get();
        let ((), written) = self.update(self.load(), |word| {
            let (head, cursor) = word.unpack();
            Step::Write(Word::next(&head, cursor, &step(head)), ())
        });
        if let Some(written) = written {
            self.installed(written, Some(reason), &now);
        }
    }

    /// Moves the circuit to a new closed epoch without failures, as
    /// `reset` does, telling no one: its slot is being freed.
    pub(crate) fn retire(&self) {
        let now = self.now();
        let ((), written) = self.update(self.load(), |word| {
            let (head, cursor) = word.unpack();
            Step::Write(Word::next(&head, cursor, &model::reset(head)), ())
        });
        if let Some(written) = written {
            self.stamp(written, 0, &now);
        }
    }
}
