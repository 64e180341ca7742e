//! A `count` circuit's [`Rings`]: the ring of failure times in use, and the
//! smaller ones a raised threshold replaced (SPEC §12).
//!
//! Which ring a state word's claims live in is said by the word itself:
//! a `count` word's ring parity (see [`Word::ring_parity`]) picks the
//! newest ring or the one before it, whichever has that parity (ring `i`
//! has parity `i mod 2`). A ring grows in two steps, each a compare-and-swap
//! of the word that flips its parity after the new ring is pushed and
//! holds a copy of the word's claims (so every reader of the new word
//! finds them there, and every writer of a claim on the old word loses its
//! compare-and-swap to the flip and decides again); the second step ends
//! at parity 0, which the closed paths of a circuit that does not time its
//! calls test in their one mask. Rings are never removed while the
//! circuit lives (a stale caller may still read one), and each growth at
//! least doubles the length: at most two rings per doubling up to
//! [`MAX_FAILURE_THRESHOLD`](crate::config::MAX_FAILURE_THRESHOLD).

use super::Ring;
use crate::packed::Word;
use crate::sync::{AtomicU64, RINGS_LOAD, RINGS_STORE};

/// The rings of one `count` circuit (see the module).
#[derive(Debug)]
pub(crate) struct Rings {
    first: Ring,
    /// Rings 1, 2, ...: pushed by growths, never removed.
    grown: boxcar::Vec<Ring>,
    /// How many rings were pushed: stored (release) after each push, and
    /// what a reader loads (acquire) to find the newest, so that it sees
    /// the ring it picks whole.
    pushed: AtomicU64,
}

impl Rings {
    /// One ring for `threshold`.
    pub(crate) fn new(threshold: u32) -> Self {
        Rings {
            first: Ring::new(threshold),
            grown: boxcar::Vec::new(),
            pushed: AtomicU64::new(0),
        }
    }

    /// The ring the claims of `word` live in. One load and a compare
    /// while the ring never grew.
    #[inline]
    pub(crate) fn of(&self, word: Word) -> &Ring {
        let newest = self.newest_index();
        if newest == 0 {
            return &self.first;
        }
        self.of_grown(newest, word.ring_parity())
    }

    #[cold]
    #[inline(never)]
    fn of_grown(&self, newest: usize, parity: bool) -> &Ring {
        let index = if (newest % 2 == 1) == parity {
            newest
        } else {
            newest - 1
        };
        self.get(index)
    }

    /// The newest ring's index (0: the first).
    #[inline]
    fn newest_index(&self) -> usize {
        // RINGS_LOAD (Acquire): see `sync`.
        usize::try_from(self.pushed.load(RINGS_LOAD)).unwrap_or(usize::MAX)
    }

    /// Ring `index` (0: the first).
    fn get(&self, index: usize) -> &Ring {
        match index.checked_sub(1) {
            Some(grown) => self.grown.get(grown).unwrap_or(&self.first),
            None => &self.first,
        }
    }

    /// The ring parity of a word whose claims live in the newest ring.
    pub(crate) fn newest_parity(&self) -> bool {
        self.newest_index() % 2 == 1
    }

    /// The newest ring: the one a growth copies from last.
    pub(crate) fn newest(&self) -> &Ring {
        self.get(self.newest_index())
    }

    /// Pushes a ring for `threshold`, the newest from now on, and returns
    /// it with the parity a word must have to use it. Only a
    /// reconfiguration calls it, one at a time per circuit.
    pub(crate) fn push(&self, threshold: u32) -> (&Ring, bool) {
        let index = self.grown.push(Ring::new(threshold)) + 1;
        // RINGS_STORE (Release): see `sync`.
        self.pushed.store(index as u64, RINGS_STORE);
        (self.get(index), index % 2 == 1)
    }
}
