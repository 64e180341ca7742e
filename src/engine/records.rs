//! The `phase` and `opening` records of the engine: reading them, and
//! stamping them after a write that starts an epoch (or helping an opener
//! that has not yet).
//!
//! The `phase` record holds, stamped with the epoch and the n of the
//! opening (SPEC §10), an open epoch's `retry_at` (when the opening ends:
//! its duration, with backoff, jitter and any hint of the server, is drawn
//! once, by whoever stamps it; kept as the opening's last instant, so that
//! an opening past the clock's last instant lasts to the end of time) or a
//! half-open epoch's start (for the probe timeout). It is written right
//! after the compare-and-swap that enters the epoch. Any thread that finds an opening missing writes it with its
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
//! `phase` record alone, and reads the `opening` record only when its
//! clock may be behind the opening's start.

use super::{Engine, Now, Written};
use crate::epoch::Epoch;
use crate::model::{Head, Span};
use crate::packed::Word;
use crate::ring::{Keep, Stamp};
use crate::snapshot::State;
use crate::transition::Reason;

impl Engine<'_> {
    /// Fills in a half-open head's n from the record (a verdict on a probe
    /// needs it: a failed probe is the next opening in a row). Out of line:
    /// a closed verdict never comes here. `Err` with the current word when
    /// the record shows that `head` is out of date (`now` is then
    /// forgotten).
    #[cold]
    #[inline(never)]
    pub(super) fn half_open_n(&self, head: &mut Head, now: &Now<'_>) -> Result<(), Word> {
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
    pub(super) fn phase(&self, head: &mut Head, now: &Now<'_>) -> Result<Option<Span>, Word> {
        match head.state {
            State::Closed => Ok(None),
            State::Open => {
                let end = self.retry_at(head.epoch, head.n, now)?;
                Ok(Some(self.opening_span(head.epoch, head.n, end, now.get())))
            }
            State::HalfOpen => {
                let (n, since) = self.phase_since(head.epoch, now)?;
                head.n = n;
                Ok(Some(Span::since(since)))
            }
        }
    }

    /// The span of the open epoch `epoch`, the n-th opening in a row,
    /// which ends at `end`, as admission at `now` needs it. A rejection is
    /// capped at what is left of the opening from its start, which only
    /// matters for a clock behind the start (one that stepped back). Every
    /// opening lasts at least the configuration's shortest (see
    /// [`Words::shortest_open`](crate::slot::Words::shortest_open)), so an
    /// opening that ends no further than that from `now` started at or
    /// before `now`: its start is not read, and the span counts from 0,
    /// which caps nothing either. Otherwise the start is read from the
    /// `opening` record. Its winner writes that right after the `phase`
    /// record; read in between, the opening counts from 0 too (a rejection
    /// is capped only when the start is known).
    #[inline]
    pub(super) fn opening_span(&self, epoch: Epoch, n: u32, end: Option<u64>, now: u64) -> Span {
        let words = &self.slot.words;
        let at = match end {
            Some(end)
                if end.saturating_sub(now)
                    <= words.shortest_open.load(crate::sync::Ordering::Relaxed) =>
            {
                0
            }
            _ => words.opening.read(Stamp { epoch, claim: n }).unwrap_or(0),
        };
        Span { at, end }
    }

    /// After a write of the word that started a new epoch: stamps its
    /// `phase` record (see [`stamp`](Self::stamp)), then reports the
    /// transition to the circuit's listeners, if it has any (`manual`
    /// gives a manual change's reason).
    pub(super) fn installed(&self, written: Written, manual: Option<Reason>, now: &Now<'_>) {
        self.installed_with(written, manual, 0, now);
    }

    /// [`installed`](Self::installed), for a write that may have entered a
    /// half-open epoch, or a closed one that ramps up, after the n-th
    /// opening in a row.
    pub(super) fn installed_with(
        &self,
        written: Written,
        manual: Option<Reason>,
        n: u32,
        now: &Now<'_>,
    ) {
        if self.stamp(written, n, now) && self.occupant.events.wanted() {
            self.report(written, manual, now);
        }
    }

    /// The stamping half of [`installed`](Self::installed); whether the
    /// write started a new epoch (the check inline, the stamping out of
    /// line: most writes are within an epoch). A new open epoch's `retry_at` (from the
    /// call's `now`: every rule and `force_open` open at it, the n in the
    /// word and the call's hint), a new half-open epoch's start (the
    /// call's `now`, after the n-th opening in a row), a closed epoch's
    /// ramp (SPEC §11: its start, the call's `now`, after the n-th opening
    /// in a row), or for a closed epoch after a closed one no time (only manual changes do that, and without
    /// it the record could fall behind by any number of them). If the epoch
    /// has moved on already, whoever moved it has read or stamped the
    /// record: nothing is lost by not stamping.
    #[inline]
    pub(super) fn stamp(&self, written: Written, n: u32, now: &Now<'_>) -> bool {
        if !written.new_epoch() {
            return false;
        }
        // A closing (from open or half-open) stamps nothing, unless it
        // starts a ramp (SPEC §11): then when it closed, and the n before.
        if written.to.state() != State::Closed
            || written.from.state() == State::Closed
            || written.to.ramping()
        {
            self.stamp_epoch(written, n, now);
        }
        true
    }

    /// The stamping of [`stamp`](Self::stamp), for a write that started a
    /// new epoch other than a closing.
    #[inline(never)]
    fn stamp_epoch(&self, written: Written, n: u32, now: &Now<'_>) {
        let Written { from, to } = written;
        let epoch = to.epoch();
        match (from.state(), to.state()) {
            (_, State::Open) => {
                let n = to.open_n().unwrap_or(0);
                let _ = self.stamp_opening(epoch, n, now.get(), now.hint);
            }
            (_, State::HalfOpen) => {
                let _ = self.stamp_phase(Stamp { epoch, claim: n }, now.get());
            }
            (_, State::Closed) if to.ramping() => {
                let _ = self.stamp_phase(Stamp { epoch, claim: n }, now.get());
            }
            (State::Closed, State::Closed) => {
                let _ = self.stamp_phase(Stamp { epoch, claim: 0 }, 0);
            }
            _ => {}
        }
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
        let backoff = crate::recovery::Backoff::of(self.config());
        let retry_at = backoff.retry_at(n, at, self.occupant.seed, hint);
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

    /// The n of the opening before the half-open epoch `epoch` (or before
    /// the half-open epoch that the ramping closed epoch `epoch` closed,
    /// SPEC §11), and when `epoch` started. Only the caller whose
    /// compare-and-swap entered the epoch stamps its start; until it has,
    /// the start reads as this call's `now` (so no probe timeout has
    /// passed, and a ramp is at its start: a stalled mover can only delay
    /// them, and no one waits for it), with the n of the epoch before,
    /// which the record then still holds (every move into a half-open
    /// epoch, and every close that ramps, read it first). `Err` with the
    /// current word when the word has left `epoch`.
    pub(super) fn phase_since(&self, epoch: Epoch, now: &Now<'_>) -> Result<(u32, u64), Word> {
        // One reading: while the word is in `epoch` the record holds
        // `epoch` or the one before, and a stamp of `epoch` landing between
        // two readings would leave neither to be found.
        let n = match self.slot.words.phase.read_any() {
            Some((stamp, at)) if stamp.epoch == epoch => return Ok((stamp.claim, at)),
            Some((stamp, _)) if stamp.epoch == epoch.previous() => stamp.claim,
            _ => {
                // The word has moved on.
                self.epoch_unchanged(epoch)?;
                0
            }
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
pub(super) fn end_of(last: u64) -> Option<u64> {
    last.checked_add(1)
}
