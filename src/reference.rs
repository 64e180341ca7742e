//! The reference circuit: the rules of [`model`](crate::model) over a plain
//! `Vec` of failure times. Single-threaded and obviously correct, it is what
//! the engine is checked against.

use crate::config::Config;
use crate::epoch::Epoch;
use crate::model::{self, Admission, Effect, Grant, Head, Verdict};
use crate::snapshot::{Snapshot, State};

/// One circuit, kept the simple way.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    config: Config,
    head: Head,
    failures: Vec<u64>,
}

impl Reference {
    /// A closed circuit with no failures, in epoch `epoch`.
    pub(crate) fn starting_at(config: Config, epoch: Epoch) -> Self {
        Reference {
            config,
            head: Head::closed(epoch),
            failures: Vec::new(),
        }
    }

    /// Admission at `now`.
    pub(crate) fn acquire(&mut self, now: u64) -> Admission {
        let (admission, next) = model::acquire(&self.config, self.head, || now);
        if let Some(next) = next {
            self.set(next);
        }
        admission
    }

    /// The verdict of a permit granted earlier, at `now`.
    pub(crate) fn verdict(&mut self, grant: Grant, verdict: Verdict, now: u64) {
        match model::verdict(&self.config, self.head, grant, verdict, || now) {
            Effect::Stale | Effect::Nothing => {}
            Effect::ClearFailures => self.failures.clear(),
            Effect::RecordFailure => {
                self.failures.push(now);
                let config = &self.config;
                self.failures
                    .retain(|&at| model::in_window(config, at, now));
                let counted = u32::try_from(self.failures.len()).unwrap_or(u32::MAX);
                if let Some(open) = model::tally(config, self.head, grant, counted, now) {
                    self.set(open);
                }
            }
            Effect::Move(next) => self.set(next),
        }
    }

    /// `force_open` at `now`.
    pub(crate) fn force_open(&mut self, now: u64) {
        self.set(model::force_open(self.head, now));
    }

    /// `force_closed`.
    pub(crate) fn force_closed(&mut self) {
        self.set(model::force_closed(self.head));
    }

    /// `reset`.
    pub(crate) fn reset(&mut self) {
        self.set(model::reset(self.head));
    }

    /// The current state.
    pub(crate) fn state(&self) -> State {
        self.head.state
    }

    /// The snapshot at `now`.
    pub(crate) fn snapshot(&self, now: u64) -> Snapshot {
        model::snapshot(&self.config, &self.head, self.failures.iter().copied(), now)
    }

    fn set(&mut self, next: Head) {
        if next.epoch != self.head.epoch {
            self.failures.clear();
        }
        self.head = next;
    }
}
