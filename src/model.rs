//! The rules of SPEC §3 as pure functions: configuration + head + event +
//! `now` -> decision + next head. No atomics, no clock.
//!
//! Every engine of the crate runs these functions and nothing else decides a
//! transition. The closed state's window is the policy's (see
//! [`policy`](crate::policy)) and kept by the caller (a [`Window`] in
//! [`Reference`](crate::reference::Reference) and the stored model, atomics
//! of the engine's own); the rules tell it when to record a closed
//! verdict ([`Effect::Record`]), the policy whether that opens the circuit
//! ([`trip`] then moves it). A head whose epoch differs from the previous
//! one starts with an empty window.
//!
//! [`Window`]: crate::policy::Window

use std::time::Duration;

use crate::config::Config;
use crate::epoch::Epoch;
use crate::policy::{Outcome, View};
use crate::snapshot::{Snapshot, State};
use crate::transition::Reason;
use crate::verdict::Verdict;

/// Everything about a circuit except its failure list and the times of its
/// phase: the state, its epoch, while half-open the probe counters, and
/// while open or half-open the opening's place in a row (SPEC §10's n).
///
/// The times are not here: only admission needs them, and is given them
/// ([`acquire`], a [`Span`]): an open circuit's opening (when it began and
/// when it ends), a half-open one's start. A rule that opens the circuit opens it at the
/// `now` it is given, and the caller keeps when the opening ends
/// ([`recovery::retry_at`](crate::recovery::retry_at)); a move to
/// half-open starts it at the admission's `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) state: State,
    /// Bumped by every state change.
    pub(crate) epoch: Epoch,
    /// Successful probes so far (half-open only).
    pub(crate) successes: u32,
    /// Probes granted and not yet finished (half-open only).
    pub(crate) inflight: u32,
    /// Open and half-open: the n of the opening in a row (0 for an opening
    /// from closed or by `force_open`, one more for each failed probe);
    /// 0 while closed.
    pub(crate) n: u32,
    /// Closed: the epoch ramps up (SPEC §11: it closed from half-open with
    /// `ramp_up` set, and the ramp may not be over). When it started, and
    /// the n of the opening before it, are the caller's to keep.
    pub(crate) ramping: bool,
}

impl Head {
    /// A fresh closed circuit in the given epoch.
    #[inline]
    pub(crate) const fn closed(epoch: Epoch) -> Self {
        Head::new(State::Closed, epoch)
    }

    /// The n-th opening in a row, in the given epoch.
    #[inline]
    pub(crate) const fn open(epoch: Epoch, n: u32) -> Self {
        Head {
            n,
            ..Head::new(State::Open, epoch)
        }
    }

    /// A half-open circuit after the n-th opening in a row, in the given
    /// epoch, with no probes yet.
    #[inline]
    pub(crate) const fn half_open(epoch: Epoch, n: u32) -> Self {
        Head {
            n,
            ..Head::new(State::HalfOpen, epoch)
        }
    }

    #[inline]
    const fn new(state: State, epoch: Epoch) -> Self {
        Head {
            state,
            epoch,
            successes: 0,
            inflight: 0,
            n: 0,
            ramping: false,
        }
    }
}

/// Which kind of permit a grant is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PermitKind {
    /// Granted while closed.
    Closed,
    /// Granted while half-open.
    Probe,
}

/// A granted permit: its kind and the epoch that granted it, in one word
/// laid out as the low half of the engine's state word is (see
/// [`packed`](crate::packed)): the epoch in bits 2 to 31, and in bits 0
/// and 1 the closed state's code (0) for a closed permit, or 3 for a probe
/// (a code no state word holds). So an [`Decision`] is a pair of scalars
/// and travels in registers, a closed word's grant is the word masked, and
/// whether a success changes nothing is one masked compare with the word.
/// The upper 32 bits are free: an owned permit keeps its circuit's tag
/// there ([`with_tag`](Self::with_tag)), and is two words.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant(u64);

const _: () = assert!(Epoch::BITS == 30);

/// The low two bits of a probe's grant.
const PROBE: u64 = 3;

impl Grant {
    pub(crate) const fn new(kind: PermitKind, epoch: Epoch) -> Self {
        let code = match kind {
            PermitKind::Probe => PROBE,
            PermitKind::Closed => 0,
        };
        Grant(((epoch.get() as u64) << 2) | code)
    }

    /// The grant whose bits (as [`bits`](Self::bits) gives them) are
    /// `bits`: what the engine reads off a closed state word.
    #[inline]
    pub(crate) const fn from_bits(bits: u32) -> Self {
        Grant(bits as u64)
    }

    /// The grant's 32 bits, without a tag.
    #[inline]
    pub(crate) const fn bits(self) -> u64 {
        self.0 & u32::MAX as u64
    }

    /// This grant and `tag` in one word.
    pub(crate) const fn with_tag(self, tag: u32) -> u64 {
        self.0 | ((tag as u64) << 32)
    }

    /// The grant and the tag of a word from [`with_tag`](Self::with_tag).
    #[allow(clippy::cast_possible_truncation)] // the two halves of the word
    pub(crate) const fn and_tag(word: u64) -> (Grant, u32) {
        (Grant(word & u32::MAX as u64), (word >> 32) as u32)
    }

    pub(crate) const fn kind(self) -> PermitKind {
        if self.0 & PROBE == PROBE {
            PermitKind::Probe
        } else {
            PermitKind::Closed
        }
    }

    #[allow(clippy::cast_possible_truncation)] // built from a u32 epoch
    pub(crate) const fn epoch(self) -> Epoch {
        Epoch::new((self.bits() >> 2) as u32)
    }
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("kind", &self.kind())
            .field("epoch", &self.epoch())
            .finish()
    }
}

/// The answer to an admission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The call may run under this permit.
    Granted(Grant),
    /// The call is rejected; the circuit may admit again after this many
    /// nanoseconds (zero while half-open with every probe slot taken); a
    /// closed circuit's graded admission (SPEC §11) that sheds the call
    /// rejects it with the wait [`shed_wait`](crate::error::shed_wait)
    /// gives (see [`shed`](Self::shed)).
    Rejected { retry_after: u64 },
}

impl Decision {
    /// The rejection of a call graded admission shed (SPEC §11).
    pub(crate) const fn shed(why: crate::grade::Grading) -> Self {
        Decision::Rejected {
            retry_after: crate::error::shed_wait(why),
        }
    }

    /// Which rule shed the call, for a rejection of a shed call.
    #[cfg(any(test, fuzzing))]
    pub(crate) const fn shed_by(self) -> Option<crate::grade::Grading> {
        match self {
            Decision::Rejected { retry_after } => crate::error::shed_by(retry_after),
            Decision::Granted(_) => None,
        }
    }
}

/// What a verdict does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// The permit belongs to a past epoch: nothing changes.
    Stale,
    /// Nothing changes.
    Nothing,
    /// A closed verdict of the current epoch: the policy's window records
    /// it, and says whether the circuit opens ([`trip`]).
    Record(Outcome),
    /// Move to this head.
    Move(Head),
}

/// The times of an open or half-open circuit's phase, as admission reads
/// them: when it began (an opening's time, a half-open epoch's start) and,
/// for an opening, when it ends, `None` when that is past the clock's last
/// instant (SPEC §3: every instant, the last included, is a valid time, so
/// such an opening lasts to the end of time). A half-open phase's end is
/// the probe timeout's, from the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) at: u64,
    pub(crate) end: Option<u64>,
}

impl Span {
    /// A half-open epoch that started at `at`.
    pub(crate) const fn since(at: u64) -> Self {
        Span { at, end: None }
    }

    /// The nanoseconds from `now` to the end of the phase, counted from no
    /// earlier than its start: a clock that stepped back to before the
    /// start (a mock clock, a clock not synchronised across cores) is
    /// asked to wait no longer than the phase lasts. Without an end, the
    /// instants left to the end of time.
    #[inline]
    fn left(self, now: u64) -> u64 {
        let from = now.max(self.at);
        match self.end {
            Some(end) => end.saturating_sub(from),
            None => (u64::MAX - from)
                .saturating_add(1)
                .min(crate::error::LONGEST_WAIT),
        }
    }
}

/// Admission at `now` (SPEC §3 "Admission", §10 "Probe timeout"): the
/// decision and the next head, `None` when nothing changes. `phase` (the
/// span of an open or half-open circuit's phase) and `now` are asked only
/// while open or half-open, so an engine reads its records and its clock
/// only there; an error from `phase` (an engine that finds its reading out
/// of date) is the answer. A move to half-open starts the new half-open
/// epoch at `now`. A rejection never asks for more than what is left of
/// its opening's duration, measured from its start.
#[inline]
pub(crate) fn acquire<E>(
    config: &Config,
    head: Head,
    phase: impl FnOnce() -> Result<Span, E>,
    now: impl FnOnce() -> u64,
) -> Result<(Decision, Option<Head>), E> {
    Ok(match head.state {
        State::Closed => (grant(PermitKind::Closed, head.epoch), None),
        State::Open => match cooling_down(phase()?, now()) {
            Some(rejected) => (rejected, None),
            None => half_open_again(head),
        },
        State::HalfOpen => {
            let since = phase()?.at;
            if now().saturating_sub(since) >= config.probe_timeout_nanos() {
                half_open_again(head)
            } else if head.inflight < config.half_open_probes() {
                let next = Head {
                    inflight: head.inflight + 1,
                    ..head
                };
                (grant(PermitKind::Probe, head.epoch), Some(next))
            } else {
                (Decision::Rejected { retry_after: 0 }, None)
            }
        }
    })
}

/// An open circuit's admission at `now`, its opening's `span`: the
/// rejection while the opening lasts, `None` once it is over (the call
/// then moves the circuit to half-open). It reads no setting.
#[inline]
pub(crate) fn cooling_down(span: Span, now: u64) -> Option<Decision> {
    match span.end {
        Some(end) if now >= end => None,
        _ => Some(Decision::Rejected {
            retry_after: span.left(now),
        }),
    }
}

/// The move to a new half-open epoch whose first probe the caller is: at
/// the end of an opening, or after a probe timeout.
fn half_open_again(head: Head) -> (Decision, Option<Head>) {
    let next = Head {
        inflight: 1,
        ..Head::half_open(head.epoch.next(), head.n)
    };
    (grant(PermitKind::Probe, next.epoch), Some(next))
}

#[inline]
fn grant(kind: PermitKind, epoch: Epoch) -> Decision {
    Decision::Granted(Grant::new(kind, epoch))
}

/// The verdict of a permit (SPEC §3 "Verdicts") on a call that was not
/// slow. A failed probe reopens the circuit, at `now`, as the next opening
/// in a row.
#[inline]
pub(crate) fn verdict(config: &Config, head: Head, permit: Grant, verdict: Verdict) -> Effect {
    timed_verdict(config, head, permit, verdict, false)
}

/// The verdict of a permit on a call that was `slow` or not (SPEC §9: a
/// slow success or failure is also slow in the window, a slow successful
/// probe is a failed one; an ignore is never slow).
#[inline]
pub(crate) fn timed_verdict(
    config: &Config,
    head: Head,
    permit: Grant,
    verdict: Verdict,
    slow: bool,
) -> Effect {
    let own_state = match permit.kind() {
        PermitKind::Closed => State::Closed,
        PermitKind::Probe => State::HalfOpen,
    };
    if head.epoch != permit.epoch() || head.state != own_state {
        return Effect::Stale;
    }
    match (permit.kind(), verdict) {
        (PermitKind::Closed, Verdict::Success) => Effect::Record(Outcome {
            failed: false,
            slow,
        }),
        (PermitKind::Closed, Verdict::Failure) => Effect::Record(Outcome { failed: true, slow }),
        (PermitKind::Closed, Verdict::Ignore) => Effect::Nothing,
        (PermitKind::Probe, Verdict::Success) if slow => Effect::Move(reopen(head)),
        (PermitKind::Probe, Verdict::Success) => {
            let successes = head.successes + 1;
            if successes >= config.half_open_probes() {
                Effect::Move(Head {
                    ramping: config.ramp_up().is_some(),
                    ..Head::closed(head.epoch.next())
                })
            } else {
                Effect::Move(Head {
                    successes,
                    inflight: head.inflight.saturating_sub(1),
                    ..head
                })
            }
        }
        (PermitKind::Probe, Verdict::Failure) => Effect::Move(reopen(head)),
        (PermitKind::Probe, Verdict::Ignore) => Effect::Move(Head {
            inflight: head.inflight.saturating_sub(1),
            ..head
        }),
    }
}

/// A failed probe's move: the next opening in a row.
fn reopen(head: Head) -> Head {
    Head::open(head.epoch.next(), head.n.saturating_add(1))
}

/// After the policy's window, with a closed verdict of `permit` recorded,
/// said that its rule holds: the open head (opened at the verdict's `now`)
/// if the permit's epoch is still current. A `relapse` within a ramp-up
/// (SPEC §11), after the `n`-th opening in a row, opens as the next one,
/// as the probe failing would have; any other trip is a first opening.
pub(crate) fn trip(head: Head, permit: Grant, relapse: Option<u32>) -> Option<Head> {
    let current = head.state == State::Closed && head.epoch == permit.epoch();
    let n = relapse.map_or(0, |n| n.saturating_add(1));
    current.then(|| Head::open(head.epoch.next(), n))
}

/// Why the rules moved a circuit from `from` to `to` (manual changes carry
/// their own reason); `None` when the states are not a rule's transition.
pub(crate) fn reason(from: State, to: State) -> Option<Reason> {
    match (from, to) {
        (State::Closed, State::Open) => Some(Reason::ThresholdReached),
        (State::HalfOpen, State::Open) => Some(Reason::ProbeFailed),
        (State::Open, State::HalfOpen) => Some(Reason::CooldownEnded),
        (State::HalfOpen, State::Closed) => Some(Reason::ProbesPassed),
        _ => None,
    }
}

/// `force_open`: open now, whatever the state, as a first opening.
pub(crate) fn force_open(head: Head) -> Head {
    Head::open(head.epoch.next(), 0)
}

/// `force_closed`: closed with no failures, whatever the state.
pub(crate) fn force_closed(head: Head) -> Head {
    Head::closed(head.epoch.next())
}

/// `reset`: forget the circuit. In process the next read is a fresh closed
/// circuit, in a new epoch so that permits granted before are stale.
pub(crate) fn reset(head: Head) -> Head {
    force_closed(head)
}

/// When a circuit last opened and when that opening ends (SPEC §10: the
/// duration is the difference; `u64::MAX` for an opening that lasts to the
/// end of time), as a snapshot shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Opening {
    pub(crate) at: u64,
    pub(crate) retry_at: u64,
}

/// The snapshot of `head`, given its last opening (read only while open
/// or half-open) and what the policy's window shows (see
/// [`Rule::view`](crate::policy::Rule::view)), used only while closed.
pub(crate) fn snapshot(head: &Head, opening: Opening, window: View) -> Snapshot {
    let closed = head.state == State::Closed;
    let open = head.state == State::Open;
    let opened_at = opening.at;
    let window = if closed { window } else { View::default() };
    let half_open = head.state == State::HalfOpen;
    Snapshot {
        state: head.state,
        opened_at: (!closed).then(|| Duration::from_nanos(opened_at)),
        failures: window
            .failures
            .into_iter()
            .map(Duration::from_nanos)
            .collect(),
        calls: window.counts.calls,
        failed: window.counts.failed,
        slow: window.counts.slow,
        slow_failed: Some(window.counts.slow_failed),
        half_open_successes: if half_open { head.successes } else { 0 },
        half_open_inflight: if half_open { head.inflight } else { 0 },
        open_for: open.then(|| Duration::from_nanos(opening.retry_at.saturating_sub(opening.at))),
        openings: if closed { 0 } else { head.n.saturating_add(1) },
        reporters: 0,
        admission: crate::config::Factor::ONE,
        graded_by: None,
        requests: 0,
        accepts: 0,
    }
}
