//! The atomics of the crate and every memory ordering it uses, each with the
//! reason it is enough.
//!
//! Built with `--cfg fuse_loom`, the atomics are loom's, so the models in
//! `loom-tests/` explore every interleaving of the engine. Loom has no
//! 128-bit atomic; there a 128-bit word is a loom mutex around a `u128`,
//! which is at least as strong as the real `cmpxchg16b`-based word.

pub(crate) use std::sync::atomic::Ordering;

#[cfg(not(fuse_loom))]
pub(crate) use core::sync::atomic::AtomicU64;
#[cfg(fuse_loom)]
pub(crate) use loom::sync::atomic::AtomicU64;

#[cfg(not(fuse_loom))]
pub(crate) use portable_atomic::AtomicU128;

#[cfg(fuse_loom)]
pub(crate) use loom_u128::AtomicU128;

/// Loading the state word to decide admission or a verdict. Acquire pairs
/// with the release half of [`CAS_SUCCESS`], so a thread that sees a state
/// also sees what its writer did before writing it. Nothing else is read
/// through this load on the closed path: the epoch it carries is the whole
/// of what a closed permit needs.
pub(crate) const HEAD_LOAD: Ordering = Ordering::Acquire;

/// A compare-and-swap on the state word or the `opened` record that wins.
/// `AcqRel`: the release half publishes the new state, the acquire half
/// orders this thread after the writer it replaced.
pub(crate) const CAS_SUCCESS: Ordering = Ordering::AcqRel;

/// A compare-and-swap that loses: the returned value is decoded and stepped
/// again, so it needs the same acquire as [`HEAD_LOAD`].
pub(crate) const CAS_FAILURE: Ordering = Ordering::Acquire;

/// Every access of the failure-recording path: the claim on the state word,
/// the write of the slot, and the re-read of the state word and the slots
/// that decides the trip. It is a store-then-load pattern between threads
/// (each failure writes its own slot, then reads the others'): only a
/// single total order guarantees that of two failures finishing together,
/// the later one sees the earlier one's slot, so that the last of
/// `failure_threshold` failures always sees them all.
pub(crate) const RECORD: Ordering = Ordering::SeqCst;

/// Reading the `opened` record or a slot for a snapshot or an open-circuit
/// decision. Each record carries the epoch (and claim) it belongs to and is
/// checked against it, so a stale value is recognised rather than trusted;
/// acquire pairs with the release of the CAS that wrote it.
pub(crate) const RECORD_LOAD: Ordering = Ordering::Acquire;

#[cfg(fuse_loom)]
mod loom_u128 {
    use super::Ordering;
    use loom::sync::Mutex;

    /// A 128-bit atomic for loom models: a loom mutex, so loom still
    /// schedules around every access.
    #[derive(Debug)]
    pub(crate) struct AtomicU128(Mutex<u128>);

    impl AtomicU128 {
        pub(crate) fn new(value: u128) -> Self {
            AtomicU128(Mutex::new(value))
        }

        pub(crate) fn load(&self, _order: Ordering) -> u128 {
            *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u128,
            new: u128,
            _success: Ordering,
            _failure: Ordering,
        ) -> Result<u128, u128> {
            let mut value = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *value == current {
                *value = new;
                Ok(current)
            } else {
                Err(*value)
            }
        }
    }
}
