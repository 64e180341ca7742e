//! SPEC §11 for the oracle, read from its text: the ramp-up after a
//! circuit closes from half-open, and adaptive throttling, with the
//! crate's fixed point (a share of calls is a whole number of parts of
//! 2^32) and its one draw per graded admission from this thread's
//! generator. Shares no code with [`grade`](crate::grade).
//!
//! Kept as plainly as the rest of the oracle: every request of the closed
//! epoch in a `Vec`, each window's sums taken afresh from it.

use crate::Grading;
use crate::config::{Config, Factor};
use crate::snapshot::Snapshot;

use super::nanos;

/// 2^32: a share of calls is `parts` of it.
const PARTS: f64 = 4_294_967_296.0;

/// The throttle's settings, read once from the configuration.
#[derive(Clone, Copy, Debug)]
struct Throttling {
    /// K (`throttle_k`).
    k: Factor,
    /// `max_throttle`, in percent.
    max: u32,
    minimum_calls: u64,
    /// `failure_window / window_buckets` (at least one nanosecond).
    width: u64,
    buckets: u64,
}

/// One request of the closed epoch: the bucket of its time, and whether it
/// was an accept.
#[derive(Clone, Copy, Debug)]
struct Request {
    bucket: u64,
    accepted: bool,
}

/// The ramp of a closed epoch: the n of the opening the half-open epoch
/// before it followed, and when it closed.
#[derive(Clone, Copy, Debug)]
struct Ramp {
    n: u32,
    since: u64,
}

/// A circuit's graded admission (SPEC §11).
#[derive(Clone, Debug)]
pub(super) struct Graded {
    /// `ramp_up` in nanoseconds; `None`: no ramp.
    ramp_up: Option<u64>,
    /// `ramp_up_floor`, in percent.
    floor: u32,
    /// `None` without `throttle_k`.
    throttling: Option<Throttling>,
    /// The closed epoch's ramp while it is in progress.
    ramp: Option<Ramp>,
    /// The closed epoch's requests, every one.
    requests: Vec<Request>,
    /// The share the throttle sheds in use, in parts of 2^32: recomputed
    /// by a request whose bucket is not the previous request's.
    in_use: u32,
}

/// A probability as parts of 2^32: clamped to 0 ..= 1, rounded down, at
/// most `u32::MAX`; not a number is none.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped first
fn parts(probability: f64) -> u32 {
    if probability.is_nan() {
        return 0;
    }
    let scaled = (probability.clamp(0.0, 1.0) * PARTS).floor();
    if scaled >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        scaled as u32
    }
}

impl Graded {
    /// The rules `config` sets, in a closed epoch without a ramp.
    pub(super) fn new(config: &Config) -> Self {
        Graded {
            ramp_up: config.ramp_up().map(nanos),
            floor: config.ramp_up_floor(),
            throttling: config.throttle_k().map(|k| Throttling {
                k,
                max: config.max_throttle(),
                minimum_calls: u64::from(config.minimum_calls()),
                width: (nanos(config.failure_window()) / u64::from(config.window_buckets())).max(1),
                buckets: u64::from(config.window_buckets()),
            }),
            ramp: None,
            requests: Vec::new(),
            in_use: 0,
        }
    }

    /// A new epoch: "a circuit that closes starts with an empty window",
    /// and a ramp belongs to the epoch it closed.
    pub(super) fn clear(&mut self) {
        self.ramp = None;
        self.requests.clear();
        self.in_use = 0;
    }

    /// The circuit has just closed from half-open at `now`, after the
    /// `n`-th opening in a row: "For `ramp_up` after a circuit closes from
    /// `HalfOpen`", a ramp (none without `ramp_up`).
    pub(super) fn closed_by_probes(&mut self, n: u32, now: u64) {
        if self.ramp_up.is_some() {
            self.ramp = Some(Ramp { n, since: now });
        }
    }

    /// The ramp's share to shed at `now`, in parts: `1 - max(floor / 100,
    /// t / ramp_up)` while `t` (the time since it closed; none before it)
    /// is under `ramp_up`, 0 after.
    #[allow(clippy::cast_precision_loss)] // nanoseconds as a share
    fn ramp_parts(&self, now: u64) -> u32 {
        match (self.ramp, self.ramp_up) {
            (Some(ramp), Some(ramp_up)) => {
                let t = now.saturating_sub(ramp.since);
                if t >= ramp_up {
                    return 0;
                }
                let admitted = (t as f64 / ramp_up as f64).max(f64::from(self.floor) / 100.0);
                parts(1.0 - admitted)
            }
            _ => 0,
        }
    }

    /// Whether the ramp is in progress at `now`.
    fn ramping(&self, now: u64) -> bool {
        match (self.ramp, self.ramp_up) {
            (Some(ramp), Some(ramp_up)) => now.saturating_sub(ramp.since) < ramp_up,
            _ => false,
        }
    }

    /// The admission of a closed circuit at `now`: `None` to admit, else
    /// which rule sheds the call. With nothing to shed the call is admitted
    /// without a draw; else one draw `d` from this thread's generator: the
    /// throttle's if `d` is under its share ("A throttled call adds one
    /// request and nothing else"), else the ramp's if under the ramp's (it
    /// "counts as nothing"). A ramp found over is over for good.
    pub(super) fn admit(&mut self, now: u64) -> Option<Grading> {
        if self.ramp.is_some() && !self.ramping(now) {
            self.ramp = None;
        }
        let (ramp, throttle) = (self.ramp_parts(now), self.in_use);
        if ramp == 0 && throttle == 0 {
            return None;
        }
        let draw = fastrand::u32(..);
        if draw < throttle {
            self.ask(false, now);
            Some(Grading::Throttle)
        } else if draw < ramp {
            Some(Grading::RampUp)
        } else {
            None
        }
    }

    /// A closed verdict of the current epoch at `now` that is a success
    /// (`accepted`) or a counted failure: one request.
    pub(super) fn verdict(&mut self, accepted: bool, now: u64) {
        self.ask(accepted, now);
    }

    /// One request at `now` (under throttling only). The share in use "may
    /// lag the window by at most one bucket width": the first request in a
    /// bucket other than the previous request's recomputes it from the
    /// window at `now`, this request included.
    fn ask(&mut self, accepted: bool, now: u64) {
        let Some(throttling) = self.throttling else {
            return;
        };
        let bucket = now / throttling.width;
        let previous = self.requests.last().map(|request| request.bucket);
        self.requests.push(Request { bucket, accepted });
        if previous != Some(bucket) {
            self.in_use = parts(self.probability(now));
        }
    }

    /// "Over the policy window of §9 ... the window holds the current
    /// bucket and the `window_buckets - 1` before it" (the current bucket
    /// `now`'s, or the newest recorded if the clock went back): the
    /// requests and accepts at `now`; none without throttling.
    fn window(&self, now: u64) -> (u64, u64) {
        let Some(throttling) = self.throttling else {
            return (0, 0);
        };
        let newest = self.requests.iter().map(|r| r.bucket).max().unwrap_or(0);
        let current = (now / throttling.width).max(newest);
        self.requests
            .iter()
            .filter(|r| r.bucket <= current && current - r.bucket < throttling.buckets)
            .fold((0, 0), |(requests, accepts), r| {
                (requests + 1, accepts + u64::from(r.accepted))
            })
    }

    /// "`min(max_throttle / 100, max(0, (requests - throttle_k * accepts)
    /// / (requests + 1)))` once `requests >= minimum_calls`, and with
    /// probability 0 before", for the window at `now`.
    #[allow(clippy::cast_precision_loss)] // counts as a share
    fn probability(&self, now: u64) -> f64 {
        let Some(throttling) = self.throttling else {
            return 0.0;
        };
        let (requests, accepts) = self.window(now);
        if requests < throttling.minimum_calls {
            return 0.0;
        }
        let (requests, accepts) = (requests as f64, accepts as f64);
        let share = (requests - throttling.k.to_f64() * accepts) / (requests + 1.0);
        share.clamp(0.0, f64::from(throttling.max) / 100.0)
    }

    /// A relapse at `now`: "the next opening is n + 1 of §10, as if the
    /// probe had failed, when it opens within the ramp"; 0 otherwise.
    pub(super) fn opening(&self, now: u64) -> u32 {
        match self.ramp {
            Some(ramp) if self.ramping(now) => ramp.n.saturating_add(1),
            _ => 0,
        }
    }

    /// What a closed circuit's snapshot at `now` adds: "the admission
    /// probability in use, why (`ramp_up` or `throttle`), and under
    /// throttling `requests` and `accepts`". The larger share is in force
    /// (the throttle's when they are equal); the admitted share is one
    /// less it, to the nearest millionth.
    pub(super) fn show(&self, snapshot: &mut Snapshot, now: u64) {
        let (ramp, throttle) = (self.ramp_parts(now), self.in_use);
        let (why, shed) = if throttle > 0 && throttle >= ramp {
            (Some(Grading::Throttle), throttle)
        } else if ramp > 0 {
            (Some(Grading::RampUp), ramp)
        } else {
            (None, 0)
        };
        // (2^32 - shed) / 2^32 in millionths, halves rounded up.
        let admitted = ((1_u64 << 32) - u64::from(shed)) * 1_000_000;
        let millionths = (admitted + (1 << 31)) >> 32;
        snapshot.admission =
            Factor::from_millionths(u32::try_from(millionths).expect("at most a million"));
        snapshot.graded_by = why;
        (snapshot.requests, snapshot.accepts) = self.window(now);
    }
}
