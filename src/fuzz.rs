//! The differential harness: the engine, through the public API, against
//! the reference circuit (the model's rules over a `Vec`) and the oracle (a
//! second reading of SPEC §3 that shares no code with the model), on a
//! history decoded from bytes. Shared by the
//! `cargo fuzz` targets in `fuzz/` (built with `--cfg fuzzing`, where this
//! module is public) and by a property test that `cargo test` runs.

// Public for the fuzz targets only; private in test builds.
#![cfg_attr(not(fuzzing), allow(unreachable_pub))]

mod setup;

use std::time::Duration;

use quanta::Clock;

use crate::config::{Config, MAX_DURATION, MAX_FAILURE_THRESHOLD, MAX_HALF_OPEN_PROBES};
use crate::epoch::Epoch;
use crate::factor::Factor;
use crate::fuse::Fuse;
use crate::model::{Decision, Grant, PermitKind};
use crate::oracle::{Admit, Oracle, Outcome, Ticket};
use crate::packed::CLAIMS_MODULUS;
use crate::permit::Permit;
use crate::policy::is_slow;
use crate::reference::Reference;
use crate::verdict::Verdict;

/// Reads bytes as they are needed; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&first, rest)) => {
                self.0 = rest;
                first
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) << 32 | u64::from(self.u32())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

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
/// `force_closed`, `reset`. The configuration may have SPEC §10's backoff,
/// jitter (the three sides draw from one seed) and probe timeout.
pub fn differential(data: &[u8]) {
    run(data, true);
}

/// The same histories as [`differential`], the reference circuit against
/// the oracle only: the model's rules under both policies, checked against
/// a reading of the SPEC that shares no code with them.
pub fn models(data: &[u8]) {
    run(data, false);
}

/// Runs a history; the engine too when `engine`.
fn run(data: &[u8], engine: bool) {
    let mut bytes = Bytes(data);
    let config = setup::config(&mut bytes);
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
    };
    let mut step = 0usize;
    while !bytes.is_empty() {
        step += 1;
        let op = bytes.u8();
        let now = mock.value();
        match op {
            0..=49 => sides.acquire(now, step),
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
            _ => {
                sides.fuse.inspect(|fuse| fuse.reset());
                sides.reference.reset();
                sides.oracle.reset();
            }
        }
        sides.compare(mock.value(), step, op);
    }
}

/// A permit held by the history: the engine's (when it runs), the
/// reference's and the oracle's for the same call, and when it was granted.
struct Held<'a> {
    permit: Option<Permit<'a>>,
    grant: Grant,
    ticket: Ticket,
    admitted: u64,
}

/// The circuits a history runs on, and the permits it holds.
struct Sides<'a> {
    fuse: Option<&'a Fuse>,
    reference: Reference,
    oracle: Oracle,
    held: Vec<Held<'a>>,
}

impl Sides<'_> {
    fn acquire(&mut self, now: u64, step: usize) {
        let engine = self.fuse.map(Fuse::try_acquire);
        let (model, oracle) = (self.reference.acquire(now), self.oracle.acquire(now));
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
                    Err(open) => {
                        panic!("admission at step {step}: engine {open:?}, model {grant:?}")
                    }
                });
                self.held.push(Held {
                    permit,
                    grant,
                    ticket,
                    admitted: now,
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
                        open.retry_after(),
                        Duration::from_nanos(retry_after),
                        "retry_after at step {step}"
                    ),
                    Some(Ok(permit)) => panic!(
                        "admission at step {step}: engine {permit:?}, model rejected after {retry_after}"
                    ),
                }
            }
            (model, oracle) => {
                panic!(
                    "admission at step {step}: engine {engine:?}, model {model:?}, oracle {oracle:?}"
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
            let slow = config.times_calls() && is_slow(config, now - held.admitted);
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

/// Where a circuit of the harness starts: an epoch and claim counter, and
/// how far behind them its records were left.
#[derive(Clone, Copy, Debug)]
struct Start {
    epoch: Epoch,
    claims: u32,
    /// `None`: fresh records (never written).
    aged: Option<Ages>,
}

/// How old the records of a [`Start`] are.
#[derive(Clone, Copy, Debug)]
struct Ages {
    /// Epochs behind the start, for the `phase` record.
    opened: u32,
    /// Epochs behind the start for the failure slots (zero: the slots hold
    /// the latest claims of the start epoch, already cleared).
    slots: u32,
}

/// A few below each wrap-around point of the counters: epochs wrap at
/// 2^30, claims at 2^19 (and the midpoints, where a half-range comparison
/// would turn).
const EPOCH_STARTS: [u32; 3] = [0, 1 << (Epoch::BITS - 1), 0];
const CLAIM_STARTS: [u32; 3] = [0, CLAIMS_MODULUS / 2, 0];

/// Records are never left this close behind the history's own epochs (a
/// history changes the epoch at most once per byte).
const AGE_MARGIN: u32 = 1 << 20;

impl Start {
    fn decode(bytes: &mut Bytes<'_>) -> Start {
        let choice = bytes.u8();
        if choice < 128 {
            return Start {
                epoch: Epoch::ZERO,
                claims: 0,
                aged: None,
            };
        }
        let before = u32::from(bytes.u8() % 8);
        let modulus = 1u32 << Epoch::BITS;
        let epoch = Epoch::new(EPOCH_STARTS[usize::from(choice % 3)]).back(before);
        let claims =
            CLAIM_STARTS[usize::from((choice / 3) % 3)].wrapping_sub(before) % CLAIMS_MODULUS;
        let age = |raw: u32| 1 + raw % (modulus - AGE_MARGIN);
        let aged = choice.is_multiple_of(2).then(|| Ages {
            opened: age(bytes.u32()),
            slots: if choice.is_multiple_of(4) {
                0
            } else {
                age(bytes.u32())
            },
        });
        Start {
            epoch,
            claims,
            aged,
        }
    }

    /// Moves `fuse` to this start (it is fresh and not shared yet).
    fn apply(self, fuse: &Fuse) {
        let ages = self.aged.map(|ages| (ages.opened, ages.slots));
        fuse.engine().start_at(self.epoch, self.claims, ages);
    }
}

/// Builds a configuration from arbitrary inputs, and checks that the
/// builder refuses exactly the values SPEC §2 calls invalid, names the
/// setting it refused, and that an accepted configuration returns every
/// value through its getters; with `config-file`, that the same values
/// written as `FUSE_*` variables build the same configuration. Never panics on any input (but on a broken
/// promise).
pub fn config(data: &[u8]) {
    let mut bytes = Bytes(data);
    let threshold = bytes.u32() >> (bytes.u8() % 32);
    let probes = bytes.u32() >> (bytes.u8() % 32);
    let window = Duration::new(
        bytes.u64() >> (bytes.u8() % 64),
        bytes.u32() % 1_000_000_000,
    );
    let open = Duration::new(
        bytes.u64() >> (bytes.u8() % 64),
        bytes.u32() % 1_000_000_000,
    );
    let statuses: Vec<u16> = (0..bytes.u8() % 6).map(|_| bytes.u16() % 700).collect();
    let flags = bytes.u8();
    let recovery = Recovery::decode(&mut bytes, open);
    let prefix = String::from_utf8_lossy(&bytes.0[..bytes.0.len().min(12)]).into_owned();

    let built = Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .failure_window(window)
        .open_duration(open)
        .counted_http_statuses(statuses.iter().copied())
        .count_timeouts(flags & 1 != 0)
        .count_connection_errors(flags & 2 != 0)
        .count_http_500(flags & 4 != 0)
        .key_prefix(prefix.clone());
    let built = recovery.apply(built).build();

    let valid_duration = |d: Duration| !d.is_zero() && d <= MAX_DURATION;
    let first_invalid = [
        (
            "failure_threshold",
            (1..=MAX_FAILURE_THRESHOLD).contains(&threshold),
        ),
        ("failure_window", valid_duration(window)),
        ("open_duration", valid_duration(open)),
        (
            "half_open_probes",
            (1..=MAX_HALF_OPEN_PROBES).contains(&probes),
        ),
    ]
    .into_iter()
    .chain(recovery.validity(open))
    .chain([
        (
            "counted_http_statuses",
            statuses.iter().all(|s| (100..=599).contains(s)),
        ),
        (
            "key_prefix",
            !prefix.is_empty() && !prefix.contains(':') && !prefix.chars().any(char::is_control),
        ),
    ])
    .find(|(_, ok)| !ok)
    .map(|(setting, _)| setting);

    match (built.clone(), first_invalid) {
        (Ok(config), None) => {
            assert_eq!(config.failure_threshold(), threshold);
            assert_eq!(config.half_open_probes(), probes);
            assert_eq!(config.failure_window(), window);
            assert_eq!(config.open_duration(), open);
            assert_eq!(config.counted_http_statuses(), statuses.as_slice());
            assert_eq!(config.count_timeouts(), flags & 1 != 0);
            assert_eq!(config.count_connection_errors(), flags & 2 != 0);
            assert_eq!(config.count_http_500(), flags & 4 != 0);
            assert_eq!(config.key_prefix(), prefix);
            recovery.given_by(&config, open);
            assert_eq!(config.to_builder().build().as_ref(), Ok(&config));
        }
        (Err(err), Some(setting)) => {
            assert_eq!(err.setting(), setting, "{err}");
            assert!(err.to_string().contains(setting), "{err}");
            assert!(!err.value().is_empty(), "{err}");
        }
        (built, expected) => {
            panic!("built {built:?}, expected the first invalid setting to be {expected:?}")
        }
    }

    #[cfg(feature = "config-file")]
    from_env(
        &built,
        Values {
            threshold,
            probes,
            window,
            open,
            statuses: &statuses,
            flags,
            prefix: &prefix,
            recovery,
        },
    );
}

/// SPEC §10's settings of a [`config`] history: factors of any millionths
/// (mostly near their bounds), the longest opening and the probe timeout
/// unset or any duration (mostly near the open duration).
#[derive(Clone, Copy, Debug)]
struct Recovery {
    backoff: Factor,
    jitter: Factor,
    max_open: Option<Duration>,
    probe_timeout: Option<Duration>,
}

impl Recovery {
    fn decode(bytes: &mut Bytes<'_>, open: Duration) -> Self {
        let factor = |bytes: &mut Bytes<'_>, near: u32| {
            let raw = bytes.u32();
            Factor::from_millionths(if raw.is_multiple_of(2) {
                near.wrapping_add(raw % 5).wrapping_sub(2)
            } else {
                raw
            })
        };
        let duration = |bytes: &mut Bytes<'_>| match bytes.u8() % 4 {
            0 => None,
            1 => Some(open + Duration::from_nanos(u64::from(bytes.u8()))),
            2 => open.checked_sub(Duration::from_nanos(u64::from(bytes.u8()))),
            _ => Some(Duration::new(
                bytes.u64() >> (bytes.u8() % 64),
                bytes.u32() % 1_000_000_000,
            )),
        };
        let near = if bytes.u8().is_multiple_of(2) {
            1_000_000
        } else {
            10_000_000
        };
        let backoff = factor(bytes, near);
        let jitter = factor(bytes, 1_000_000);
        Recovery {
            backoff,
            jitter,
            max_open: duration(bytes),
            probe_timeout: duration(bytes),
        }
    }

    /// Whether each setting is valid (SPEC §10's table), in the order the
    /// builder checks them, for a circuit open for `open`.
    fn validity(self, open: Duration) -> [(&'static str, bool); 4] {
        let valid = |d: Duration| !d.is_zero() && d <= MAX_DURATION;
        let ten = Factor::from_millionths(10_000_000);
        [
            ("open_backoff", (Factor::ONE..=ten).contains(&self.backoff)),
            ("open_jitter", self.jitter < Factor::ONE),
            (
                "max_open_duration",
                self.max_open.is_none_or(|max| valid(max) && max >= open),
            ),
            ("probe_timeout", self.probe_timeout.is_none_or(valid)),
        ]
    }

    /// Panics unless `config` (open for `open`) returns these settings
    /// through its getters, the unset durations as the open duration.
    fn given_by(self, config: &Config, open: Duration) {
        assert_eq!(config.open_backoff(), self.backoff);
        assert_eq!(config.open_jitter(), self.jitter);
        assert_eq!(config.max_open_duration(), self.max_open.unwrap_or(open));
        assert_eq!(config.probe_timeout(), self.probe_timeout.unwrap_or(open));
    }

    /// `builder` with these settings; the durations only when set.
    fn apply(self, builder: crate::ConfigBuilder) -> crate::ConfigBuilder {
        let builder = builder
            .open_backoff(self.backoff.to_f64())
            .open_jitter(self.jitter.to_f64());
        let builder = match self.max_open {
            Some(max) => builder.max_open_duration(max),
            None => builder,
        };
        match self.probe_timeout {
            Some(timeout) => builder.probe_timeout(timeout),
            None => builder,
        }
    }
}

/// The inputs of [`config`].
#[derive(Clone, Copy)]
#[cfg(feature = "config-file")]
struct Values<'a> {
    threshold: u32,
    probes: u32,
    window: Duration,
    open: Duration,
    statuses: &'a [u16],
    flags: u8,
    prefix: &'a str,
    recovery: Recovery,
}

/// The same values as `FUSE_*` variables give the same configuration as
/// the builder did, or refuse the same setting.
#[cfg(feature = "config-file")]
fn from_env(built: &Result<Config, crate::ConfigError>, values: Values<'_>) {
    let Values {
        threshold,
        probes,
        window,
        open,
        statuses,
        flags,
        prefix,
        recovery,
    } = values;
    let list = |values: &[u16]| values.iter().map(u16::to_string).collect::<Vec<_>>();
    let vars = [
        ("FUSE_FAILURE_THRESHOLD", threshold.to_string()),
        ("FUSE_HALF_OPEN_PROBES", probes.to_string()),
        (
            "FUSE_FAILURE_WINDOW",
            humantime::format_duration(window).to_string(),
        ),
        (
            "FUSE_OPEN_DURATION",
            humantime::format_duration(open).to_string(),
        ),
        ("FUSE_COUNTED_HTTP_STATUSES", list(statuses).join(",")),
        ("FUSE_COUNT_TIMEOUTS", (flags & 1 != 0).to_string()),
        ("FUSE_COUNT_CONNECTION_ERRORS", (flags & 2 != 0).to_string()),
        ("FUSE_COUNT_HTTP_500", (flags & 4 != 0).to_string()),
        ("FUSE_KEY_PREFIX", prefix.to_owned()),
        ("FUSE_OPEN_BACKOFF", recovery.backoff.to_string()),
        ("FUSE_OPEN_JITTER", recovery.jitter.to_string()),
    ]
    .into_iter()
    .chain(recovery.max_open.map(|max| {
        (
            "FUSE_MAX_OPEN_DURATION",
            humantime::format_duration(max).to_string(),
        )
    }))
    .chain(recovery.probe_timeout.map(|timeout| {
        (
            "FUSE_PROBE_TIMEOUT",
            humantime::format_duration(timeout).to_string(),
        )
    }));
    let from_env = crate::Settings::default()
        .with_env_vars(vars)
        .and_then(|settings| settings.config());
    match (built, from_env) {
        (Ok(built), Ok(from_env)) => assert_eq!(built, &from_env),
        (Err(built), Err(crate::SettingsError::Invalid { source, .. })) => {
            assert_eq!(built, &source);
        }
        // Text too long for a duration: a duration the builder refuses too.
        (Err(_), Err(crate::SettingsError::Env { var, .. })) => {
            let too_long = |d: Duration| d > MAX_DURATION;
            assert!(
                (var == "FUSE_FAILURE_WINDOW" && too_long(window))
                    || (var == "FUSE_OPEN_DURATION" && too_long(open))
                    || (var == "FUSE_MAX_OPEN_DURATION" && recovery.max_open.is_some_and(too_long))
                    || (var == "FUSE_PROBE_TIMEOUT"
                        && recovery.probe_timeout.is_some_and(too_long)),
                "{var}"
            );
        }
        (built, from_env) => panic!("built {built:?}, from the environment {from_env:?}"),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// The same harness as the `differential` fuzz target, on random
        /// histories of up to 400 operations.
        #[test]
        fn differential(data in prop::collection::vec(any::<u8>(), 0..800)) {
            super::differential(&data);
        }

        /// The reference circuit against the oracle on the histories of
        /// the `differential` target, under `count` and `rate`.
        #[test]
        fn the_reference_follows_the_oracle(data in prop::collection::vec(any::<u8>(), 0..800)) {
            super::models(&data);
        }

        /// The same harness as the `config` fuzz target.
        #[test]
        fn config(data in prop::collection::vec(any::<u8>(), 0..64)) {
            super::config(&data);
        }
    }
}
