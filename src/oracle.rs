//! A second reading of SPEC §3, written straight from its text and sharing
//! no code with [`model`](crate::model): the differential harness checks
//! the engine and the reference circuit (which both run the model) against
//! it, so that a wrong rule in the model is caught too.
//!
//! Deliberately plain: an unbounded epoch counter, a `Vec` of every failure
//! since the last clear, nanoseconds as `u64`. Only the configuration's
//! getters and the public `Snapshot` and `State` types are shared.

use std::time::Duration;

use crate::config::Config;
use crate::snapshot::{Snapshot, State};

/// One circuit, as SPEC §3 describes it.
#[derive(Clone, Debug)]
pub(crate) struct Oracle {
    threshold: usize,
    window: u64,
    open: u64,
    probes: u32,
    state: State,
    /// Every state change (and every manual change) starts a new epoch.
    epoch: u64,
    opened_at: u64,
    /// The failures recorded since the list was last cleared.
    failures: Vec<u64>,
    successes: u32,
    inflight: u32,
}

/// A permit of the oracle: the epoch that granted it, and whether it is a
/// probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    epoch: u64,
    pub(crate) probe: bool,
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    Failure,
    Ignore,
}

/// The answer to an admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    Granted(Ticket),
    /// Rejected; the circuit may admit again after this many nanoseconds.
    Rejected(u64),
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Oracle {
    /// "A fresh closed circuit."
    pub(crate) fn new(config: &Config) -> Self {
        Oracle {
            threshold: config.failure_threshold() as usize,
            window: nanos(config.failure_window()),
            open: nanos(config.open_duration()),
            probes: config.half_open_probes(),
            state: State::Closed,
            epoch: 0,
            opened_at: 0,
            failures: Vec::new(),
            successes: 0,
            inflight: 0,
        }
    }

    /// Admission at `now`.
    pub(crate) fn acquire(&mut self, now: u64) -> Admit {
        match self.state {
            // "Closed: grant a closed permit."
            State::Closed => self.grant(false),
            State::Open => {
                let elapsed = now.saturating_sub(self.opened_at);
                if elapsed < self.open {
                    // "reject with OpenError, retry_after = open_duration - (now - opened_at)"
                    Admit::Rejected(self.open - elapsed)
                } else {
                    // "this call moves the circuit to HalfOpen (successes 0,
                    // in-flight 1) and is granted a probe"
                    self.change(State::HalfOpen);
                    self.successes = 0;
                    self.inflight = 1;
                    self.grant(true)
                }
            }
            State::HalfOpen => {
                if self.inflight < self.probes {
                    self.inflight += 1;
                    self.grant(true)
                } else {
                    // "in-flight == half_open_probes: reject, retry_after = 0"
                    Admit::Rejected(0)
                }
            }
        }
    }

    /// The verdict of `ticket` at `now`: "applied only if the circuit is
    /// still in the epoch that granted the permit".
    pub(crate) fn end(&mut self, ticket: Ticket, outcome: Outcome, now: u64) {
        if ticket.epoch != self.epoch {
            return;
        }
        match (ticket.probe, outcome) {
            // "closed permit, success: clear the failure list"
            (false, Outcome::Success) => self.failures.clear(),
            (false, Outcome::Failure) => {
                // "add now to the failure list ... counted while
                // now - t <= failure_window ... When the counted failures
                // reach failure_threshold, move to Open with opened_at = now"
                self.failures.push(now);
                let window = self.window;
                let counted = self
                    .failures
                    .iter()
                    .filter(|&&t| now.saturating_sub(t) <= window)
                    .count();
                if counted >= self.threshold {
                    self.open_at(now);
                }
            }
            // "closed permit, ignore: nothing"
            (false, Outcome::Ignore) => {}
            (true, Outcome::Success) => {
                // "successes += 1, in-flight -= 1; when successes reach
                // half_open_probes, move to Closed with an empty failure list"
                self.successes += 1;
                self.inflight -= 1;
                if self.successes == self.probes {
                    self.change(State::Closed);
                }
            }
            // "probe, failure: move to Open with opened_at = now"
            (true, Outcome::Failure) => self.open_at(now),
            // "probe, ignore: in-flight -= 1"
            (true, Outcome::Ignore) => self.inflight -= 1,
        }
    }

    /// "`force_open`: Open, `opened_at = now`, counters and failures cleared."
    pub(crate) fn force_open(&mut self, now: u64) {
        self.open_at(now);
    }

    /// "`force_closed`: Closed, failures cleared."
    pub(crate) fn force_closed(&mut self) {
        self.change(State::Closed);
    }

    /// "`reset`: forget the circuit; the next read is a fresh closed circuit."
    pub(crate) fn reset(&mut self) {
        self.change(State::Closed);
    }

    pub(crate) fn state(&self) -> State {
        self.state
    }

    /// "A snapshot holds: `state`, `opened_at` (none while closed),
    /// `failures` (the counted failures still inside the window, oldest
    /// first), `half_open_successes`, `half_open_inflight`."
    pub(crate) fn snapshot(&self, now: u64) -> Snapshot {
        let mut failures: Vec<u64> = self
            .failures
            .iter()
            .copied()
            .filter(|&t| now.saturating_sub(t) <= self.window)
            .collect();
        failures.sort_unstable();
        let half_open = self.state == State::HalfOpen;
        Snapshot {
            state: self.state,
            opened_at: (self.state != State::Closed).then(|| Duration::from_nanos(self.opened_at)),
            failures: failures.into_iter().map(Duration::from_nanos).collect(),
            half_open_successes: if half_open { self.successes } else { 0 },
            half_open_inflight: if half_open { self.inflight } else { 0 },
            calls: 0,
            failed: 0,
            slow: 0,
        }
    }

    fn grant(&self, probe: bool) -> Admit {
        Admit::Granted(Ticket {
            epoch: self.epoch,
            probe,
        })
    }

    fn open_at(&mut self, now: u64) {
        self.change(State::Open);
        self.opened_at = now;
    }

    /// A state change: a new epoch; "while `Open` or `HalfOpen` the failure
    /// list is empty", and the half-open counters start over.
    fn change(&mut self, state: State) {
        self.state = state;
        self.epoch += 1;
        self.failures.clear();
        self.successes = 0;
        self.inflight = 0;
    }
}
