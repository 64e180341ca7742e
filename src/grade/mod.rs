//! Graded admission (SPEC §11): how much of a closed circuit's traffic it
//! admits. Two rules, each off by default: the ramp-up after a circuit
//! closes from half-open ([`ramp`]) and adaptive throttling ([`throttle`]).
//! Neither changes the state machine: a closed circuit they grade draws,
//! per call, whether to admit it, and a call it does not admit is
//! rejected as throttled, with nothing to wait for.
//!
//! Both rules give a share of calls to shed as a [`Shed`]: a fraction of
//! 2^32, so that the draw is one random `u32` and one compare. When both
//! are in force the larger share is shed; a draw that either rule alone
//! would have shed is the throttle's (it counts a request, SPEC §11), the
//! rest the ramp's (it counts nothing).

pub(crate) use crate::snapshot::Grading;

pub(crate) mod ramp;
pub(crate) mod throttle;
mod window;

pub(crate) use window::{Share, Throttle};

/// The share of calls a rule sheds: `parts` out of 2^32 (never all: a
/// ramp admits at least its floor, which is at least 1 %, and the
/// throttle's formula is below 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Shed(pub(crate) u32);

impl Shed {
    /// Nothing shed.
    pub(crate) const NONE: Shed = Shed(0);

    /// The share `probability` (clamped to 0 ..= 1, less than one part;
    /// not a number is nothing).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped first
    pub(crate) fn of(probability: f64) -> Shed {
        if probability.is_nan() {
            return Shed::NONE;
        }
        let parts = (probability.clamp(0.0, 1.0) * 4_294_967_296.0).floor();
        Shed(parts.min(f64::from(u32::MAX)) as u32)
    }

    /// The share as a probability.
    pub(crate) fn probability(self) -> f64 {
        f64::from(self.0) / 4_294_967_296.0
    }

    /// Whether a call whose draw is `draw` (uniform over `u32`) is shed.
    #[inline]
    pub(crate) fn sheds(self, draw: u32) -> bool {
        draw < self.0
    }
}

/// What a closed circuit's graded admission decides for one call, given
/// the two rules' shares and the call's draw: `None` to admit it, else
/// which rule sheds it (see the module's documentation).
#[inline]
pub(crate) fn decide(ramp: Shed, throttle: Shed, draw: u32) -> Option<Grading> {
    if throttle.sheds(draw) {
        Some(Grading::Throttle)
    } else if ramp.sheds(draw) {
        Some(Grading::RampUp)
    } else {
        None
    }
}

/// Why admission is graded and the probability that a call is admitted,
/// from the two rules' shares: `None` when neither sheds anything.
pub(crate) fn in_force(ramp: Shed, throttle: Shed) -> Option<(Grading, f64)> {
    let (why, shed) = if throttle >= ramp && throttle > Shed::NONE {
        (Grading::Throttle, throttle)
    } else if ramp > Shed::NONE {
        (Grading::RampUp, ramp)
    } else {
        return None;
    };
    Some((why, 1.0 - shed.probability()))
}

/// `snapshot` (of a closed circuit) with what its graded admission shows:
/// the rule in force and the admitted share (see [`in_force`]) and the
/// throttle's window.
pub(crate) fn show(
    snapshot: &mut crate::Snapshot,
    ramp: Shed,
    throttle: Shed,
    asked: throttle::Asked,
) {
    if snapshot.state != crate::State::Closed {
        return;
    }
    if let Some((why, admitted)) = in_force(ramp, throttle) {
        snapshot.graded_by = Some(why);
        snapshot.admission = crate::config::Factor::from_f64(admitted);
    }
    snapshot.requests = asked.requests;
    snapshot.accepts = asked.accepts;
}

/// The draw of one graded admission: a uniform `u32` from this thread's
/// generator (no shared write). Tests seed it with
/// `fastrand::seed` on the thread that admits.
#[cfg(not(fuse_loom))]
#[inline]
pub(crate) fn draw() -> u32 {
    fastrand::u32(..)
}

/// Under loom, the middle of the range: a model's threads share one OS
/// thread's generator, whose draws loom cannot replay, so every draw is
/// the same, and a share above one half sheds a call, one below admits it.
#[cfg(fuse_loom)]
#[inline]
pub(crate) fn draw() -> u32 {
    1 << 31
}

#[cfg(test)]
mod tests;
