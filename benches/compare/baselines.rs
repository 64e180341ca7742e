//! The hardware baselines: the bare closure, and the closure plus one operation.

use super::{AtomicU64, Breaker, Instant, Mutex, Op, Ordering, Outcome, PoisonError, black_box};

/// The closure alone.
#[derive(Clone, Copy)]
pub(crate) struct Bare;

impl Breaker for Bare {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        Some(op())
    }
}

/// One acquire load of a shared word, and a branch on it.
#[derive(Clone, Copy)]
pub(crate) struct AtomicLoad<'a>(pub(crate) &'a AtomicU64);

impl Breaker for AtomicLoad<'_> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        if self.0.load(Ordering::Acquire) == u64::MAX {
            return None;
        }
        Some(op())
    }
}

/// One `fetch_add` on a shared word.
#[derive(Clone, Copy)]
pub(crate) struct FetchAdd<'a>(pub(crate) &'a AtomicU64);

impl Breaker for FetchAdd<'_> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        self.0.fetch_add(1, Ordering::AcqRel);
        Some(op())
    }
}

/// A counter behind a `std::sync::Mutex`.
#[derive(Clone, Copy)]
pub(crate) struct MutexCounter<'a>(pub(crate) &'a Mutex<u64>);

impl Breaker for MutexCounter<'_> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Some(op())
    }
}

/// One `quanta::Clock::now`.
pub(crate) struct QuantaNow(pub(crate) quanta::Clock);

impl Breaker for QuantaNow {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        black_box(self.0.now());
        Some(op())
    }
}

/// One `quanta::Clock::recent` (the coarse clock's read).
pub(crate) struct QuantaRecent(pub(crate) quanta::Clock);

impl Breaker for QuantaRecent {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        black_box(self.0.recent());
        Some(op())
    }
}

/// One `std::time::Instant::now`.
pub(crate) struct InstantNow;

impl Breaker for InstantNow {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        black_box(Instant::now());
        Some(op())
    }
}
