//! The lock-free engine: the only compare-and-swap loops of the crate.
//!
//! Each loop has the shape load, decode, step (a function of
//! [`model`](crate::model)), encode, compare-and-swap; when the step changes
//! nothing, nothing is written. A closed circuit with no failures is thus
//! only ever loaded by admission and success.
//!
//! Three kinds of memory: the packed state word (see [`packed`](crate::packed)),
//! the `opened` record (when the current or last opening happened, stamped
//! with its epoch) and the ring of failure times (see [`ring`](crate::ring)).
//! The state word is the only authority. A failure's time is written into
//! its ring slot before the compare-and-swap that claims the slot, so the
//! claim sees every earlier failure and decides the trip itself. The
//! `opened` record is written right after the compare-and-swap that opens
//! the circuit, and any thread that finds it missing writes it with its own
//! time ("helping"), so no thread ever waits for another.

use crossbeam_utils::CachePadded;

use crate::clock::Time;
use std::time::Duration;

use crate::config::Config;
use crate::events::{Events, Reason, Transition};
use crate::model::{self, Admission, EPOCH_BITS, Effect, Grant, Head, Verdict};
use crate::packed::{CLAIMS_MODULUS, Cursor, Word};
use crate::ring::{Keep, Read, Record, Ring, Stamp};
use crate::snapshot::{Snapshot, State};
use crate::sync::{self, AtomicU64, CAS_FAILURE, CAS_SUCCESS, HEAD_LOAD};

/// How many times a snapshot re-reads a circuit that changes under it
/// before it settles for the last reading.
const SNAPSHOT_TRIES: u32 = 64;

/// The words every call reads, on one cache line.
#[derive(Debug)]
struct Words {
    head: AtomicU64,
    opened: Record,
}

/// One circuit's atomics, its configuration and its time.
#[derive(Debug)]
pub(crate) struct Engine {
    words: CachePadded<Words>,
    ring: Ring,
    config: Config,
    time: Time,
    key: &'static str,
    events: Events,
}

/// The time of one call, read from the clock at most once.
struct Now<'a> {
    time: &'a Time,
    at: Option<u64>,
}

impl Now<'_> {
    #[inline]
    fn get(&mut self) -> u64 {
        *self.at.get_or_insert_with(|| self.time.now())
    }
}

impl Engine {
    pub(crate) fn new(config: Config, time: Time, key: &'static str, events: Events) -> Self {
        Engine {
            words: CachePadded::new(Words {
                head: AtomicU64::new(Word::INITIAL.bits()),
                opened: Record::new(),
            }),
            ring: Ring::new(config.failure_threshold()),
            config,
            time,
            key,
            events,
        }
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    pub(crate) fn time(&self) -> &Time {
        &self.time
    }

    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    #[inline]
    fn now(&self) -> Now<'_> {
        Now {
            time: &self.time,
            at: None,
        }
    }

    #[inline]
    fn load(&self) -> Word {
        // HEAD_LOAD (Acquire): see `sync`.
        Word::from_bits(self.words.head.load(HEAD_LOAD))
    }

    /// Admission (SPEC §3). Closed: one load. Open: one load of the word and
    /// one of the `opened` record, one clock read.
    #[inline]
    pub(crate) fn acquire(&self) -> Admission {
        let word = self.load();
        let (head, _) = word.unpack();
        // A closed circuit is decided here, inline, from the word alone;
        // the other states (which need the opening time, the clock or a
        // write) go through the loop out of line.
        if head.state == State::Closed {
            if let (admission, None) = model::acquire(&self.config, head, || self.time.now()) {
                return admission;
            }
        }
        self.acquire_from(word, self.now())
    }

    /// Admission that reads the `opened` record or changes the word.
    #[inline(never)]
    fn acquire_from(&self, mut word: Word, mut now: Now<'_>) -> Admission {
        loop {
            let (mut head, cursor) = word.unpack();
            if head.state == State::Open {
                let Some(at) = self.opened_at(head.epoch, now.get()) else {
                    // The record is a later epoch's: this reading is out of date.
                    word = self.load();
                    continue;
                };
                head.opened_at = at;
            }
            let (admission, next) = model::acquire(&self.config, head, || now.get());
            let Some(next) = next else {
                return admission;
            };
            match self.install(word, &head, cursor, &next, None, &mut now) {
                Ok(()) => return admission,
                Err(actual) => word = actual,
            }
        }
    }

    /// The verdict of a permit (SPEC §3). A success on a closed circuit
    /// without failures is one load.
    #[inline]
    pub(crate) fn verdict(&self, grant: Grant, verdict: Verdict) {
        let word = self.load();
        let (head, cursor) = word.unpack();
        // A verdict on a closed circuit that changes nothing (a success with
        // no failures to clear, an ignore, a stale verdict) is decided
        // here, inline; everything else goes through the loop out of line.
        if head.state == State::Closed {
            match model::verdict(&self.config, head, grant, verdict, || self.time.now()) {
                Effect::Stale | Effect::Nothing => return,
                Effect::ClearFailures if cursor.live == 0 => return,
                _ => {}
            }
        }
        self.verdict_from(word, grant, verdict, self.now());
    }

    /// A verdict that writes: the compare-and-swap loop.
    #[inline(never)]
    fn verdict_from(&self, mut word: Word, grant: Grant, verdict: Verdict, mut now: Now<'_>) {
        loop {
            let (head, cursor) = word.unpack();
            let next = match model::verdict(&self.config, head, grant, verdict, || now.get()) {
                Effect::Stale | Effect::Nothing => return,
                Effect::ClearFailures if cursor.live == 0 => return,
                Effect::ClearFailures => Word::pack(&head, Cursor { live: 0, ..cursor }),
                Effect::RecordFailure => {
                    if now.at.is_none() {
                        // Read the time before the word the failure is
                        // decided on: it can then never be later than the
                        // claim that records it, even if this verdict loses
                        // the slot to another one and writes it late.
                        now.get();
                        word = self.load();
                        continue;
                    }
                    match self.record_failure(word, &head, cursor, grant, now.get()) {
                        Ok(()) => return,
                        Err(actual) => {
                            word = actual;
                            continue;
                        }
                    }
                }
                Effect::Move(next) => {
                    match self.install(word, &head, cursor, &next, None, &mut now) {
                        Ok(()) => return,
                        Err(actual) => {
                            word = actual;
                            continue;
                        }
                    }
                }
            };
            match self.cas(word, next) {
                Ok(()) => return,
                Err(actual) => word = actual,
            }
        }
    }

    /// `force_open`, `force_closed` or `reset`: a step that ignores the
    /// current state but not its epoch.
    pub(crate) fn force(&self, step: impl Fn(Head, u64) -> Head, reason: Reason) {
        let mut now = self.now();
        let at = now.get();
        let mut word = self.load();
        loop {
            let (head, cursor) = word.unpack();
            match self.install(word, &head, cursor, &step(head, at), Some(reason), &mut now) {
                Ok(()) => return,
                Err(actual) => word = actual,
            }
        }
    }

    /// How many writes the state word and the `opened` record have taken
    /// (loom builds only: the models check paths that must write nothing).
    #[cfg(fuse_loom)]
    pub(crate) fn writes(&self) -> usize {
        self.words.head.writes() + self.words.opened.writes()
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
            let (mut head, cursor) = word.unpack();
            let opened_epoch = match head.state {
                State::Closed => None,
                State::Open => Some(head.epoch),
                // Half-open is only entered from the open epoch just before.
                State::HalfOpen => Some(head.epoch.wrapping_sub(1) & ((1 << EPOCH_BITS) - 1)),
            };
            let mut complete = true;
            if let Some(epoch) = opened_epoch {
                match self.words.opened.read(Stamp { epoch, claim: 0 }) {
                    Read::Found(at) => head.opened_at = at,
                    // Opened an instant ago: its opener is about to stamp it.
                    Read::Missing | Read::Superseded => {
                        complete = false;
                        head.opened_at = now;
                    }
                }
            }
            let live = cursor.live;
            let mut failures = Vec::with_capacity(live as usize);
            for at in self.ring.recent(head.epoch, cursor.claims, live) {
                match at {
                    Some(at) => failures.push(at),
                    None => complete = false,
                }
            }
            let again = self.load();
            if (complete && again == word) || last_try {
                return model::snapshot(&self.config, &head, failures, now);
            }
            sync::spin_loop();
            word = again;
        }
    }

    /// Replaces `word` by the packing of `next` (keeping the failure cursor
    /// within an epoch, clearing it across epochs) and publishes the opening
    /// time of a new open epoch. Writes nothing when nothing changes.
    #[inline]
    fn install(
        &self,
        word: Word,
        head: &Head,
        cursor: Cursor,
        next: &Head,
        manual: Option<Reason>,
        now: &mut Now<'_>,
    ) -> Result<(), Word> {
        let new_epoch = next.epoch != head.epoch;
        let cursor = if new_epoch { Cursor::default() } else { cursor };
        self.cas(word, Word::pack(next, cursor))?;
        if new_epoch {
            if next.state == State::Open {
                self.opened_at(next.epoch, next.opened_at);
            }
            self.report(head.state, next.state, manual, now);
        }
        Ok(())
    }

    /// Tells the listeners about a transition this thread just made.
    fn report(&self, from: State, to: State, manual: Option<Reason>, now: &mut Now<'_>) {
        if !self.events.wanted() {
            return;
        }
        if let Some(reason) = manual.or_else(|| model::reason(from, to)) {
            self.events.emit(&Transition {
                key: self.key,
                from,
                to,
                reason,
                at: Duration::from_nanos(now.get()),
            });
        }
    }

    #[inline]
    fn cas(&self, word: Word, new: Word) -> Result<(), Word> {
        if new == word {
            return Ok(());
        }
        // CAS_SUCCESS / CAS_FAILURE (AcqRel / Acquire): see `sync`.
        self.words
            .head
            .compare_exchange(word.bits(), new.bits(), CAS_SUCCESS, CAS_FAILURE)
            .map(drop)
            .map_err(Word::from_bits)
    }

    /// A closed failure at `at`, decided in one compare-and-swap of `word`:
    /// either the failures it completes open the circuit, or it claims the
    /// next slot of the ring. The time is written into that slot before the
    /// claim, so whoever sees a claim sees its time (`sync::RECORD_LOAD`),
    /// and the decision never waits for, or is left to, another thread.
    /// Kept out of line: it is not the path the fast cases share.
    #[inline(never)]
    fn record_failure(
        &self,
        word: Word,
        head: &Head,
        cursor: Cursor,
        grant: Grant,
        at: u64,
    ) -> Result<(), Word> {
        let threshold = self.config.failure_threshold();
        let live = (cursor.live + 1).min(threshold);
        if model::could_open(&self.config, live) {
            let earlier = (live - 1).min(threshold - 1);
            let Some(counted) = self.count_in_window(head.epoch, cursor.claims, earlier, at) else {
                return Err(self.load());
            };
            if let Some(next) = model::tally(&self.config, *head, grant, counted + 1, at) {
                let mut now = Now {
                    time: &self.time,
                    at: Some(at),
                };
                return self.install(word, head, cursor, &next, None, &mut now);
            }
        }
        let claim = (cursor.claims + 1) % CLAIMS_MODULUS;
        if !self.ring.write(head.epoch, claim, at) {
            return Err(self.load());
        }
        self.cas(
            word,
            Word::pack(
                head,
                Cursor {
                    claims: claim,
                    live,
                },
            ),
        )
    }

    /// How many of the `count` claims of `epoch` ending with `last` are in
    /// the window at `now`, reading oldest first and stopping once the
    /// threshold is out of reach. `None` when a slot holds a newer claim:
    /// the caller's reading of the state word is out of date.
    fn count_in_window(&self, epoch: u32, last: u32, count: u32, now: u64) -> Option<u32> {
        let (mut counted, mut unread) = (0, count);
        for at in self.ring.recent(epoch, last, count) {
            unread -= 1;
            let at = at?;
            if model::in_window(&self.config, at, now) {
                counted += 1;
            } else if !model::could_open(&self.config, counted + unread + 1) {
                return Some(counted);
            }
        }
        Some(counted)
    }

    /// When the open epoch `epoch` opened: the stamped time if there is one,
    /// else `now`, stamped by this thread (the opener or a helper; the first
    /// to stamp wins). `None` when the record already belongs to a later
    /// epoch, so the caller's reading of the word is out of date.
    #[inline]
    fn opened_at(&self, epoch: u32, now: u64) -> Option<u64> {
        let stamp = Stamp { epoch, claim: 0 };
        match self.words.opened.read(stamp) {
            Read::Found(at) => Some(at),
            Read::Superseded => None,
            Read::Missing => self.stamp_opened(stamp, now),
        }
    }

    /// The slow half of [`opened_at`](Self::opened_at): the record is not
    /// stamped yet (its opener is between two instructions, or is us).
    #[cold]
    fn stamp_opened(&self, stamp: Stamp, now: u64) -> Option<u64> {
        match self.words.opened.write(stamp, now, Keep::First) {
            Read::Found(at) => Some(at),
            Read::Missing | Read::Superseded => None,
        }
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
