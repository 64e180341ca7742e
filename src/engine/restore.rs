//! Putting a fresh circuit in the state a saved one had (SPEC §12's
//! restarts): its opening, its n and its window, in a new epoch.

use super::{Engine, Written};
use crate::model::Head;
use crate::packed::{Cursor, Word};
use crate::policy::Counts;
use crate::ring::{Keep, Stamp};
use crate::snapshot::State;

/// What a restored circuit holds, on its own clock: an opening (the n of
/// the opening in a row, when it opened and when it ends), or, closed,
/// its failure times (`count`, oldest first) or its window's counts
/// (`rate`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Restored {
    pub(crate) opening: Option<RestoredOpening>,
    pub(crate) failures: Vec<u64>,
    pub(crate) counts: Option<Counts>,
}

/// An opening to restore: the n-th in a row, opened at `opened_at`,
/// ending at `retry_at` (both on the circuit's clock).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RestoredOpening {
    pub(crate) n: u32,
    pub(crate) opened_at: u64,
    pub(crate) retry_at: u64,
}

impl Engine<'_> {
    /// Puts this circuit, fresh and not shared yet (its builder restores
    /// it before anyone else can reach it), in the state `restored`, in
    /// the epoch after its own: no permit from before is valid. Closed, it
    /// keeps the newest failures still in its window, at most the
    /// threshold less one.
    pub(crate) fn restore(&self, restored: &Restored) {
        let word = self.load();
        let epoch = word.epoch().next();
        let marks = word.unpack().1.marks;
        let now = self.now();
        let (head, cursor) = if let Some(opening) = restored.opening {
            let stamp = Stamp {
                epoch,
                claim: opening.n,
            };
            let words = &self.slot.words;
            let unshared = || Ok::<(), ()>(());
            let last = opening.retry_at.saturating_sub(1);
            let _ = words.phase.write(stamp, last, Keep::First, unshared);
            let _ = words
                .opening
                .write(stamp, opening.opened_at, Keep::Latest, unshared);
            (
                Head::open(epoch, opening.n),
                Cursor {
                    marks,
                    ..Cursor::default()
                },
            )
        } else {
            let config = self.config();
            let at = now.get();
            let window = config.window_nanos();
            let keep = config.failure_threshold() - 1;
            let recent: Vec<u64> = restored
                .failures
                .iter()
                .copied()
                .filter(|&failed| at.saturating_sub(failed) < window && failed <= at)
                .collect();
            let kept = &recent[recent.len().saturating_sub(keep as usize)..];
            let ring = self.occupant.rings.of(word);
            let mut claims = 0;
            for &failed in kept {
                claims += 1;
                ring.copy(epoch, claims, failed);
            }
            let cursor = Cursor {
                claims,
                live: claims,
                marks,
            };
            (Head::closed(epoch), cursor)
        };
        let next = Word::pack(&head, cursor);
        if self.cas(word, next).is_ok() {
            let written = Written {
                from: word,
                to: next,
            };
            // A closed epoch after a closed one stamps the record; an
            // opening's is stamped above, and kept.
            let n = restored.opening.map_or(0, |opening| opening.n);
            self.stamp(written, n, &now);
            if head.state == State::Closed
                && let (Some(counts), Some(tallies)) = (restored.counts, self.slot.tallies())
            {
                tallies.add_counts(epoch, counts, self.occupant.window_time.now());
            }
        }
    }
}
