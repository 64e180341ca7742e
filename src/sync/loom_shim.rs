//! Loom's atomics, counting every write so that a model can check that
//! a path writes nothing.

use super::Ordering;
use std::sync::atomic::AtomicUsize;

/// A loom `AtomicU64` that counts its writes.
#[derive(Debug)]
pub(crate) struct AtomicU64 {
    inner: loom::sync::atomic::AtomicU64,
    writes: AtomicUsize,
}

impl AtomicU64 {
    pub(crate) fn new(value: u64) -> Self {
        AtomicU64 {
            inner: loom::sync::atomic::AtomicU64::new(value),
            writes: AtomicUsize::new(0),
        }
    }

    pub(crate) fn load(&self, order: Ordering) -> u64 {
        self.inner.load(order)
    }

    pub(crate) fn store(&self, value: u64, order: Ordering) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.inner.store(value, order);
    }

    pub(crate) fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        let result = self.inner.compare_exchange(current, new, success, failure);
        if result.is_ok() {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    pub(crate) fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.inner.fetch_add(value, order)
    }

    pub(crate) fn fetch_min(&self, value: u64, order: Ordering) -> u64 {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.inner.fetch_min(value, order)
    }

    pub(crate) fn writes(&self) -> usize {
        self.writes.load(Ordering::Relaxed)
    }
}

/// A 128-bit atomic for loom models, with the orderings the real one
/// is given. Loom has no 128-bit atomic, so each value written is
/// appended to a list of values (never changed once there) and a loom
/// `AtomicUsize` holds the index of the current one. Loads and
/// compare-and-swaps go through that index with the caller's orderings,
/// so loom explores every value a weaker ordering would let a thread
/// read (a mutex would order every access both ways and check nothing).
/// A compare-and-swap compares values and swaps indices, retrying only
/// if another write came in between. The list is plain storage behind a
/// `std` mutex that loom does not see: it is never held across a loom
/// operation, and what a thread may read is decided by the index alone.
#[derive(Debug)]
pub(crate) struct AtomicU128 {
    current: loom::sync::atomic::AtomicUsize,
    values: std::sync::Mutex<Vec<u128>>,
    writes: AtomicUsize,
}

impl AtomicU128 {
    pub(crate) fn new(value: u128) -> Self {
        AtomicU128 {
            current: loom::sync::atomic::AtomicUsize::new(0),
            values: std::sync::Mutex::new(vec![value]),
            writes: AtomicUsize::new(0),
        }
    }

    fn value(&self, index: usize) -> u128 {
        self.values
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)[index]
    }

    fn publish(&self, value: u128) -> usize {
        let mut values = self
            .values
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        values.push(value);
        values.len() - 1
    }

    pub(crate) fn load(&self, order: Ordering) -> u128 {
        self.value(self.current.load(order))
    }

    pub(crate) fn compare_exchange(
        &self,
        current: u128,
        new: u128,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u128, u128> {
        let mut seen = self.current.load(failure);
        loop {
            let value = self.value(seen);
            if value != current {
                return Err(value);
            }
            let next = self.publish(new);
            match self.current.compare_exchange(seen, next, success, failure) {
                Ok(_) => {
                    self.writes.fetch_add(1, Ordering::Relaxed);
                    return Ok(current);
                }
                Err(actual) => seen = actual,
            }
        }
    }

    pub(crate) fn writes(&self) -> usize {
        self.writes.load(Ordering::Relaxed)
    }
}
