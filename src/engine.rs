//! The lock-free engine: the one compare-and-swap loop on the state word.
//!
//! Every write of the word goes through [`Engine::update`], in the shape of
//! tokio's `fetch_update_action`: load, decode, step (a function of
//! [`model`](crate::model), reading records as it needs), encode,
//! compare-and-swap; when the step changes nothing, nothing is written. A
//! closed circuit with no failures is thus only ever loaded by admission
//! and success, and those two decide inline, before the loop.
//!
//! Four kinds of memory: the packed state word (see [`packed`](crate::packed)),
//! the `phase` record, the `opening` record and the ring of failure times
//! (see [`ring`](crate::ring)). The state word is the only authority. A
//! failure's time is written into its ring slot before the compare-and-swap
//! that claims the slot, so the claim sees every earlier failure and
//! decides the trip itself.
//!
//! The `phase` record holds, stamped with the epoch and the n of the
//! opening (SPEC §10), an open epoch's `retry_at` (when the opening ends:
//! its duration, with backoff, jitter and any hint of the server, is drawn
//! once, by whoever stamps it; kept as the opening's last instant, so that
//! an opening past the clock's last instant lasts to the end of time) or a half-open epoch's start (for the probe
//! timeout). It is written right after the compare-and-swap that enters
//! the epoch. Any thread that finds an opening missing writes it with its
//! own time and draw ("helping"), so no thread ever waits for another; the
//! first stamp wins, and every caller then sees the same `retry_at`. A
//! half-open start is stamped by its mover only: until then a caller reads
//! its own time as the start (no probe timeout can pass before the mover
//! stamps it, so a stalled mover only delays it). Every move into or out of
//! an open or half-open epoch reads its record first, so while the word is
//! in an open or half-open epoch E the record holds E or the epoch before:
//! a caller that finds E's start missing takes the n from there. A
//! closed epoch that follows a closed one (`force_closed`, `reset`) stamps
//! the record too (with no time), so that it never lags the word by more
//! than two epochs and no opening from a multiple of 2^30 epochs ago can
//! pass for a new one. The `opening` record, written by whoever won an
//! open epoch's `phase` stamp, keeps when that opening happened, for
//! snapshots and for capping a rejection at what is left of the opening
//! from its start (a clock that stepped back); admission decides from the
//! `phase` record alone.
//!
//! Progress: the loop goes round again only with a state word other than
//! the one it just stepped from (returned by a compare-and-swap that lost,
//! or by [`Engine::unchanged`] after a record did not match). A record
//! never sends a caller round with the same word: one that does not match a
//! word still current (for the `phase` record: a word still in the same
//! epoch) is older than it, whatever its age, and is overwritten (see
//! `ring`, whose record writes are the crate's only other loop).

use std::cell::Cell;
use std::time::Duration;

use crate::clock::Time;
use crate::config::Config;
use crate::epoch::Epoch;
use crate::model::{self, Decision, Effect, Grant, Head, Opening, Span};
use crate::packed::{Cursor, Word};
use crate::policy::{Failures, Rule, View};
use crate::recovery;
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
/// a step and the code after it can share it), and the server's hint the
/// call's verdict carried (SPEC §10), which an opening it makes honours.
struct Now<'a> {
    time: &'a Time,
    at: Cell<Option<u64>>,
    hint: Option<u64>,
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
            hint: None,
        }
    }

    #[inline]
    fn load(&self) -> Word {
        self.slot.load()
    }

    /// Admission (SPEC §3). Closed: one load and one mask (see
    /// [`Word::closed_grant`]). Open: one load of the word and one of the
    /// `phase` record, one clock read.
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

    /// Admission that reads the `phase` record or changes the word.
    #[inline(never)]
    fn acquire_from(self, word: Word) -> Decision {
        let now = self.now();
        let ((admission, n), written) = self.update(word, |word| {
            let (mut head, cursor) = word.unpack();
            let phase = match self.phase(&mut head, &now) {
                Ok(phase) => phase,
                Err(moved) => {
                    // A time read before this word could precede its
                    // phase: read the clock again for it.
                    now.forget();
                    return Step::Moved(moved);
                }
            };
            let span = || Ok::<_, Word>(phase.unwrap_or(Span::since(0)));
            match model::acquire(self.config(), head, span, || now.get()) {
                Ok((admission, None)) => Step::Done((admission, head.n)),
                Ok((admission, Some(next))) => {
                    Step::Write(Word::next(&head, cursor, &next), (admission, next.n))
                }
                Err(moved) => Step::Moved(moved),
            }
        });
        if let (Some(written), Decision::Granted(grant)) = (written, admission) {
            self.probe_installed(written, grant, n, &now);
        }
        admission
    }

    /// Fills in a half-open head's n from the record (a verdict on a probe
    /// needs it: a failed probe is the next opening in a row). Out of line:
    /// a closed verdict never comes here. `Err` with the current word when
    /// the record shows that `head` is out of date (`now` is then
    /// forgotten).
    #[cold]
    #[inline(never)]
    fn half_open_n(&self, head: &mut Head, now: &Now<'_>) -> Result<(), Word> {
        self.phase(head, now)
            .map(drop)
            .inspect_err(|_| now.forget())
    }

    /// The span of the phase of `head` (an open epoch's opening, a
    /// half-open one's start; `None` while closed), filling in a half-open
    /// head's n from the record; a missing stamp is stamped with this
    /// call's time (helping). `Err` with the current word when the record
    /// shows that `head` is out of date.
    #[inline]
    fn phase(&self, head: &mut Head, now: &Now<'_>) -> Result<Option<Span>, Word> {
        match head.state {
            State::Closed => Ok(None),
            State::Open => {
                let end = self.retry_at(head.epoch, head.n, now)?;
                Ok(Some(self.opening_span(head.epoch, head.n, end)))
            }
            State::HalfOpen => {
                let (n, since) = self.half_open_since(head.epoch, now)?;
                head.n = n;
                Ok(Some(Span::since(since)))
            }
        }
    }

    /// The span of the open epoch `epoch`, the n-th opening in a row,
    /// which ends at `end`: when it opened, from the `opening` record. Its
    /// winner writes that right after the `phase` record; read in between,
    /// the opening counts from 0, which caps no rejection (a rejection is
    /// capped at what is left of the opening from its start only when the
    /// start is known).
    #[inline]
    fn opening_span(&self, epoch: Epoch, n: u32, end: Option<u64>) -> Span {
        let stamp = Stamp { epoch, claim: n };
        let at = self.slot.words.opening.read(stamp).unwrap_or(0);
        Span { at, end }
    }

    /// The rejection of an open circuit still cooling down, with its
    /// opening stamped: two loads and a clock read, without the update
    /// loop (and in a function small enough to save few registers). `None`
    /// for any other word, a missing stamp, or a cooldown that is over.
    #[inline]
    fn still_cooling_down(&self, word: Word) -> Option<Decision> {
        let n = word.open_n()?;
        let head = Head::open(word.epoch(), n);
        let stamp = Stamp {
            epoch: head.epoch,
            claim: n,
        };
        let opened = || {
            let last = self.slot.words.phase.read(stamp).ok_or(())?;
            Ok::<_, ()>(self.opening_span(head.epoch, n, end_of(last)))
        };
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
    fn probe_installed(&self, written: Written, grant: Grant, n: u32, now: &Now<'_>) {
        let release = Release {
            engine: self,
            grant,
        };
        self.installed_with(written, None, n, now);
        std::mem::forget(release);
    }

    /// A verdict that may write, from `word` (read by
    /// [`Slot::conclude`]), on a call that was `slow` or not, with the
    /// server's `hint` (nanoseconds) of when to come back, if it gave one.
    pub(crate) fn verdict_from(
        self,
        word: Word,
        grant: Grant,
        verdict: Verdict,
        slow: bool,
        hint: Option<u64>,
    ) {
        let now = Now { hint, ..self.now() };
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
            let (mut head, cursor) = word.unpack();
            if head.state == State::HalfOpen && (verdict == Verdict::Failure || slow) {
                // A failed probe (or a slow one) opens the next opening in
                // a row: its n. Nothing else a probe ends with needs it.
                if let Err(moved) = self.half_open_n(&mut head, &now) {
                    return Step::Moved(moved);
                }
            }
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
            let mut head = head;
            let (opening, mut complete) = self.opening_seen(&mut head, now);
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
                return model::snapshot(&head, opening, window);
            }
            sync::spin_loop();
            word = again;
        }
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

    /// After a write of the word that started a new epoch: stamps its
    /// `phase` record (see [`stamp`](Self::stamp)), then reports the
    /// transition (`manual` gives a manual change's reason).
    fn installed(&self, written: Written, manual: Option<Reason>, now: &Now<'_>) {
        self.installed_with(written, manual, 0, now);
    }

    /// [`installed`](Self::installed), for a write that may have entered a
    /// half-open epoch after the n-th opening in a row.
    fn installed_with(&self, written: Written, manual: Option<Reason>, n: u32, now: &Now<'_>) {
        if self.stamp(written, n, now) {
            self.report(written, manual, now);
        }
    }

    /// The stamping half of [`installed`](Self::installed); whether the
    /// write started a new epoch (the check inline, the stamping out of
    /// line: most writes are within an epoch). A new open epoch's `retry_at` (from the
    /// call's `now`: every rule and `force_open` open at it, the n in the
    /// word and the call's hint), a new half-open epoch's start (the
    /// call's `now`, after the n-th opening in a row), or for a closed epoch
    /// after a closed one no time (only manual changes do that, and without
    /// it the record could fall behind by any number of them). If the epoch
    /// has moved on already, whoever moved it has read or stamped the
    /// record: nothing is lost by not stamping.
    #[inline]
    fn stamp(&self, written: Written, n: u32, now: &Now<'_>) -> bool {
        if written.from.epoch() == written.to.epoch() {
            return false;
        }
        self.stamp_epoch(written, n, now);
        true
    }

    /// The stamping of [`stamp`](Self::stamp), for a write that started a
    /// new epoch.
    #[inline(never)]
    fn stamp_epoch(&self, written: Written, n: u32, now: &Now<'_>) {
        let Written { from, to } = written;
        let epoch = to.epoch();
        match (from.state(), to.state()) {
            (_, State::Open) => {
                let n = to.unpack().0.n;
                let _ = self.stamp_opening(epoch, n, now.get(), now.hint);
            }
            (_, State::HalfOpen) => {
                let _ = self.stamp_phase(Stamp { epoch, claim: n }, now.get());
            }
            (State::Closed, State::Closed) => {
                let _ = self.stamp_phase(Stamp { epoch, claim: 0 }, 0);
            }
            _ => {}
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

    /// Tells the listeners about a transition this thread just made, with
    /// the opening as a snapshot would show it after the change (out of
    /// line: only a new epoch comes here).
    #[cold]
    #[inline(never)]
    fn report(&self, written: Written, manual: Option<Reason>, now: &Now<'_>) {
        if !self.occupant.events.wanted() {
            return;
        }
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
    /// reads now. Asked after the `phase` or `opening` record did not match
    /// `epoch`: if the word is still in it, the record is older (it is
    /// written only for the word's epoch, or for one the word has left).
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

    /// When the open epoch `epoch`, the n-th opening in a row, ends
    /// (`None`: past the clock's last instant): the stamped `retry_at` if
    /// there is one, else one drawn at `now` without a hint and stamped by
    /// this thread (a helper; the first to stamp wins). `Err` with the
    /// current word when the record holds another epoch and the word has
    /// left `epoch`.
    #[inline]
    fn retry_at(&self, epoch: Epoch, n: u32, now: &Now<'_>) -> Result<Option<u64>, Word> {
        match self.slot.words.phase.read(Stamp { epoch, claim: n }) {
            Some(last) => Ok(end_of(last)),
            None => self.stamp_opening(epoch, n, now.get(), None),
        }
    }

    /// Stamps the open epoch `epoch`, the n-th opening in a row, opened at
    /// `at` with the server's `hint`: its `retry_at` in the `phase` record
    /// unless it is stamped for that epoch already (by its opener, a helper
    /// or us), and, by whoever wins that, when it opened in the `opening`
    /// record; returns the `retry_at` the record holds.
    #[cold]
    fn stamp_opening(
        &self,
        epoch: Epoch,
        n: u32,
        at: u64,
        hint: Option<u64>,
    ) -> Result<Option<u64>, Word> {
        let stamp = Stamp { epoch, claim: n };
        let retry_at = recovery::retry_at(self.config(), n, at, self.occupant.seed, hint);
        let written =
            self.slot
                .words
                .phase
                .write_telling(stamp, last_of(retry_at), Keep::First, || {
                    self.epoch_unchanged(epoch)
                })?;
        if written.mine {
            // For snapshots; a word that moved on meanwhile has its own.
            // Only the phase's winner writes it, so the latest time wins:
            // a stamp already there with an earlier time is an opening of
            // this epoch a whole epoch range ago (closings do not stamp
            // this record), which this opening replaces.
            let _ = self
                .slot
                .words
                .opening
                .write(stamp, at, Keep::Latest, || self.epoch_unchanged(epoch));
        }
        Ok(end_of(written.time))
    }

    /// The n of the opening before the half-open epoch `epoch`, and when
    /// `epoch` started. Only the caller whose compare-and-swap entered the
    /// epoch stamps its start; until it has, the start reads as this
    /// call's `now` (so no probe timeout has passed: a stalled mover can
    /// only delay the timeout, and no one waits for it), with the n of the
    /// epoch before, which the record then still holds (every move into a
    /// half-open epoch read it first). `Err` with the current word when the
    /// word has left `epoch`.
    fn half_open_since(&self, epoch: Epoch, now: &Now<'_>) -> Result<(u32, u64), Word> {
        let phase = &self.slot.words.phase;
        if let Some(found) = phase.read_epoch(epoch) {
            return Ok(found);
        }
        let n = if let Some((n, _)) = phase.read_epoch(epoch.previous()) {
            n
        } else {
            // The word has moved on (the record holds `epoch` or the one
            // before while the word is in `epoch`).
            self.epoch_unchanged(epoch)?;
            0
        };
        Ok((n, now.get()))
    }

    /// Stamps the `phase` record with `at` for `stamp`, unless it is
    /// stamped for that epoch already; returns the time it holds.
    #[cold]
    fn stamp_phase(&self, stamp: Stamp, at: u64) -> Result<u64, Word> {
        self.slot
            .words
            .phase
            .write(stamp, at, Keep::First, || self.epoch_unchanged(stamp.epoch))
    }
}

/// An opening's end as its `phase` record holds it: the opening's last
/// instant (an opening lasts at least a nanosecond, so its end is at least
/// 1), or `u64::MAX` for one whose end is past the clock's last instant:
/// it lasts to the end of time, and every instant, the last included, is
/// in it.
#[inline]
fn last_of(end: Option<u64>) -> u64 {
    end.map_or(u64::MAX, |end| end.saturating_sub(1))
}

/// The end of an opening whose `phase` record holds `last` (see
/// [`last_of`]).
#[inline]
fn end_of(last: u64) -> Option<u64> {
    last.checked_add(1)
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
        self.engine.verdict_from(
            self.engine.slot.load(),
            self.grant,
            Verdict::Ignore,
            false,
            None,
        );
    }
}

#[path = "engine_windows.rs"]
mod windows;

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
