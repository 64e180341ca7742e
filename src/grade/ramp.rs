//! The ramp-up after recovery (SPEC §11): for `ramp_up` after a circuit
//! closes from half-open, a call is admitted with probability
//! `max(ramp_up_floor / 100, t / ramp_up)`, `t` the time since it closed.

use super::Shed;
use crate::config::{Config, nanos};

/// The share a ramp that started at `since` sheds at `now`; `None` once
/// the ramp is over (or for a circuit without one). A clock behind the
/// start reads as the start.
pub(crate) fn shed(config: &Config, since: u64, now: u64) -> Option<Shed> {
    let ramp = nanos(config.ramp_up()?);
    let t = now.saturating_sub(since);
    if t >= ramp {
        return None;
    }
    #[allow(clippy::cast_precision_loss)] // a share: 2^-52 is plenty
    let share = t as f64 / ramp as f64;
    let admitted = share.max(f64::from(config.ramp_up_floor()) / 100.0);
    Some(Shed::of(1.0 - admitted))
}

/// Whether a relapse at `now` of a ramp that started at `since` falls
/// within it (then the opening is the next in a row, SPEC §11).
pub(crate) fn within(config: &Config, since: u64, now: u64) -> bool {
    config
        .ramp_up()
        .is_some_and(|ramp| now.saturating_sub(since) < nanos(ramp))
}
