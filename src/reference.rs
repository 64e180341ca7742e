//! The reference circuit: the rules of [`model`](crate::model) over a plain
//! `Vec` of failure times. Single-threaded and obviously correct, it is what
//! the engine is checked against.

use std::convert::Infallible;

use crate::config::Config;
use crate::epoch::Epoch;
use crate::grade::throttle::{self, Asked};
use crate::grade::{self, Grading, Shed, ramp};
use crate::model::{self, Decision, Effect, Grant, Head, Opening, Span};
use crate::policy::{Buckets, Counts, Outcome, Rule, Window, bucket};
use crate::recovery;
use crate::snapshot::{Snapshot, State};
use crate::verdict::Verdict;

/// One circuit, kept the simple way.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    config: Config,
    head: Head,
    /// The open epoch's opening, or when the half-open epoch started.
    phase: Span,
    /// The last opening (meaningful while open or half-open).
    opening: Opening,
    window: Window,
    /// The seed of the openings' draws (SPEC §10).
    seed: u64,
    /// While the closed epoch ramps up (SPEC §11): the n of the opening
    /// before it, and when it closed.
    ramp: Option<(u32, u64)>,
    /// The throttle's window (SPEC §11): a request is a call, a request
    /// that was not an accept a failed one.
    asked: Buckets,
    /// The bucket of the last request, and the share the throttle sheds,
    /// recomputed by the first request of each bucket (as the engine's
    /// one thread does).
    last_ask: Option<u64>,
    throttle: Shed,
}

impl Reference {
    /// A closed circuit with no failures, in epoch `epoch`.
    pub(crate) fn starting_at(config: Config, epoch: Epoch) -> Self {
        Reference {
            head: Head::closed(epoch),
            phase: Span::since(0),
            opening: Opening::default(),
            window: Window::empty(&config),
            asked: Buckets::empty(&config),
            config,
            seed: 0,
            ramp: None,
            last_ask: None,
            throttle: Shed::NONE,
        }
    }

    /// Replaces the circuit's settings by `config` at `now`, as SPEC §12
    /// says: nothing transitions; a closed window keeps what its rule
    /// keeps, and a new policy or `rate` window starts empty.
    pub(crate) fn reconfigure(&mut self, config: Config, now: u64) {
        let new_shape = !self.window.fits(&config)
            || (config.policy().counts_calls()
                && (self.config.failure_window() != config.failure_window()
                    || self.config.window_buckets() != config.window_buckets()));
        if new_shape {
            // SPEC §12: a new policy or `rate` window starts empty.
            self.window = Window::empty(&config);
        } else if self.head.state == crate::snapshot::State::Closed {
            self.window.reconfigured(&self.config, &config, now);
        }
        self.config = config;
    }

    /// This circuit, drawing its openings' jitter from `seed`.
    pub(crate) fn with_seed(self, seed: u64) -> Self {
        Reference { seed, ..self }
    }

    /// Admission at `now`: a closed circuit's graded admission (SPEC §11)
    /// draws from this thread's generator when a rule sheds anything.
    pub(crate) fn acquire(&mut self, now: u64) -> Decision {
        let phase = || Ok::<_, Infallible>(self.phase);
        let Ok((admission, next)) = model::acquire(&self.config, self.head, phase, || now);
        if let Some(next) = next {
            self.set(next, now, None);
        }
        let Decision::Granted(grant) = admission else {
            return admission;
        };
        if self.head.state != State::Closed {
            return admission;
        }
        let by_ramp = self.ramp_shed(now);
        if by_ramp == Shed::NONE && self.throttle == Shed::NONE {
            return admission;
        }
        match grade::decide(by_ramp, self.throttle, grade::draw()) {
            None => Decision::Granted(grant),
            Some(why) => {
                if why == Grading::Throttle {
                    self.ask(false, now);
                }
                Decision::shed(why)
            }
        }
    }

    /// The share the ramp sheds at `now` (ending it once it is over).
    fn ramp_shed(&mut self, now: u64) -> Shed {
        let Some((_, since)) = self.ramp else {
            return Shed::NONE;
        };
        ramp::shed(&self.config, since, now).unwrap_or_else(|| {
            self.ramp = None;
            Shed::NONE
        })
    }

    /// A request of the closed epoch at `now`, `accepted` or not (under
    /// throttling only).
    fn ask(&mut self, accepted: bool, now: u64) {
        if self.config.throttle_k().is_none() {
            return;
        }
        let counts = Counts::of(if accepted {
            Outcome::SUCCESS
        } else {
            Outcome::FAILURE
        });
        let at = bucket(&self.config, now);
        self.asked.add(at, counts);
        if self.last_ask != Some(at) {
            self.last_ask = Some(at);
            self.throttle = throttle::shed(&self.config, self.asked(now));
        }
    }

    /// The throttle's requests and accepts in the window at `now`.
    fn asked(&self, now: u64) -> Asked {
        let counts = self.asked.sum(&self.config, now);
        Asked {
            requests: counts.calls,
            accepts: counts.calls - counts.failed,
        }
    }

    /// The verdict of a permit granted earlier, at `now`.
    pub(crate) fn verdict(&mut self, grant: Grant, verdict: Verdict, now: u64) {
        self.timed_verdict(grant, verdict, false, now);
    }

    /// The verdict of a permit granted earlier on a call that was `slow` or
    /// not, at `now`.
    pub(crate) fn timed_verdict(&mut self, grant: Grant, verdict: Verdict, slow: bool, now: u64) {
        self.hinted_verdict(grant, verdict, slow, None, now);
    }

    /// The verdict of a permit on a call that was `slow` or not, with the
    /// server's `hint` (nanoseconds) of when to come back, at `now`.
    pub(crate) fn hinted_verdict(
        &mut self,
        grant: Grant,
        verdict: Verdict,
        slow: bool,
        hint: Option<u64>,
        now: u64,
    ) {
        match model::timed_verdict(&self.config, self.head, grant, verdict, slow) {
            Effect::Stale | Effect::Nothing => {}
            Effect::Record(outcome) => {
                self.ask(!outcome.failed, now);
                let relapse = self
                    .ramp
                    .filter(|&(_, since)| ramp::within(&self.config, since, now))
                    .map(|(n, _)| n);
                if self.window.record(&self.config, outcome, now).opens
                    && let Some(open) = model::trip(self.head, grant, relapse)
                {
                    self.set(open, now, hint);
                }
            }
            Effect::Move(next) => self.set(next, now, hint),
        }
    }

    /// `force_open` at `now`.
    pub(crate) fn force_open(&mut self, now: u64) {
        self.set(model::force_open(self.head), now, None);
    }

    /// `force_closed`.
    pub(crate) fn force_closed(&mut self) {
        self.set(model::force_closed(self.head), 0, None);
    }

    /// `reset`.
    pub(crate) fn reset(&mut self) {
        self.set(model::reset(self.head), 0, None);
    }

    /// The current state.
    pub(crate) fn state(&self) -> State {
        self.head.state
    }

    /// The snapshot at `now`.
    pub(crate) fn snapshot(&self, now: u64) -> Snapshot {
        let mut shown = model::snapshot(
            &self.head,
            self.opening,
            self.window.view(&self.config, now),
        );
        if self.config.throttle_k().is_some() || self.ramp.is_some() {
            let by_ramp = self
                .ramp
                .and_then(|(_, since)| ramp::shed(&self.config, since, now))
                .unwrap_or(Shed::NONE);
            let asked = if self.config.throttle_k().is_some() {
                self.asked(now)
            } else {
                Asked::default()
            };
            grade::show(&mut shown, by_ramp, self.throttle, asked);
        }
        shown
    }

    /// Moves to `next` at `now`: a new epoch clears the failure list, an
    /// opening happens at `now` and lasts as SPEC §10 says (with the
    /// verdict's `hint`), a half-open epoch starts at `now`.
    fn set(&mut self, next: Head, now: u64, hint: Option<u64>) {
        if next.epoch != self.head.epoch {
            self.window.clear();
            self.asked = Buckets::empty(&self.config);
            self.last_ask = None;
            self.throttle = Shed::NONE;
            self.ramp = next.ramping.then_some((self.head.n, now));
            match next.state {
                State::Open => {
                    let retry_at = recovery::retry_at(&self.config, next.n, now, self.seed, hint);
                    self.opening = Opening {
                        at: now,
                        retry_at: retry_at.unwrap_or(u64::MAX),
                    };
                    self.phase = Span {
                        at: now,
                        end: retry_at,
                    };
                }
                State::HalfOpen => self.phase = Span::since(now),
                State::Closed => {}
            }
        }
        self.head = next;
    }
}
