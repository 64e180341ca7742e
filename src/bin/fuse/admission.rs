//! How `fuse status` describes a closed circuit that grades its admission
//! (SPEC §11): the share of calls it admits and why, after its columns
//! (`admits 35 % (ramp_up)`), under throttling with the window the share
//! comes from (`admits 10 % (throttle: 0 accepts of 31 requests)`). A
//! circuit that admits every call, or is not closed, says nothing.

use std::fmt;

use fuse_breaker::admin::CircuitView;
use fuse_breaker::config::Factor;
use fuse_breaker::{Grading, Snapshot, State};

use crate::text::printable;

/// A closed circuit's graded admission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Admission {
    /// The share of calls it admits.
    share: Factor,
    /// Why: `ramp_up` or `throttle` (as an API says it).
    why: String,
    /// The throttle's window: calls that asked, and the successes.
    requests: u64,
    accepts: u64,
}

impl Admission {
    /// The graded admission of a circuit an admin API showed, if it is
    /// closed and grades its admission.
    pub(crate) fn of_view(view: &CircuitView) -> Option<Self> {
        let why = view.graded_by.as_ref()?;
        (view.state == State::Closed.as_str()).then(|| Admission {
            share: view.admission,
            why: why.clone(),
            requests: view.requests,
            accepts: view.accepts,
        })
    }

    /// The graded admission of a circuit read from a store, if it is
    /// closed and grades its admission.
    pub(crate) fn of_snapshot(snapshot: &Snapshot) -> Option<Self> {
        let why = snapshot.graded_by?;
        (snapshot.state == State::Closed).then(|| Admission {
            share: snapshot.admission,
            why: why.as_str().to_owned(),
            requests: snapshot.requests,
            accepts: snapshot.accepts,
        })
    }
}

/// A share in whole percent, rounded down (millionths are exact).
fn percent(share: Factor) -> u32 {
    share.millionths() / 10_000
}

impl fmt::Display for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "admits {} % ({}",
            percent(self.share),
            printable(&self.why)
        )?;
        if self.why == Grading::Throttle.as_str() {
            write!(
                f,
                ": {} accepts of {} requests",
                self.accepts, self.requests
            )?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests;
