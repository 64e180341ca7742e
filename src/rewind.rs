//! Moving a circuit to any state word and record age, for the tests, the
//! fuzz target and the loom models that start just before a wrap-around
//! (never built otherwise).

use crate::engine::Engine;
use crate::epoch::Epoch;
use crate::model::Head;
use crate::packed::{CLAIMS_MODULUS, Cursor, Word};
use crate::ring::Stamp;
use crate::sync;

impl Engine<'_> {
    /// Sets the state word to `head` and `cursor` (with the circuit's own
    /// policy marks), leaving every record as it is: tests start a circuit
    /// just before a wrap-around of its counters, or make its records as
    /// old as they like.
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn set_word(&self, head: Head, cursor: Cursor) {
        let marks = self.slot.load().unpack().1.marks;
        let word = Word::pack(&head, Cursor { marks, ..cursor });
        // Tests only; the next load sees it (SeqCst is simply the strongest).
        self.slot
            .words
            .head
            .store(word.bits(), sync::Ordering::SeqCst);
    }

    /// Moves this circuit (not shared yet) to the closed epoch `epoch` with
    /// the claim counter at `claims` and no failures, for tests that start
    /// just before a wrap-around. With `ages = Some((opened, slots))`, the
    /// records are also left behind (times zero): the `phase` record
    /// `opened` epochs back (the opening record emptied), each failure slot `slots` epochs back (zero:
    /// the start epoch's own latest claims, already cleared), stamped with
    /// the latest claim at or before `claims` that uses it.
    #[cfg(any(test, fuzzing, fuse_loom))]
    pub(crate) fn start_at(&self, epoch: Epoch, claims: u32, ages: Option<(u32, u32)>) {
        self.set_word(
            Head::closed(epoch),
            Cursor {
                claims,
                ..Cursor::default()
            },
        );
        // A reused `rate` slot keeps the last circuit's window, which may
        // hold counts of `epoch`: empty it.
        if let Some(tallies) = self.slot.tallies() {
            tallies.clear();
        }
        // So does a throttling slot its throttle's window and share.
        if let Some(throttle) = self.slot.throttle() {
            throttle.clear(&self.slot.words.share);
        }
        let Some((opened, slots)) = ages else {
            // A reused slot keeps the last circuit's opening: forget it, as
            // the jump to `epoch` forgets the epochs in between.
            self.slot.words.phase.clear();
            self.slot.words.opening.clear();
            return;
        };
        let behind = |age: u32| epoch.back(age);
        self.slot.words.opening.clear();
        self.slot.words.phase.set(
            Stamp {
                epoch: behind(opened),
                claim: 0,
            },
            0,
        );
        let ring = self.occupant.rings.of(self.slot.load());
        let len = ring.len();
        for index in 0..len {
            let back = claims.wrapping_sub(index) % len;
            let claim = claims.wrapping_sub(back) % CLAIMS_MODULUS;
            let stamp = Stamp {
                epoch: behind(slots),
                claim,
            };
            ring.set(index, stamp, 0);
        }
    }

    /// How many writes the state word and the `phase` and `opening` records have taken
    /// (loom builds only: the models check paths that must write nothing).
    #[cfg(fuse_loom)]
    pub(crate) fn writes(&self) -> usize {
        self.slot.words.head.writes()
            + self.slot.words.phase.writes()
            + self.slot.words.opening.writes()
    }
}
