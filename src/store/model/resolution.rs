//! The resolution of a store's times: whole microseconds, as payloads keep
//! them and the store's clock tells them.

use std::time::Duration;

/// Nanoseconds in a microsecond.
pub(crate) const NANOS_PER_MICRO: u64 = 1_000;

/// Nanoseconds in a second: milon/fuse's times are whole seconds.
pub(crate) const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The store's time at the payload's resolution (whole microseconds), in
/// nanoseconds: every time the rules see from a store is one, so that
/// writing a time and reading it back changes no decision.
pub(crate) fn store_time(since_epoch: Duration) -> u64 {
    let nanos = u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX);
    nanos - nanos % NANOS_PER_MICRO
}

/// The first time at the payload's resolution at or after `nanos`: when
/// an opening that ends at `nanos` ends in a store (see
/// [`Stored::phase`](crate::store::model::stored::Stored::phase)). A store time, a whole
/// microsecond, is before the one exactly when it is before the other.
pub(crate) fn store_time_at_or_after(nanos: u64) -> u64 {
    nanos
        .div_ceil(NANOS_PER_MICRO)
        .checked_mul(NANOS_PER_MICRO)
        .unwrap_or(nanos - nanos % NANOS_PER_MICRO)
}
