//! The `differential` target: a history decoded from bytes run on the
//! engine (through the public API, on a mock clock), the reference circuit
//! and the oracle side by side.

use std::time::Duration;

use quanta::Clock;

use super::start::Start;
use super::{Bytes, setup};
use crate::Grading;
use crate::config::Config;
use crate::error::OpenError;
use crate::fuse::Fuse;
use crate::model::{Decision, Grant, PermitKind};
use crate::oracle::{Admit, Oracle, Outcome, Ticket};
use crate::permit::Permit;
use crate::policy::is_slow;
use crate::reference::Reference;
use crate::snapshot::State;
use crate::verdict::Verdict;

/// Runs the history encoded by `data` against a [`Fuse`] on a mock clock,
/// the reference circuit and the oracle side by side, and panics at the
/// first decision, state or snapshot on which any two disagree.
///
/// The first bytes choose a small configuration under `count` or `rate`
/// (see [`setup::config`]) and where the circuit starts (half the time
/// fresh; otherwise a few epochs before a wrap-around of its epoch or claim
/// counters, with records left any number of epochs behind; see
/// [`Start`]); each following byte is one operation: acquire; success,
/// failure or ignore of a held permit (any of them, by index); drop of a
/// held permit; a failure with the server's hint of when to come back (see
/// [`setup::hint`]); a clock advance (see [`setup::advance`]: zero, a few
/// nanoseconds, about a window, exactly a window or an open duration, a
/// bucket's edge, a slow call's duration, a probe timeout, the longest
/// opening, or a huge step), so that a call takes the time the clock
/// advanced between its admission and its verdict; `force_open`,
/// `force_closed`, `reset`; new settings of the same shape (SPEC §12, see
/// [`setup::reconfigured`]). The configuration may have SPEC §10's backoff,
/// jitter (the three sides draw from one seed) and probe timeout, and
/// §11's ramp-up and throttling: each side's admission draws from this
/// thread's generator, seeded alike before each of the three (from the
/// history's seed, the step and the operation's byte), so that all three
/// see the same draw.
pub fn differential(data: &[u8]) {
    run(data, true);
}

/// The same histories as [`differential`], the reference circuit against
/// the oracle only: the model's rules under both policies, checked against
/// a reading of the SPEC that shares no code with them.
pub fn models(data: &[u8]) {
    run(data, false);
}

/// What a history reached of SPEC §11: calls the ramp shed, calls the
/// throttle shed, and relapses (a closed circuit's rule opening it as the
/// next opening in a row).
#[cfg_attr(not(test), allow(dead_code))] // the property tests' measure
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Reached {
    pub(super) ramp_sheds: usize,
    pub(super) throttle_sheds: usize,
    pub(super) relapses: usize,
}

/// Runs a history; the engine too when `engine`. Returns what it reached
/// of graded admission.
pub(super) fn run(data: &[u8], engine: bool) -> Reached {
    let mut bytes = Bytes(data);
    let mut config = setup::config(&mut bytes);
    let seed = u64::from(bytes.u32());
    let (clock, mock) = Clock::mock();
    let fuse = Fuse::builder("differential")
        .config(config.clone())
        .clock(clock)
        .jitter_seed(seed)
        .build();
    let start = Start::decode(&mut bytes);
    if engine {
        start.apply(&fuse);
    }
    let mut sides = Sides {
        fuse: engine.then_some(&fuse),
        reference: Reference::starting_at(config.clone(), start.epoch).with_seed(seed),
        oracle: Oracle::new(&config).with_seed(seed),
        held: Vec::new(),
        draws: seed,
        reached: Reached::default(),
    };
    let mut step = 0usize;
    while !bytes.is_empty() {
        step += 1;
        let op = bytes.u8();
        let now = mock.value();
        let before = sides.oracle.state();
        match op {
            0..=49 => sides.acquire(now, step, op, config.times_calls()),
            50..=179 => {
                let verdict = match op {
                    50..=99 => Some(Verdict::Success),
                    100..=139 => Some(Verdict::Failure),
                    140..=164 => Some(Verdict::Ignore),
                    _ => None,
                };
                let at = usize::from(bytes.u8());
                let hint = (op >= 128 && verdict == Some(Verdict::Failure))
                    .then(|| setup::hint(&config, &mut bytes));
                sides.conclude(&config, at, verdict, hint, now);
            }
            180..=239 => setup::advance(&mock, &config, &mut bytes),
            240..=245 => {
                sides.fuse.inspect(|fuse| fuse.force_open());
                sides.reference.force_open(now);
                sides.oracle.force_open(now);
            }
            246..=250 => {
                sides.fuse.inspect(|fuse| fuse.force_closed());
                sides.reference.force_closed();
                sides.oracle.force_closed();
            }
            251..=253 => {
                sides.fuse.inspect(|fuse| fuse.reset());
                sides.reference.reset();
                sides.oracle.reset();
            }
            _ => {
                let next = setup::reconfigured(&config, &mut bytes);
                let refused = sides
                    .fuse
                    .and_then(|fuse| fuse.reconfigure(next.clone()).err());
                if let Some(error) = refused {
                    // A slot keeps every shape of window it has had (SPEC
                    // §12), and the fuzzer's circuits reuse slots run after
                    // run: one that has had the most refuses another shape,
                    // changing nothing. Any other refusal is a defect.
                    assert!(
                        error.to_string().contains("shapes of window")
                            && crate::reconfigure::reshapes(&config, &next),
                        "settings that keep the key prefix are taken in place: {error}"
                    );
                } else {
                    config = next;
                    sides.reference.reconfigure(config.clone(), now);
                    sides.oracle.reconfigure(&config, now);
                }
            }
        }
        sides.compare(mock.value(), step, op);
        if before == State::Closed && sides.oracle.state() == State::Open {
            let openings = sides.oracle.snapshot(mock.value()).openings;
            sides.reached.relapses += usize::from(openings > 1);
        }
    }
    sides.reached
}

/// A permit held by the history: the engine's (when it runs), the
/// reference's and the oracle's for the same call, and when it was granted.
struct Held<'a> {
    permit: Option<Permit<'a>>,
    grant: Grant,
    ticket: Ticket,
    admitted: u64,
    /// Whether the settings timed calls at its admission.
    timed: bool,
}

/// The circuits a history runs on, and the permits it holds.
struct Sides<'a> {
    fuse: Option<&'a Fuse>,
    reference: Reference,
    oracle: Oracle,
    held: Vec<Held<'a>>,
    /// The history's seed for the draws of graded admission.
    draws: u64,
    reached: Reached,
}

impl Sides<'_> {
    /// Admission at `now` on every side, each drawing (if it draws) the
    /// same number: the generator is seeded alike before each, from the
    /// history's seed, the step and its operation's byte `op`.
    fn acquire(&mut self, now: u64, step: usize, op: u8, timed: bool) {
        let seed = self.draws ^ (u64::from(op) << 56) ^ step as u64;
        let engine = self.fuse.map(|fuse| {
            fastrand::seed(seed);
            fuse.try_acquire()
        });
        fastrand::seed(seed);
        let model = self.reference.acquire(now);
        fastrand::seed(seed);
        let oracle = self.oracle.acquire(now);
        match (model, oracle) {
            (Decision::Granted(grant), Admit::Granted(ticket)) => {
                assert_eq!(
                    ticket.probe,
                    grant.kind() == PermitKind::Probe,
                    "oracle's permit kind at step {step}"
                );
                let permit = engine.map(|engine| match engine {
                    Ok(permit) => {
                        assert_eq!(
                            permit.is_probe(),
                            ticket.probe,
                            "permit kind at step {step}"
                        );
                        permit
                    }
                    Err(open) => panic!(
                        "admission at step {step}: engine {open:?} (throttled {:?}), model {grant:?}",
                        open.throttled()
                    ),
                });
                self.held.push(Held {
                    permit,
                    grant,
                    ticket,
                    admitted: now,
                    timed,
                });
            }
            (Decision::Rejected { retry_after }, Admit::Rejected(oracle_retry)) => {
                assert_eq!(
                    retry_after, oracle_retry,
                    "oracle's retry_after at step {step}"
                );
                match engine {
                    None => {}
                    Some(Err(open)) => assert_eq!(
                        (open.retry_after(), open.throttled()),
                        (Duration::from_nanos(retry_after), None),
                        "retry_after at step {step}"
                    ),
                    Some(Ok(permit)) => panic!(
                        "admission at step {step}: engine {permit:?}, model rejected after {retry_after}"
                    ),
                }
            }
            (decided @ Decision::Rejected { .. }, Admit::Throttled(oracle_why))
                if decided.shed_by().is_some() =>
            {
                let why = oracle_why;
                assert_eq!(
                    decided.shed_by(),
                    Some(why),
                    "oracle's grading at step {step}"
                );
                match why {
                    Grading::RampUp => self.reached.ramp_sheds += 1,
                    Grading::Throttle => self.reached.throttle_sheds += 1,
                }
                match engine {
                    None => {}
                    Some(Err(open)) => assert_eq!(
                        (open.throttled(), open.retry_after()),
                        (Some(why), Duration::ZERO),
                        "throttled rejection at step {step}"
                    ),
                    Some(Ok(permit)) => panic!(
                        "admission at step {step}: engine {permit:?}, model throttled ({why})"
                    ),
                }
            }
            (model, oracle) => {
                let throttled = engine
                    .as_ref()
                    .and_then(|engine| engine.as_ref().err().map(OpenError::throttled));
                panic!(
                    "admission at step {step}: engine {engine:?} (throttled {throttled:?}), model {model:?}, oracle {oracle:?}"
                )
            }
        }
    }

    /// Ends the held permit at `at` (modulo those held) with `verdict`
    /// (a failure with the server's `hint`, if any), or drops it (`None`,
    /// an ignore), at `now`.
    fn conclude(
        &mut self,
        config: &Config,
        at: usize,
        verdict: Option<Verdict>,
        hint: Option<u64>,
        now: u64,
    ) {
        if self.held.is_empty() {
            return;
        }
        let held = self.held.remove(at % self.held.len());
        match (held.permit, verdict, hint) {
            (Some(permit), Some(_), Some(hint)) => {
                permit.failure_retry_after(Duration::from_nanos(hint));
            }
            (Some(permit), Some(verdict), None) => permit.conclude(verdict),
            (permit, _, _) => drop(permit),
        }
        let verdict = verdict.unwrap_or(Verdict::Ignore);
        // A configuration that does not time calls takes the untimed
        // verdict, as the engine's count path does.
        if config.times_calls() || hint.is_some() {
            let slow = held.timed && config.times_calls() && is_slow(config, now - held.admitted);
            self.reference
                .hinted_verdict(held.grant, verdict, slow, hint, now);
        } else {
            self.reference.verdict(held.grant, verdict, now);
        }
        let outcome = match verdict {
            Verdict::Success => Outcome::Success,
            Verdict::Failure => Outcome::Failure,
            Verdict::Ignore => Outcome::Ignore,
        };
        self.oracle.end_hinted(held.ticket, outcome, hint, now);
    }

    /// Panics unless the circuits agree on the state and the snapshot.
    fn compare(&self, now: u64, step: usize, op: u8) {
        let expected = self.reference.snapshot(now);
        assert_eq!(
            self.oracle.state(),
            self.reference.state(),
            "oracle's state after step {step}"
        );
        assert_eq!(
            self.oracle.snapshot(now),
            expected,
            "oracle's snapshot after step {step} (op {op}, now {now})"
        );
        if let Some(fuse) = self.fuse {
            assert_eq!(
                fuse.state(),
                self.reference.state(),
                "state after step {step}"
            );
            assert_eq!(
                fuse.snapshot(),
                expected,
                "snapshot after step {step} (op {op}, now {now})"
            );
        }
    }
}
