//! The public view of a circuit: [`State`] and [`Snapshot`].

use std::time::Duration;

/// The state of a circuit (SPEC §3).
///
/// ```
/// use fuse_breaker::{Config, Fuse, State};
/// let fuse = Fuse::new("billing", Config::default());
/// assert_eq!(fuse.state(), State::Closed);
/// fuse.force_open();
/// assert_eq!(fuse.state(), State::Open);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls run; counted failures are remembered inside the window.
    Closed,
    /// Calls are rejected until the open duration has passed.
    Open,
    /// A limited number of probes run; enough successes close the circuit.
    HalfOpen,
}

impl State {
    /// The state's name as stores and logs spell it: `closed`, `open`, `half_open`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::State::HalfOpen.as_str(), "half_open");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything a circuit knows at one instant (SPEC §5).
///
/// Times are [`Duration`]s since the origin of the circuit's clock: zero for
/// `quanta::Clock::mock()`, the clock's own reference point otherwise.
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::{Config, Fuse, State};
///
/// let (clock, mock) = quanta::Clock::mock();
/// let fuse = Fuse::builder("billing").clock(clock).build();
/// mock.increment(Duration::from_secs(5));
/// fuse.try_acquire()?.failure();
///
/// let snap = fuse.snapshot();
/// assert_eq!(snap.state, State::Closed);
/// assert_eq!(snap.failures, vec![Duration::from_secs(5)]);
/// assert_eq!(snap.opened_at, None);
/// # Ok::<(), fuse_breaker::OpenError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The current state; an open circuit whose cooldown has passed still
    /// reads `Open` until a call arrives.
    pub state: State,
    /// When the circuit last opened; `None` while closed.
    pub opened_at: Option<Duration>,
    /// Counted failures still inside the window, oldest first (always empty
    /// unless closed, and under the `rate` policy).
    pub failures: Vec<Duration>,
    /// Under the `rate` policy: the calls in the window (zero unless
    /// closed, and under `count`).
    pub calls: u64,
    /// Under the `rate` policy: the counted failures among them.
    pub failed: u64,
    /// Under the `rate` policy: the slow calls among them (failed or not).
    pub slow: u64,
    /// Of the slow calls, those that failed (0 under `count`, which has
    /// no slow calls); `None` for a shared circuit, whose store keeps its
    /// slow calls but not their verdicts.
    pub slow_failed: Option<u64>,
    /// Successful probes so far (half-open only).
    pub half_open_successes: u32,
    /// Probes started and not yet finished (half-open only).
    pub half_open_inflight: u32,
    /// While open: how long this opening lasts, from `opened_at` (SPEC
    /// §10: the backoff, the jitter and any hint of the server applied);
    /// `None` otherwise.
    pub open_for: Option<Duration>,
    /// While open or half-open: how many times in a row the circuit has
    /// opened, this opening included (1 for an opening from closed or by
    /// `force_open`, one more for each failed probe; SPEC §10's n + 1); 0
    /// while closed.
    pub openings: u32,
    /// A shared circuit's quorum (SPEC §8, `min_reporters`): how many
    /// distinct processes reported the failures in the window, counted up
    /// to `min_reporters` (the window keeps no more); 0 while open or
    /// half-open, and for an in-process circuit (in one process the
    /// quorum is 1).
    pub reporters: u32,
    /// The share of calls a closed circuit admits (SPEC §11): 1 unless its
    /// admission is graded (a ramp-up after recovery, or throttling), and
    /// 1 while open or half-open (§3 decides those).
    pub admission: crate::config::Factor,
    /// Why a closed circuit admits fewer than all calls (SPEC §11); `None`
    /// when it admits every call.
    pub graded_by: Option<Grading>,
    /// Under throttling (`throttle_k`, SPEC §11), the calls that asked in
    /// the window while closed, admitted or throttled; 0 otherwise.
    pub requests: u64,
    /// Under throttling, the admitted calls in the window whose verdict
    /// was a success; 0 otherwise.
    pub accepts: u64,
}

/// Why a closed circuit admits fewer than all calls (SPEC §11): shown by
/// a throttled rejection ([`OpenError::throttled`](crate::OpenError::throttled))
/// and by the snapshot ([`Snapshot::graded_by`](crate::Snapshot::graded_by)).
///
/// ```
/// use fuse_breaker::Grading;
/// assert_eq!(Grading::RampUp.as_str(), "ramp_up");
/// assert_eq!(Grading::Throttle.to_string(), "throttle");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Grading {
    /// The circuit closed from half-open less than `ramp_up` ago.
    RampUp,
    /// Its window holds more than `throttle_k` requests per accepted call.
    Throttle,
}

impl Grading {
    /// The name of the rule, as the settings spell it: `ramp_up` or
    /// `throttle`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::Grading::Throttle.as_str(), "throttle");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Grading::RampUp => "ramp_up",
            Grading::Throttle => "throttle",
        }
    }
}

impl std::fmt::Display for Grading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
