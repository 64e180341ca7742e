//! The reference circuit: the rules of [`model`](crate::model) over a plain
//! `Vec` of failure times. Single-threaded and obviously correct, it is what
//! the engine is checked against.

use std::convert::Infallible;

use crate::config::Config;
use crate::epoch::Epoch;
use crate::model::{self, Decision, Effect, Grant, Head};
use crate::policy::Window;
use crate::snapshot::{Snapshot, State};
use crate::verdict::Verdict;

/// One circuit, kept the simple way.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    config: Config,
    head: Head,
    /// When the circuit last opened (meaningful while open or half-open).
    opened_at: u64,
    window: Window,
}

impl Reference {
    /// A closed circuit with no failures, in epoch `epoch`.
    pub(crate) fn starting_at(config: Config, epoch: Epoch) -> Self {
        Reference {
            head: Head::closed(epoch),
            opened_at: 0,
            window: Window::empty(&config),
            config,
        }
    }

    /// Admission at `now`.
    pub(crate) fn acquire(&mut self, now: u64) -> Decision {
        let opened = || Ok::<_, Infallible>(self.opened_at);
        let Ok((admission, next)) = model::acquire(&self.config, self.head, opened, || now);
        if let Some(next) = next {
            self.set(next, now);
        }
        admission
    }

    /// The verdict of a permit granted earlier, at `now`.
    pub(crate) fn verdict(&mut self, grant: Grant, verdict: Verdict, now: u64) {
        self.timed_verdict(grant, verdict, false, now);
    }

    /// The verdict of a permit granted earlier on a call that was `slow` or
    /// not, at `now`.
    pub(crate) fn timed_verdict(&mut self, grant: Grant, verdict: Verdict, slow: bool, now: u64) {
        match model::timed_verdict(&self.config, self.head, grant, verdict, slow) {
            Effect::Stale | Effect::Nothing => {}
            Effect::Record(outcome) => {
                if self.window.record(&self.config, outcome, now).opens
                    && let Some(open) = model::trip(self.head, grant)
                {
                    self.set(open, now);
                }
            }
            Effect::Move(next) => self.set(next, now),
        }
    }

    /// `force_open` at `now`.
    pub(crate) fn force_open(&mut self, now: u64) {
        self.set(model::force_open(self.head), now);
    }

    /// `force_closed`.
    pub(crate) fn force_closed(&mut self) {
        self.set(model::force_closed(self.head), 0);
    }

    /// `reset`.
    pub(crate) fn reset(&mut self) {
        self.set(model::reset(self.head), 0);
    }

    /// The current state.
    pub(crate) fn state(&self) -> State {
        self.head.state
    }

    /// The snapshot at `now`.
    pub(crate) fn snapshot(&self, now: u64) -> Snapshot {
        model::snapshot(
            &self.head,
            self.opened_at,
            self.window.view(&self.config, now),
        )
    }

    /// Moves to `next` at `now`: a new epoch clears the failure list, and
    /// an opening happens at `now`.
    fn set(&mut self, next: Head, now: u64) {
        if next.epoch != self.head.epoch {
            self.window.clear();
            if next.state == State::Open {
                self.opened_at = now;
            }
        }
        self.head = next;
    }
}
