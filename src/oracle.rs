//! A second reading of SPEC §3, §9, §10 and §11 (and §8's quorum),
//! written straight from its text and sharing no code with
//! [`model`](crate::model), [`policy`](crate::policy) or
//! [`grade`](crate::grade): the differential harness checks the engine
//! and the reference circuit (which both run the model) against it, so
//! that a wrong rule in the model is caught too.
//!
//! Deliberately plain: an unbounded epoch counter, a `Vec` of every failure
//! (under `count`) or every counted call (under `rate`) since the last
//! clear, nanoseconds as `u64`, and each sum taken afresh from the list.
//! Only the configuration's public getters and the public `Snapshot`,
//! `State`, `Policy`, `Factor` and `Grading` types are shared (and §11's
//! draws come from the same thread-local generator, `fastrand`).

use std::time::Duration;

use crate::Grading;
use crate::config::Config;
use crate::config::Policy;
use crate::snapshot::{Snapshot, State};

mod graded;
mod live;
mod recovery;
mod wide;
use graded::Graded;

#[cfg(test)]
mod tests;

/// The `rate` settings of SPEC §9, read once from the configuration.
#[derive(Clone, Copy, Debug)]
struct RateSettings {
    /// `w = failure_window / window_buckets`, in whole nanoseconds.
    width: u64,
    buckets: u64,
    minimum_calls: u64,
    failure_rate: u64,
    /// `None`: "no call is slow".
    slow_call_duration: Option<u64>,
    slow_call_rate: u64,
}

/// One call a `rate` window counted: the bucket of its verdict, and
/// whether it failed and whether it was slow.
#[derive(Clone, Copy, Debug)]
struct Call {
    bucket: u64,
    failed: bool,
    slow: bool,
}

/// The recovery settings of SPEC §10, read once from the configuration:
/// factors in millionths, durations in nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Recovery {
    backoff: u128,
    max_open: u64,
    jitter: u128,
    probe_timeout: u64,
    /// Where `u` comes from: a seed, mixed with the opening's time.
    seed: u64,
}

/// One circuit, as SPEC §3 describes it.
#[derive(Clone, Debug)]
pub(crate) struct Oracle {
    threshold: usize,
    window: u64,
    open: u64,
    probes: u32,
    recovery: Recovery,
    /// §10's n: "n = 0 when the circuit opens from Closed or by
    /// `force_open`; n + 1 when a probe fails".
    n: u32,
    /// The current opening's d.
    open_for: u64,
    /// When the circuit last entered `HalfOpen`.
    half_open_at: u64,
    /// `Some` under `rate`, `None` under `count`.
    rate: Option<RateSettings>,
    state: State,
    /// Every state change (and every manual change) starts a new epoch.
    epoch: u64,
    opened_at: u64,
    /// The failures recorded since the list was last cleared (`count`).
    failures: Vec<u64>,
    /// The calls recorded since the window was last emptied (`rate`).
    calls: Vec<Call>,
    /// §8: "the counted failures in its window were reported by at least
    /// `min_reporters` distinct processes": when each counted failure
    /// (under `rate`, each failed or slow call) recorded since the window
    /// was last emptied happened, and who reported it.
    reported: Vec<(u64, u64)>,
    /// `min_reporters` for a shared circuit (1 in one process: "in one
    /// process the quorum is 1").
    quorum: usize,
    /// Whether the circuit is a shared store's (its snapshot shows its
    /// reporters).
    shared: bool,
    successes: u32,
    inflight: u32,
    /// §11's ramp-up and throttling.
    graded: Graded,
}

/// A permit of the oracle: the epoch that granted it, whether it is a
/// probe, and when it was granted (a call's time runs from admission to
/// verdict).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    epoch: u64,
    pub(crate) probe: bool,
    admitted: u64,
    /// Whether its circuit timed its calls when it was admitted (a call
    /// admitted untimed is never slow: its time was not taken).
    timed: bool,
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
    /// §11: a closed circuit rejected the call "with a rejection that says
    /// it was throttled, `retry_after = 0`", and why.
    Throttled(Grading),
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
            recovery: Recovery {
                backoff: u128::from(config.open_backoff().millionths()),
                max_open: nanos(config.max_open_duration()),
                jitter: u128::from(config.open_jitter().millionths()),
                probe_timeout: nanos(config.probe_timeout()),
                seed: 0,
            },
            n: 0,
            open_for: 0,
            half_open_at: 0,
            rate: (config.policy() == Policy::Rate).then(|| RateSettings {
                width: Self::width(config),
                buckets: u64::from(config.window_buckets()),
                minimum_calls: u64::from(config.minimum_calls()),
                failure_rate: u64::from(config.failure_rate()),
                slow_call_duration: config.slow_call_duration().map(nanos),
                slow_call_rate: u64::from(config.slow_call_rate()),
            }),
            state: State::Closed,
            epoch: 0,
            opened_at: 0,
            failures: Vec::new(),
            calls: Vec::new(),
            reported: Vec::new(),
            quorum: 1,
            shared: false,
            successes: 0,
            inflight: 0,
            graded: Graded::new(config),
        }
    }

    /// This circuit as a shared store keeps it: §8's quorum of
    /// `min_reporters` distinct reporters.
    #[cfg_attr(not(all(test, feature = "store")), allow(dead_code))] // the stored model's tests
    pub(crate) fn shared(mut self, config: &Config) -> Self {
        self.quorum = config.min_reporters() as usize;
        self.shared = true;
        self
    }

    /// §9's `w`. A bucket narrower than a nanosecond is not defined by the
    /// text, so the histories here never build one.
    fn width(config: &Config) -> u64 {
        let width = nanos(config.failure_window()) / u64::from(config.window_buckets());
        assert!(width > 0, "a bucket of zero nanoseconds: {config:?}");
        width
    }

    /// This circuit, with `u` drawn from `seed` (§10: "drawn once when the
    /// circuit opens").
    pub(crate) fn with_seed(mut self, seed: u64) -> Self {
        self.recovery.seed = seed;
        self
    }

    /// Admission at `now`.
    pub(crate) fn acquire(&mut self, now: u64) -> Admit {
        match self.state {
            // "Closed: grant a closed permit", unless §11's graded
            // admission sheds the call.
            State::Closed => match self.graded.admit(now) {
                Some(why) => Admit::Throttled(why),
                None => self.grant(false, now),
            },
            State::Open => {
                // "Open and now - opened_at < open_duration: reject with
                // OpenError, retry_after = open_duration - (now -
                // opened_at)", the opening lasting d (§10); a clock that
                // stepped back to before the opening has seen none of it
                // pass. The opening's instants past the clock's last one
                // (2^64 - 1) do not exist: it lasts to the end of time, and
                // asks for the instants left to it.
                let elapsed = now.saturating_sub(self.opened_at);
                if elapsed < self.open_for {
                    let end = (u128::from(self.opened_at) + u128::from(self.open_for)).min(1 << 64);
                    let from = u128::from(now.max(self.opened_at));
                    Admit::Rejected(u64::try_from(end - from).unwrap_or(u64::MAX))
                } else {
                    // "this call moves the circuit to HalfOpen (successes 0,
                    // in-flight 1) and is granted a probe"
                    self.half_open(now)
                }
            }
            State::HalfOpen => {
                if now.saturating_sub(self.half_open_at) >= self.recovery.probe_timeout {
                    // §10: "neither closed nor re-opened within probe_timeout
                    // of entering HalfOpen starts over: the next admission
                    // after that moves it to a new HalfOpen epoch (in-flight
                    // 1, successes 0) and is its first probe".
                    self.half_open(now)
                } else if self.inflight < self.probes {
                    self.inflight += 1;
                    self.grant(true, now)
                } else {
                    // "in-flight == half_open_probes: reject, retry_after = 0"
                    Admit::Rejected(0)
                }
            }
        }
    }

    /// The verdict of `ticket` at `now`: "applied only if the circuit is
    /// still in the epoch that granted the permit". The call took `now -`
    /// the ticket's admission time. A counted failure may carry the server's
    /// `hint` (§10: "When that verdict opens or re-opens the circuit, the
    /// opening lasts max(d, min(hint, `max_open_duration`)). A hint on a
    /// failure that does not open the circuit changes nothing.")
    pub(crate) fn end_hinted(
        &mut self,
        ticket: Ticket,
        outcome: Outcome,
        hint: Option<u64>,
        now: u64,
    ) {
        self.end_reported(ticket, outcome, hint, 0, now);
    }

    /// [`end_hinted`](Self::end_hinted), the verdict reported by `reporter`
    /// (§8).
    pub(crate) fn end_reported(
        &mut self,
        ticket: Ticket,
        outcome: Outcome,
        hint: Option<u64>,
        reporter: u64,
        now: u64,
    ) {
        if ticket.epoch != self.epoch {
            return;
        }
        // §9: "A success or a counted failure whose time from admission to
        // verdict is at least slow_call_duration is also slow" (under
        // `rate` only; "an ignore adds nothing, however long it took").
        let slow = ticket.timed
            && self.rate.is_some_and(|rate| {
                rate.slow_call_duration
                    .is_some_and(|slow| now.saturating_sub(ticket.admitted) >= slow)
            });
        // §11: "requests counts the calls that asked while Closed ... and
        // accepts the admitted calls whose verdict was a success; an ignore
        // is neither" (a slow success is still a success).
        if !ticket.probe && outcome != Outcome::Ignore {
            self.graded.verdict(outcome == Outcome::Success, now);
        }
        match (ticket.probe, outcome) {
            (false, Outcome::Ignore) => {}
            (false, outcome) if self.rate.is_some() => {
                let failed = outcome == Outcome::Failure;
                if failed || slow {
                    self.reported.push((now, reporter));
                }
                self.count_call(failed, slow, hint, now);
            }
            // "closed permit, success: clear the failure list"
            (false, Outcome::Success) => {
                self.failures.clear();
                self.reported.clear();
            }
            (false, Outcome::Failure) => {
                // "add now to the failure list ... counted while
                // now - t <= failure_window ... When the counted failures
                // reach failure_threshold, move to Open with opened_at = now"
                // (§8: and they came from `min_reporters` reporters).
                self.failures.push(now);
                self.reported.push((now, reporter));
                let window = self.window;
                let counted = self
                    .failures
                    .iter()
                    .filter(|&&t| now.saturating_sub(t) <= window)
                    .count();
                if counted >= self.threshold && self.reporters(now) >= self.quorum {
                    self.trip(now, hint);
                }
            }
            // §9: "Under rate, a probe whose success is slow is a failed
            // probe."
            (true, Outcome::Success) if slow => self.reopen_at(now, hint),
            (true, Outcome::Success) => {
                // "successes += 1, in-flight -= 1; when successes reach
                // half_open_probes, move to Closed with an empty failure list"
                self.successes += 1;
                self.inflight -= 1;
                // §12: "closes when its successes reach it" (the new
                // half_open_probes, which may be below them already).
                if self.successes >= self.probes {
                    // §11: a ramp, remembering the n before it.
                    let n = self.n;
                    self.change(State::Closed);
                    self.graded.closed_by_probes(n, now);
                }
            }
            // "probe, failure: move to Open with opened_at = now"
            (true, Outcome::Failure) => self.reopen_at(now, hint),
            // "probe, ignore: in-flight -= 1"
            (true, Outcome::Ignore) => self.inflight -= 1,
        }
    }

    /// §9 under `rate`: "A success adds one call; a counted failure adds
    /// one call and one failure" to the bucket of `now`. "The rule is
    /// evaluated each time a counted failure or a slow call is recorded in
    /// a closed epoch: when `calls >= minimum_calls` and `failures * 100 >=
    /// failure_rate * calls` or `slow * 100 >= slow_call_rate * calls`, the
    /// circuit moves to Open with `opened_at = now`. A success never ...
    /// opens the circuit by itself."
    fn count_call(&mut self, failed: bool, slow: bool, hint: Option<u64>, now: u64) {
        let Some(rate) = self.rate else { return };
        self.calls.push(Call {
            bucket: now / rate.width,
            failed,
            slow,
        });
        if !(failed || slow) {
            return;
        }
        let (calls, failures, slows, _) = self.window_counts(now);
        let at_least = |part: u64, percent: u64| {
            u128::from(part) * 100 >= u128::from(percent) * u128::from(calls)
        };
        if calls >= rate.minimum_calls
            && (at_least(failures, rate.failure_rate)
                // §2: with no `slow_call_duration`, "no call is slow" (the
                // window may hold calls timed slow before, SPEC §12).
                || (rate.slow_call_duration.is_some() && at_least(slows, rate.slow_call_rate)))
            && self.reporters(now) >= self.quorum
        {
            self.trip(now, hint);
        }
    }

    /// §9: "at `now` the window holds the current bucket and the
    /// `window_buckets - 1` before it": the calls, failures, slow calls
    /// and slow calls that failed of those buckets (all zero under
    /// `count`).
    fn window_counts(&self, now: u64) -> (u64, u64, u64, u64) {
        let Some(rate) = self.rate else {
            return (0, 0, 0, 0);
        };
        let current = now / rate.width;
        let oldest = current.saturating_sub(rate.buckets - 1);
        self.calls
            .iter()
            .filter(|call| (oldest..=current).contains(&call.bucket))
            .fold((0, 0, 0, 0), |(calls, failures, slows, both), call| {
                (
                    calls + 1,
                    failures + u64::from(call.failed),
                    slows + u64::from(call.slow),
                    both + u64::from(call.failed && call.slow),
                )
            })
    }

    /// §8: how many distinct processes reported the counted failures (under
    /// `rate`, the failed or slow calls) in the window at `now`.
    pub(crate) fn reporters(&self, now: u64) -> usize {
        let in_window = |t: u64| match self.rate {
            None => now.saturating_sub(t) <= self.window,
            Some(rate) => {
                let current = now / rate.width;
                (current.saturating_sub(rate.buckets - 1)..=current).contains(&(t / rate.width))
            }
        };
        let mut reporters: Vec<u64> = self
            .reported
            .iter()
            .filter(|&&(t, _)| in_window(t))
            .map(|&(_, reporter)| reporter)
            .collect();
        reporters.sort_unstable();
        reporters.dedup();
        reporters.len()
    }

    /// "`force_open`: Open, `opened_at = now`, counters and failures
    /// cleared", and (§10) n = 0.
    pub(crate) fn force_open(&mut self, now: u64) {
        self.open_at(now, 0, None);
    }

    /// "`force_closed`: Closed, failures cleared."
    pub(crate) fn force_closed(&mut self) {
        self.change(State::Closed);
    }

    /// "`reset`: forget the circuit; the next read is a fresh closed circuit."
    pub(crate) fn reset(&mut self) {
        self.change(State::Closed);
    }

    /// Whether `ticket` was granted in the current epoch: its verdict is
    /// not stale.
    #[cfg(all(test, feature = "store"))]
    pub(crate) fn is_current(&self, ticket: &Ticket) -> bool {
        ticket.epoch == self.epoch
    }

    pub(crate) fn state(&self) -> State {
        self.state
    }

    /// "A snapshot holds: `state`, `opened_at` (none while closed),
    /// `failures` (the counted failures still inside the window, oldest
    /// first), `half_open_successes`, `half_open_inflight`", and (§9)
    /// `calls`, `failed`, `slow`.
    pub(crate) fn snapshot(&self, now: u64) -> Snapshot {
        let mut failures: Vec<u64> = self
            .failures
            .iter()
            .copied()
            .filter(|&t| now.saturating_sub(t) <= self.window)
            .collect();
        failures.sort_unstable();
        let half_open = self.state == State::HalfOpen;
        // §9: "A snapshot adds calls, failed and slow in the window;
        // failures stays empty under rate" (and the window is empty while
        // open or half-open).
        let (calls, failed, slow, slow_failed) = self.window_counts(now);
        let mut shown = Snapshot {
            state: self.state,
            opened_at: (self.state != State::Closed).then(|| Duration::from_nanos(self.opened_at)),
            failures: failures.into_iter().map(Duration::from_nanos).collect(),
            half_open_successes: if half_open { self.successes } else { 0 },
            half_open_inflight: if half_open { self.inflight } else { 0 },
            calls,
            failed,
            slow,
            // A shared circuit's store keeps slow calls, not by verdict.
            slow_failed: (!self.shared).then_some(slow_failed),
            // §10: "A snapshot shows the opening's duration and n."
            open_for: (self.state == State::Open)
                .then(|| Duration::from_nanos(self.open_for.min(u64::MAX - self.opened_at))),
            openings: if self.state == State::Closed {
                0
            } else {
                self.n + 1
            },
            // The quorum's reporters in the window (a shared store keeps
            // up to `min_reporters` of them).
            reporters: if self.shared {
                u32::try_from(self.reporters(now).min(self.quorum)).unwrap_or(u32::MAX)
            } else {
                0
            },
            admission: crate::config::Factor::ONE,
            graded_by: None,
            requests: 0,
            accepts: 0,
        };
        // §11 adds what a closed circuit's graded admission is.
        if self.state == State::Closed {
            self.graded.show(&mut shown, now);
        }
        shown
    }

    fn grant(&self, probe: bool, now: u64) -> Admit {
        Admit::Granted(Ticket {
            epoch: self.epoch,
            probe,
            admitted: now,
            timed: self
                .rate
                .is_some_and(|rate| rate.slow_call_duration.is_some()),
        })
    }

    /// Open at `now` as the n-th opening in a row, with the verdict's
    /// `hint`.
    fn open_at(&mut self, now: u64, n: u32, hint: Option<u64>) {
        self.change(State::Open);
        self.opened_at = now;
        self.n = n;
        self.open_for = self.duration(n, now, hint);
    }

    /// A closed circuit's rule opens it at `now`: a first opening ("n = 0
    /// when the circuit opens from Closed"), but for §11's relapse within a
    /// ramp, which is "n + 1 of §10, as if the probe had failed".
    fn trip(&mut self, now: u64, hint: Option<u64>) {
        let n = self.graded.opening(now);
        self.open_at(now, n, hint);
    }

    /// A failed probe: "n + 1 when a probe fails".
    fn reopen_at(&mut self, now: u64, hint: Option<u64>) {
        self.open_at(now, self.n.saturating_add(1), hint);
    }

    /// A new `HalfOpen` epoch at `now` whose first probe this call is.
    fn half_open(&mut self, now: u64) -> Admit {
        self.change(State::HalfOpen);
        self.half_open_at = now;
        self.successes = 0;
        self.inflight = 1;
        self.grant(true, now)
    }

    /// A state change: a new epoch; "while `Open` or `HalfOpen` the failure
    /// list is empty", and the half-open counters start over. §9: "Entering
    /// Open empties the window; a circuit that closes starts with an empty
    /// window."
    fn change(&mut self, state: State) {
        if state == State::Closed {
            // §10: "Closing or reset sets n back to 0."
            self.n = 0;
        }
        self.state = state;
        self.epoch += 1;
        self.failures.clear();
        self.calls.clear();
        self.reported.clear();
        self.successes = 0;
        self.inflight = 0;
        self.graded.clear();
    }
}
