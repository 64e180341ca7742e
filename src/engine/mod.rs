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
//! The `phase` and `opening` records, which an open or half-open epoch's
//! times live in, and who stamps them: see [`records`].
//!
//! Progress: the loop goes round again only with a state word other than
//! the one it just stepped from (returned by a compare-and-swap that lost,
//! or by [`Engine::unchanged`] after a record did not match). A record
//! never sends a caller round with the same word: one that does not match a
//! word still current (for the `phase` record: a word still in the same
//! epoch) is older than it, whatever its age, and is overwritten (see
//! `ring`, whose record writes are the crate's only other loop).
//!
//! One job per file: admission ([`admit`]) and its graded kind
//! ([`graded`]), verdicts and manual changes
//! ([`verdicts`]), the records ([`records`]), a closed circuit's window
//! ([`windows`]), and what a circuit shows ([`snapshot`]); this file holds
//! the engine and its loop.

use std::cell::Cell;

use crate::clock::Time;
use crate::config::Config;
use crate::epoch::Epoch;
use crate::packed::Word;
use crate::slot::{Occupant, Slot};
use crate::sync::{CAS_FAILURE, CAS_SUCCESS};

mod admit;
mod graded;
mod reconfigure;
mod records;
mod restore;
mod snapshot;
mod verdicts;
mod windows;

pub(crate) use restore::{Restored, RestoredOpening};

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

    /// The time of a call that has read it already, at `at`.
    #[inline]
    fn now_at(&self, at: u64) -> Now<'a> {
        Now {
            time: &self.occupant.time,
            at: Cell::new(Some(at)),
            hint: None,
        }
    }

    #[inline]
    fn load(&self) -> Word {
        self.slot.load()
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

impl Written {
    /// Whether the write started a new epoch.
    #[inline]
    fn new_epoch(self) -> bool {
        self.from.epoch() != self.to.epoch()
    }
}

#[cfg(test)]
mod tests;
