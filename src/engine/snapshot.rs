//! What a circuit shows: its state, a consistent snapshot, and the
//! transitions the engine reports to its listeners.

use std::time::Duration;

use super::Engine;
use super::Now;
use super::Written;
use super::records::end_of;
use crate::grade::{self, Shed};
use crate::model::{self, Head, Opening};
use crate::packed::Word;
use crate::policy::{Failures, Rule, View};
use crate::ring::Stamp;
use crate::snapshot::{Snapshot, State};
use crate::sync;
use crate::transition::{Reason, Transition};

/// How many times a snapshot re-reads a circuit that changes under it
/// before it settles for the last reading.
const SNAPSHOT_TRIES: u32 = 64;

impl Engine<'_> {
    /// The current state: one load.
    #[inline]
    pub(crate) fn state(&self) -> State {
        self.load().state()
    }

    /// A consistent reading of the circuit: the word, then the records it
    /// points to, then the word again; retried (boundedly) while it changes.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let now = self.now().get();
        let mut word = self.load();
        let mut tries = 0;
        loop {
            tries += 1;
            let last_try = tries >= SNAPSHOT_TRIES;
            let (head, cursor) = word.unpack();
            let mut head = head;
            let (opening, mut complete) = self.opening_seen(&mut head, now);
            let window = if let Some(tallies) = self.slot.tallies() {
                let at = self.occupant.window_time.now();
                View {
                    counts: tallies.sum(self.config(), head.epoch, at),
                    ..View::default()
                }
            } else {
                let live = cursor.live;
                let mut failures = Vec::with_capacity(live as usize);
                for at in self
                    .occupant
                    .rings
                    .of(word)
                    .recent(head.epoch, cursor.claims, live)
                {
                    match at {
                        Some(at) => failures.push(at),
                        None => complete = false,
                    }
                }
                Failures::from_times(failures).view(self.config(), now)
            };
            let again = self.load();
            if (complete && again == word) || last_try {
                let mut shown = model::snapshot(&head, opening, window);
                if word.graded() {
                    self.show_grade(&mut shown, word, now);
                }
                return shown;
            }
            sync::spin_loop();
            word = again;
        }
    }

    /// What the snapshot of the closed `word` at `now` shows of its graded
    /// admission (SPEC §11): the shares in use and the throttle's window.
    #[cold]
    fn show_grade(&self, shown: &mut Snapshot, word: Word, now: u64) {
        let epoch = word.epoch();
        let ramp = if word.ramping() {
            self.phase_since(epoch, &self.now_at(now))
                .ok()
                .and_then(|(_, since)| grade::ramp::shed(self.config(), since, now))
                .unwrap_or(Shed::NONE)
        } else {
            Shed::NONE
        };
        let (throttle, asked) = match self.slot.throttle() {
            Some(throttle) => {
                let at = self.occupant.window_time.now();
                let share = self.slot.words.share.get(epoch);
                let rate = self.slot.tallies();
                (share, throttle.asked(self.config(), epoch, at, rate))
            }
            None => (Shed::NONE, grade::throttle::Asked::default()),
        };
        grade::show(shown, ramp, throttle, asked);
    }

    /// What a snapshot shows of `head`'s last opening (filling in a
    /// half-open head's n), and whether the records agreed with the word.
    fn opening_seen(&self, head: &mut Head, now: u64) -> (Opening, bool) {
        let words = &self.slot.words;
        let missing = Opening {
            at: now,
            retry_at: now,
        };
        match head.state {
            State::Closed => (missing, true),
            State::Open => {
                let stamp = Stamp {
                    epoch: head.epoch,
                    claim: head.n,
                };
                match (words.phase.read(stamp), words.opening.read(stamp)) {
                    (Some(last), Some(at)) => {
                        let retry_at = end_of(last).unwrap_or(u64::MAX);
                        (Opening { at, retry_at }, true)
                    }
                    // Opened an instant ago (its opener is about to stamp
                    // it), or this reading of the word is out of date.
                    _ => (missing, false),
                }
            }
            State::HalfOpen => {
                let Some((n, _)) = words.phase.read_epoch(head.epoch) else {
                    return (missing, false);
                };
                head.n = n;
                match words.opening.read_any() {
                    Some((_, at)) => (Opening { at, retry_at: at }, true),
                    None => (missing, false),
                }
            }
        }
    }

    /// Tells the listeners about a transition this thread just made, with
    /// the opening as a snapshot would show it after the change (out of
    /// line: only a new epoch of a circuit with listeners comes here).
    #[cold]
    #[inline(never)]
    pub(super) fn report(&self, written: Written, manual: Option<Reason>, now: &Now<'_>) {
        let (from, to) = (written.from.state(), written.to.state());
        if let Some(reason) = manual.or_else(|| model::reason(from, to)) {
            let mut head = written.to.unpack().0;
            let (opening, seen) = self.opening_seen(&mut head, now.get());
            let shown = model::snapshot(&head, opening, View::default());
            self.occupant.events.emit(&Transition {
                key: self.occupant.names.key(),
                from,
                to,
                reason,
                at: Duration::from_nanos(now.get()),
                openings: shown.openings,
                open_for: shown.open_for.filter(|_| seen),
            });
        }
    }
}
