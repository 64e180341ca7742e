//! The lock-free engine: the one compare-and-swap loop on the state word.
//!
//! Every write of the word goes through [`Engine::update`], in the shape of
//! tokio's `fetch_update_action`: load, decode, step (a function of
//! [`model`](crate::model), reading records as it needs), encode,
//! compare-and-swap; when the step changes nothing, nothing is written. A
//! closed circuit with no failures is thus only ever loaded by admission
//! and success, and those two decide inline, before the loop.
//!
//! Three kinds of memory: the packed state word (see [`packed`](crate::packed)),
//! the `opened` record (when the current or last opening happened, stamped
//! with its epoch) and the ring of failure times (see [`ring`](crate::ring)).
//! The state word is the only authority. A failure's time is written into
//! its ring slot before the compare-and-swap that claims the slot, so the
//! claim sees every earlier failure and decides the trip itself. The
//! `opened` record is written right after the compare-and-swap that opens
//! the circuit, and any thread that finds it missing writes it with its own
//! time ("helping"), so no thread ever waits for another. A closed epoch
//! that follows a closed one (`force_closed`, `reset`) stamps the record
//! too (with no time), so that it never lags the word by more than two
//! epochs and no opening from a multiple of 2^30 epochs ago can pass for a
//! new one.
//!
//! Progress: the loop goes round again only with a state word other than
//! the one it just stepped from (returned by a compare-and-swap that lost,
//! or by [`Engine::unchanged`] after a record did not match). A record
//! never sends a caller round with the same word: one that does not match a
//! word still current (for the `opened` record: a word still in the same
//! epoch) is older than it, whatever its age, and is overwritten (see
//! `ring`, whose record writes are the crate's only other loop).

use std::cell::Cell;
use std::time::Duration;

use crate::clock::Time;
use crate::config::Config;
use crate::epoch::Epoch;
use crate::model::{self, Decision, Effect, Grant, Head};
use crate::packed::{Cursor, Word};
use crate::policy::{Failures, Rule, View};
use crate::ring::{Keep, Stamp};
use crate::slot::{Occupant, Slot};
use crate::snapshot::{Snapshot, State};
use crate::sync::{self, CAS_FAILURE, CAS_SUCCESS};
use crate::transition::{Reason, Transition};
use crate::verdict::Verdict;

/// How many times a snapshot re-reads a circuit that changes under it
/// before it settles for the last reading.
const SNAPSHOT_TRIES: u32 = 64;

/// One circuit's engine: its slot and its occupant, seen together. Two
/// pointers, passed by value to the paths out of line, so that building
/// one on the fast paths writes nothing to memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Engine<'a> {
    pub(crate) slot: &'static Slot,
    pub(crate) occupant: &'a Occupant,
}

/// The time of one call, read from the clock at most once (a cell, so that
/// a step and the code after it can share it).
struct Now<'a> {
    time: &'a Time,
    at: Cell<Option<u64>>,
}

impl Now<'_> {
    #[inline]
    fn get(&self) -> u64 {
        if let Some(at) = self.at.get() {
            return at;
        }
        let at = self.time.now();
        self.at.set(Some(at));
        at
    }

    /// Forgets the time read, so that the next `get` reads the clock again.
    #[inline]
    fn forget(&self) {
        self.at.set(None);
    }
}

impl<'a> Engine<'a> {
    pub(crate) fn new(slot: &'static Slot, occupant: &'a Occupant) -> Self {
        Engine { slot, occupant }
    }

    #[inline]
    pub(crate) fn config(&self) -> &'static Config {
        self.slot.config()
    }

    #[inline]
    fn now(&self) -> Now<'a> {
        Now {
            time: &self.occupant.time,
            at: Cell::new(None),
        }
    }

    #[inline]
    fn load(&self) -> Word {
        self.slot.load()
    }

    /// Admission (SPEC §3). Closed: one load and one mask (see
    /// [`Word::closed_grant`]). Open: one load of the word and one of the
    /// `opened` record, one clock read.
    #[inline]
    pub(crate) fn acquire(self) -> Decision {
        let word = self.load();
        // A closed circuit is decided here, inline, from the word alone;
        // the other states (which need the opening time, the clock or a
        // write) go through the loop out of line.
        if let Some(grant) = word.closed_grant() {
            return Decision::Granted(grant);
        }
        if let Some(rejected) = self.still_cooling_down(word) {
            return rejected;
        }
        self.acquire_from(word)
    }

    /// Admission that reads the `opened` record or changes the word.
    #[inline(never)]
    fn acquire_from(self, word: Word) -> Decision {
        let now = self.now();
        let (admission, written) = self.update(word, |word| {
            let (head, cursor) = word.unpack();
            let opened = || self.opened_at(head.epoch, now.get());
            match model::acquire(self.config(), head, opened, || now.get()) {
                Ok((admission, None)) => Step::Done(admission),
                Ok((admission, Some(next))) => {
                    Step::Write(Word::next(&head, cursor, &next), admission)
                }
                Err(moved) => {
                    // A time read before this word could precede its
                    // opening: read the clock again for it.
                    now.forget();
                    Step::Moved(moved)
                }
            }
        });
        if let (Some(written), Decision::Granted(grant)) = (written, admission) {
            self.probe_installed(written, grant, &now);
        }
        admission
    }

    /// The rejection of an open circuit still cooling down, with its
    /// opening stamped: two loads and a clock read, without the update
    /// loop (and in a function small enough to save few registers). `None`
    /// for any other word, a missing stamp, or a cooldown that is over.
    #[inline]
    fn still_cooling_down(&self, word: Word) -> Option<Decision> {
        let (head, _) = word.unpack();
        if head.state != State::Open {
            return None;
        }
        let stamp = Stamp {
            epoch: head.epoch,
            claim: 0,
        };
        let opened = || self.slot.words.opened.read(stamp).ok_or(());
        let now = || self.occupant.time.now();
        match model::acquire(self.config(), head, opened, now) {
            Ok((admission, None)) => Some(admission),
            _ => None,
        }
    }

    /// After an admission that moved the circuit to half-open with `grant`
    /// as its first probe. A listener that panics must not leave that probe
    /// without a permit: if it unwinds, the grant is given an ignore verdict.
    #[cold]
    #[inline(never)]
    fn probe_installed(&self, written: Written, grant: Grant, now: &Now<'_>) {
        let release = Release {
            engine: self,
            grant,
        };
        self.installed(written, None, now);
        std::mem::forget(release);
    }

    /// A verdict that may write, from `word` (read by
    /// [`Slot::conclude`]), on a call that was `slow` or not.
    pub(crate) fn verdict_from(self, word: Word, grant: Grant, verdict: Verdict, slow: bool) {
        let now = self.now();
        let word = if verdict == Verdict::Failure {
            // Read the time before the word a failure is decided on: it can
            // then never be later than the claim that records it, even if
            // this verdict loses the slot to another one and writes it late.
            now.get();
            self.load()
        } else {
            word
        };
        let (rated, written) = self.update(word, |word| {
            let (head, cursor) = word.unpack();
            match model::timed_verdict(self.config(), head, grant, verdict, slow) {
                Effect::Stale | Effect::Nothing => Step::Done(None),
                // The tallies record it, after the loop: nothing to write.
                Effect::Record(outcome) if cursor.marks.rate => Step::Done(Some(outcome)),
                Effect::Record(outcome) if !outcome.failed && cursor.live == 0 => Step::Done(None),
                Effect::Record(outcome) if !outcome.failed => {
                    Step::Write(Word::pack(&head, Cursor { live: 0, ..cursor }), None)
                }
                Effect::Record(_) => self
                    .record_failure(word, &head, cursor, grant, now.get())
                    .map(|()| None),
                Effect::Move(next) => Step::Write(Word::next(&head, cursor, &next), None),
            }
        });
        if let Some(written) = written {
            self.installed(written, None, &now);
        }
        if let Some(outcome) = rated {
            self.record_rated(grant, outcome, &now);
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

    /// The one compare-and-swap loop on the state word, in the shape of
    /// tokio's `fetch_update_action`: `step` decides from a word (decoding
    /// it, asking the model, reading records as it needs) and the loop
    /// writes what it decided; a step that writes nothing returns at once.
    ///
    /// Answers the step's output and, if it wrote, the word it replaced
    /// and the word it wrote.
    ///
    /// Progress: it goes round again only with a word other than the one
    /// it stepped from, the one a compare-and-swap that lost found, or the
    /// one a step's record check found ([`Step::Moved`]).
    #[allow(clippy::inline_always)] // measured: the open rejection is 0.4 ns slower without
    #[inline(always)]
    fn update<T>(
        &self,
        mut word: Word,
        mut step: impl FnMut(Word) -> Step<T>,
    ) -> (T, Option<Written>) {
        loop {
            match step(word) {
                Step::Done(output) => return (output, None),
                Step::Moved(moved) => word = moved,
                Step::Write(next, output) => match self.cas(word, next) {
                    Ok(()) => {
                        return (
                            output,
                            Some(Written {
                                from: word,
                                to: next,
                            }),
                        );
                    }
                    Err(actual) => word = actual,
                },
            }
        }
    }

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
            let opened_epoch = match head.state {
                State::Closed => None,
                State::Open => Some(head.epoch),
                // Half-open is only entered from the open epoch just before.
                State::HalfOpen => Some(head.epoch.previous()),
            };
            let mut complete = true;
            let mut opened_at = now;
            if let Some(epoch) = opened_epoch {
                if let Some(at) = self.slot.words.opened.read(Stamp { epoch, claim: 0 }) {
                    opened_at = at;
                } else {
                    // Opened an instant ago (its opener is about to stamp
                    // it), or this reading of the word is out of date.
                    complete = false;
                }
            }
            let window = if let Some(tallies) = &self.slot.tallies {
                let at = self.occupant.window_time.now();
                View {
                    counts: tallies.sum(self.config(), head.epoch, at),
                    ..View::default()
                }
            } else {
                let live = cursor.live;
                let mut failures = Vec::with_capacity(live as usize);
                for at in self.occupant.ring.recent(head.epoch, cursor.claims, live) {
                    match at {
                        Some(at) => failures.push(at),
                        None => complete = false,
                    }
                }
                Failures::from_times(failures).view(self.config(), now)
            };
            let again = self.load();
            if (complete && again == word) || last_try {
                return model::snapshot(&head, opened_at, window);
            }
            sync::spin_loop();
            word = again;
        }
    }

    /// After a write of the word that started a new epoch: stamps the
    /// `opened` record for a new open epoch (with its opening time, the
    /// call's `now`: every rule and `force_open` open at it) or for a closed
    /// epoch after a closed one (with none: only manual changes do that, and
    /// without it the record could fall behind by any number of them), then
    /// reports the transition (`manual` gives a manual change's reason).
    fn installed(&self, written: Written, manual: Option<Reason>, now: &Now<'_>) {
        if self.stamp(written, now) {
            self.report(written.from.state(), written.to.state(), manual, now);
        }
    }

    /// The stamping half of [`installed`](Self::installed); whether the
    /// write started a new epoch.
    fn stamp(&self, written: Written, now: &Now<'_>) -> bool {
        let Written { from, to } = written;
        if from.epoch() == to.epoch() {
            return false;
        }
        let (from, to, epoch) = (from.state(), to.state(), to.epoch());
        if to == State::Open {
            // If the epoch has moved on already, whoever moved it stamps
            // the record: nothing is lost by not stamping.
            let _ = self.stamp_opened(epoch, now.get());
        } else if from == State::Closed && to == State::Closed {
            let _ = self.stamp_opened(epoch, 0);
        }
        true
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
            self.stamp(written, &now);
        }
    }

    /// Tells the listeners about a transition this thread just made.
    fn report(&self, from: State, to: State, manual: Option<Reason>, now: &Now<'_>) {
        if !self.occupant.events.wanted() {
            return;
        }
        if let Some(reason) = manual.or_else(|| model::reason(from, to)) {
            self.occupant.events.emit(&Transition {
                key: self.occupant.names.key(),
                from,
                to,
                reason,
                at: Duration::from_nanos(now.get()),
            });
        }
    }

    /// `Ok` if the state word still reads `word`; otherwise the word it
    /// reads now, which the caller retries from. Asked after a failure slot
    /// did not match the claim `word` expects: if `word` is still current,
    /// the slot holds an older claim (a slot is written only for a claim
    /// next to the word's, or to one the word has passed).
    #[inline]
    fn unchanged(&self, word: Word) -> Result<(), Word> {
        let now = self.load();
        if now == word { Ok(()) } else { Err(now) }
    }

    /// `Ok` if the state word is still in `epoch`; otherwise the word it
    /// reads now. Asked after the `opened` record did not match `epoch`: if
    /// the word is still in it, the record is older (it is written only for
    /// the word's epoch, or for one the word has left).
    #[inline]
    fn epoch_unchanged(&self, epoch: Epoch) -> Result<(), Word> {
        let now = self.load();
        if now.epoch() == epoch {
            Ok(())
        } else {
            Err(now)
        }
    }

    #[inline]
    fn cas(&self, word: Word, new: Word) -> Result<(), Word> {
        if new == word {
            return Ok(());
        }
        // CAS_SUCCESS / CAS_FAILURE (Release / Acquire): see `sync`.
        self.slot
            .words
            .head
            .compare_exchange(word.bits(), new.bits(), CAS_SUCCESS, CAS_FAILURE)
            .map(drop)
            .map_err(Word::from_bits)
    }

    /// When the open epoch `epoch` opened: the stamped time if there is
    /// one, else `now`, stamped by this thread (a helper; the first to
    /// stamp wins). `Err` with the current word when the record holds
    /// another epoch and the word has left `epoch`.
    #[inline]
    fn opened_at(&self, epoch: Epoch, now: u64) -> Result<u64, Word> {
        match self.slot.words.opened.read(Stamp { epoch, claim: 0 }) {
            Some(at) => Ok(at),
            None => self.stamp_opened(epoch, now),
        }
    }

    /// Stamps the `opened` record for `epoch` with `now`, unless it is
    /// stamped for that epoch already (by its opener, a helper or us);
    /// returns the time it holds for `epoch`. The slow half of
    /// [`opened_at`](Self::opened_at).
    #[cold]
    fn stamp_opened(&self, epoch: Epoch, now: u64) -> Result<u64, Word> {
        self.slot
            .words
            .opened
            .write(Stamp { epoch, claim: 0 }, now, Keep::First, || {
                self.epoch_unchanged(epoch)
            })
    }
}

/// What one step of [`Engine::update`] decided from a word.
enum Step<T> {
    /// Nothing to write: the answer.
    Done(T),
    /// Replace the word by this one; the answer once it is in place.
    Write(Word, T),
    /// A record showed that the word has moved on: decide again from this
    /// one.
    Moved(Word),
}

impl<T> Step<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Step<U> {
        match self {
            Step::Done(output) => Step::Done(f(output)),
            Step::Write(word, output) => Step::Write(word, f(output)),
            Step::Moved(word) => Step::Moved(word),
        }
    }
}

/// A write [`Engine::update`] made: the word it replaced and the word it
/// wrote.
#[derive(Clone, Copy, Debug)]
struct Written {
    from: Word,
    to: Word,
}

/// Gives `grant` an ignore verdict when dropped: armed while a listener
/// runs inside the admission that took the grant, and forgotten once it
/// returns, so a panicking listener does not leak the probe slot.
struct Release<'a> {
    engine: &'a Engine<'a>,
    grant: Grant,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.engine
            .verdict_from(self.engine.slot.load(), self.grant, Verdict::Ignore, false);
    }
}

#[path = "engine_windows.rs"]
mod windows;

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
