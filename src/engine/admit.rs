//! Admission (SPEC §3): a closed circuit decided inline from the word, an
//! open one still cooling down from the word and the `phase` record, and
//! every other case through the loop.

use std::cell::Cell;

use super::records::end_of;
use super::{Engine, Now, Step, Written};
use crate::model::{self, Decision, Grant, Head, Span};
use crate::packed::Word;
use crate::ring::Stamp;
use crate::verdict::Verdict;

impl Engine<'_> {
    /// Admission (SPEC §3). Closed: one load and one mask (see
    /// [`Word::closed_grant`]; one that grades its admission, SPEC §11,
    /// goes out of line). Open: one load of the word and one of the
    /// `phase` record, one clock read.
    #[allow(clippy::inline_always)] // measured: an open rejection 157 instructions without, 136 with
    #[inline(always)]
    pub(crate) fn acquire(self) -> Decision {
        let word = self.load();
        // A closed circuit is decided here, inline, from the word alone;
        // the other states (which need the opening time, the clock or a
        // write) go through the loop out of line.
        if let Some(grant) = word.ungraded_closed_grant() {
            return Decision::Granted(grant);
        }
        let mut read = None;
        if let Some(rejected) = self.still_cooling_down(word, &mut read) {
            return rejected;
        }
        self.acquire_from(word, read)
    }

    /// Admission out of line, from `word` and the time `read` after it,
    /// if one was: a closed circuit that grades its admission (SPEC §11;
    /// one that throttles and sheds nothing now admits here, with one load
    /// more), or the loop.
    #[inline(never)]
    fn acquire_from(self, word: Word, read: Option<u64>) -> Decision {
        if let Some(grant) = word.closed_grant() {
            return self.graded(word, grant);
        }
        self.acquire_moving(word, read)
    }

    /// Admission that reads the `phase` record or changes the word, from
    /// `word` and the time `read` after it, if one was.
    #[inline(never)]
    fn acquire_moving(self, word: Word, read: Option<u64>) -> Decision {
        let now = Now {
            at: Cell::new(read),
            ..self.now()
        };
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

    /// The rejection of an open circuit still cooling down, with its
    /// opening stamped: two loads (the word and the `phase` record; the
    /// `opening` record too for a clock that may be behind the opening's
    /// start) and a clock read, without the update loop (and in a function
    /// small enough to save few registers). `None` for any other word, a
    /// missing stamp, or a cooldown that is over (then with the time it
    /// read after `word` in `read`, if it read one).
    #[inline]
    fn still_cooling_down(&self, word: Word, read: &mut Option<u64>) -> Option<Decision> {
        let n = word.open_n()?;
        let head = Head::open(word.epoch(), n);
        let stamp = Stamp {
            epoch: head.epoch,
            claim: n,
        };
        let end = end_of(self.slot.words.phase.read(stamp)?);
        let now = self.occupant.time.now();
        let rejected = model::cooling_down(self.opening_span(head.epoch, n, end, now), now);
        if rejected.is_none() {
            *read = Some(now);
        }
        rejected
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
