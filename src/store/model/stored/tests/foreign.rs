//! Foreign writers (SPEC §8): milon/fuse's calls on the key, each a read
//! of its five fields and a write of them alone, interleaved with the
//! crate's own admissions and verdicts. Together they are one circuit:
//! the oracle's, which takes both sides' calls as its own.

use super::*;
use crate::store::model::payload::{self, Fresh};
use crate::store::{Codec, Encoding};

/// milon/fuse's snapshot of a circuit: its five fields (times in whole
/// seconds), read and written whole around every step it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Milon {
    state: String,
    opened_at: Option<u64>,
    failures: Vec<u64>,
    successes: u32,
    inflight: u32,
}

/// milon/fuse's settings, as the crate's `config` has them (seconds).
#[derive(Clone, Copy, Debug)]
struct Rules {
    threshold: usize,
    window: u64,
    open: u64,
    probes: u32,
}

impl Milon {
    /// The five fields of the payload the crate writes for `stored`.
    fn of(stored: &Stored) -> Self {
        let json: serde_json::Value =
            serde_json::from_slice(&payload::write(stored, 0, Encoding::Json)).expect("JSON");
        let int = |field: &str| json[field].as_u64().expect(field);
        Milon {
            state: json["state"].as_str().expect("state").to_owned(),
            opened_at: json["opened_at"].as_u64(),
            failures: json["failures"]
                .as_array()
                .expect("failures")
                .iter()
                .map(|at| at.as_u64().expect("a failure"))
                .collect(),
            successes: u32::try_from(int("half_open_successes")).expect("successes"),
            inflight: u32::try_from(int("half_open_inflight")).expect("inflight"),
        }
    }

    /// The payload of these five fields alone, as milon/fuse writes it.
    fn payload(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "state": self.state,
            "opened_at": self.opened_at,
            "failures": self.failures,
            "half_open_successes": self.successes,
            "half_open_inflight": self.inflight,
        }))
        .expect("JSON")
    }

    fn closed() -> Self {
        Milon {
            state: "closed".to_owned(),
            opened_at: None,
            failures: Vec::new(),
            successes: 0,
            inflight: 0,
        }
    }

    fn opened(now: u64, failures: Vec<u64>) -> Self {
        Milon {
            state: "open".to_owned(),
            opened_at: Some(now),
            failures,
            successes: 0,
            inflight: 0,
        }
    }

    /// Admission at `now`: whether the call runs, and whether milon/fuse
    /// wrote.
    fn allow(&mut self, rules: Rules, now: u64) -> (bool, bool) {
        match self.state.as_str() {
            "closed" => (true, false),
            "open" => {
                let opened_at = self.opened_at.unwrap_or(now);
                if now < opened_at + rules.open {
                    return (false, false);
                }
                self.state = "half_open".to_owned();
                self.opened_at = Some(opened_at);
                self.failures.clear();
                (self.successes, self.inflight) = (0, 0);
                self.reserve(rules)
            }
            _ => self.reserve(rules),
        }
    }

    fn reserve(&mut self, rules: Rules) -> (bool, bool) {
        if self.inflight >= rules.probes {
            return (false, false);
        }
        self.inflight += 1;
        (true, true)
    }

    /// A verdict at `now`: whether milon/fuse wrote.
    fn end(&mut self, rules: Rules, verdict: Verdict, now: u64) -> bool {
        let half_open = self.state == "half_open";
        match verdict {
            Verdict::Success if half_open => {
                self.successes += 1;
                self.inflight = self.inflight.saturating_sub(1);
                if self.successes >= rules.probes {
                    *self = Milon::closed();
                }
            }
            Verdict::Success => *self = Milon::closed(),
            Verdict::Failure if half_open => *self = Milon::opened(now, vec![now]),
            Verdict::Failure => {
                let mut failures: Vec<u64> = self
                    .failures
                    .iter()
                    .copied()
                    .filter(|&at| at + rules.window >= now)
                    .collect();
                failures.push(now);
                if failures.len() >= rules.threshold {
                    *self = Milon::opened(now, failures);
                } else {
                    *self = Milon {
                        failures,
                        ..Milon::closed()
                    };
                }
            }
            Verdict::Ignore if half_open => self.inflight = self.inflight.saturating_sub(1),
            Verdict::Ignore => return false,
        }
        true
    }
}

#[derive(Clone, Debug)]
enum Step {
    /// The crate asks.
    Acquire,
    /// The crate ends the permit at this index (modulo those it holds).
    End(usize, Verdict),
    /// milon/fuse asks.
    Allow,
    /// milon/fuse ends the call at this index (modulo those it runs).
    Finish(usize, Verdict),
    /// milon/fuse writes back what it read.
    Rewrite,
    /// Whole seconds go by (milon/fuse's times are whole seconds).
    Wait(u64),
}

fn step() -> impl Strategy<Value = Step> {
    let verdict = prop_oneof![
        Just(Verdict::Success),
        Just(Verdict::Failure),
        Just(Verdict::Ignore)
    ];
    prop_oneof![
        3 => Just(Step::Acquire),
        3 => (any::<usize>(), verdict.clone()).prop_map(|(at, v)| Step::End(at, v)),
        3 => Just(Step::Allow),
        3 => (any::<usize>(), verdict).prop_map(|(at, v)| Step::Finish(at, v)),
        1 => Just(Step::Rewrite),
        2 => (0..8u64).prop_map(Step::Wait),
    ]
}

/// What a snapshot says that milon/fuse's payload carries: not how many
/// openings came in a row (milon/fuse's opening is a first one), nor who
/// reported the failures (it names no one).
fn carried(mut snapshot: Snapshot) -> Snapshot {
    snapshot.openings = 0;
    snapshot.reporters = 0;
    snapshot
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// The crate and milon/fuse sharing one key are one circuit, the
    /// oracle's: the same admissions and the same snapshot after every
    /// step, every verdict of the crate's that the oracle takes applied
    /// (none lost to a foreign write that kept `state` and `opened_at`),
    /// milon/fuse's own verdicts ended in the epoch that granted them.
    /// The one exception is the case a foreign writer leaves no trace of
    /// (it opened and closed the circuit again while a closed permit of
    /// the crate's ran): that verdict is not sent, and the test checks
    /// that only a closed permit's can be in that case.
    #[test]
    fn milon_and_the_crate_on_one_key_are_one_circuit(
        threshold in 1u32..5,
        probes in 1u32..4,
        open in 1u64..5,
        steps in prop::collection::vec(step(), 1..150),
    ) {
        let config = Config::builder()
            .failure_threshold(threshold)
            .half_open_probes(probes)
            .failure_window(Duration::from_secs(10))
            .open_duration(Duration::from_secs(open))
            // milon/fuse's probes hold their slot until they end.
            .probe_timeout(Duration::from_hours(1))
            .build()
            .expect("a valid configuration");
        let rules = Rules { threshold: threshold as usize, window: 10, open, probes };
        let mut oracle = Oracle::new(&config).with_seed(GENERATION).shared(&config);
        let mut stored = Stored::fresh(GENERATION);
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut now = 1_700_000_000 * SEC;
        for (index, step) in steps.into_iter().enumerate() {
            let seconds = now / SEC;
            match step {
                Step::Acquire => {
                    let (entry, _) = stored.acquire(&config, at(now, FOREVER, index as u64));
                    match (oracle.acquire(now), entry) {
                        (Admit::Granted(expected), Entry::Granted(ticket)) => {
                            prop_assert_eq!(expected.probe, ticket.is_probe());
                            ours.push((expected, ticket));
                        }
                        (Admit::Rejected(_), Entry::Rejected { .. }) => {}
                        (expected, entry) => {
                            prop_assert!(false, "step {}: oracle {:?}, store {:?}", index, expected, entry);
                        }
                    }
                }
                Step::End(at, verdict) if !ours.is_empty() => {
                    let (expected, ticket) = ours.remove(at % ours.len());
                    if !oracle.is_current(&expected) && stored.shows(&ticket) {
                        prop_assert!(!ticket.is_probe(), "step {}: a probe's epoch is always told", index);
                        continue;
                    }
                    oracle.end_reported(expected, outcome(verdict), None, 1, now);
                    let opens = Opens { reporter: 1, ..Opens::default() };
                    stored.timed_verdict(&config, &ticket, verdict, false, opens, now);
                }
                Step::Allow => {
                    let mut milon = Milon::of(&stored);
                    let (runs, wrote) = milon.allow(rules, seconds);
                    match (oracle.acquire(now), runs) {
                        (Admit::Granted(expected), true) => theirs.push(expected),
                        (Admit::Rejected(_), false) => {}
                        (expected, runs) => {
                            prop_assert!(false, "step {}: oracle {:?}, milon/fuse {}", index, expected, runs);
                        }
                    }
                    if wrote {
                        stored = foreign(&config, &milon, now)?;
                    }
                }
                Step::Finish(at, verdict) if !theirs.is_empty() => {
                    let expected = theirs.remove(at % theirs.len());
                    // milon/fuse applies a stale verdict to whatever it
                    // finds (a difference of its own, docs/milon-fuse.md):
                    // only its verdicts of the epoch that granted them.
                    if oracle.is_current(&expected) {
                        oracle.end_reported(expected, outcome(verdict), None, 0, now);
                        let mut milon = Milon::of(&stored);
                        if milon.end(rules, verdict, seconds) {
                            stored = foreign(&config, &milon, now)?;
                        }
                    }
                }
                Step::End(..) | Step::Finish(..) => {}
                Step::Rewrite => stored = foreign(&config, &Milon::of(&stored), now)?,
                Step::Wait(seconds) => now += seconds * SEC,
            }
            prop_assert_eq!(
                carried(stored.snapshot(&config, now)),
                carried(newest_failures(as_stored(oracle.snapshot(now)), threshold)),
                "step {}",
                index
            );
        }
    }
}

/// The circuit the crate reads at `now` from what milon/fuse wrote.
fn foreign(config: &Config, milon: &Milon, now: u64) -> Result<Stored, TestCaseError> {
    let fresh = Fresh {
        open: config.open_nanos(),
        ..Fresh::at(now, FOREVER)
    };
    let stored = payload::read("fuse:k", &milon.payload(), Codec::default(), fresh)
        .map_err(|err| TestCaseError::fail(err.to_string()))?;
    prop_assert!(stored.foreign);
    Ok(stored)
}

/// A Rust probe and a PHP probe in flight; PHP's success rewrites the key
/// without the crate's part; the Rust probe's success then closes the
/// circuit (it was dropped as stale before).
#[test]
fn a_probe_s_success_after_a_foreign_probe_s_closes_the_circuit() {
    let config = config(3, 2);
    let rules = Rules {
        threshold: 3,
        window: 60,
        open: 30,
        probes: 2,
    };
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(5);
    stored.force_open(&config, now - 30 * SEC, 5);
    let ours = granted(stored.acquire(&config, at(now, FOREVER, 1)).0);
    assert!(ours.is_probe());
    let mut milon = Milon::of(&stored);
    assert_eq!(milon.allow(rules, now / SEC), (true, true));
    assert!(milon.end(rules, Verdict::Success, now / SEC));
    let mut stored = foreign(&config, &milon, now).unwrap();
    assert!(stored.verdict(&config, &ours, Verdict::Success, now + SEC));
    assert_eq!(stored.state(), State::Closed);
    assert!(!stored.foreign, "a closed epoch of the crate's own");
}

/// The same with the Rust probe failing: the circuit opens again (the
/// failure was dropped, and the next PHP success closed it).
#[test]
fn a_probe_s_failure_after_a_foreign_probe_s_success_opens_the_circuit() {
    let config = config(3, 2);
    let rules = Rules {
        threshold: 3,
        window: 60,
        open: 30,
        probes: 2,
    };
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(5);
    stored.force_open(&config, now - 30 * SEC, 5);
    let ours = granted(stored.acquire(&config, at(now, FOREVER, 1)).0);
    let mut milon = Milon::of(&stored);
    assert_eq!(milon.allow(rules, now / SEC), (true, true));
    assert!(milon.end(rules, Verdict::Success, now / SEC));
    let mut stored = foreign(&config, &milon, now).unwrap();
    assert!(stored.verdict(&config, &ours, Verdict::Failure, now + SEC));
    assert_eq!(stored.state(), State::Open);
}

/// Closed: a Rust failure, a PHP failure, a Rust failure (threshold 3):
/// the three open the circuit (two were stored before, the last Rust one
/// dropped).
#[test]
fn no_closed_failure_is_lost_to_a_foreign_write() {
    let config = config(3, 1);
    let rules = Rules {
        threshold: 3,
        window: 60,
        open: 30,
        probes: 1,
    };
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(5);
    let first = granted(stored.acquire(&config, at(now, FOREVER, 1)).0);
    let second = granted(stored.acquire(&config, at(now, FOREVER, 2)).0);
    assert!(stored.verdict(&config, &first, Verdict::Failure, now));
    let mut milon = Milon::of(&stored);
    assert!(milon.end(rules, Verdict::Failure, now / SEC + 1));
    let mut stored = foreign(&config, &milon, now + SEC).unwrap();
    assert_eq!(stored.failures().len(), 2);
    assert!(stored.verdict(&config, &second, Verdict::Failure, now + 2 * SEC));
    assert_eq!(stored.state(), State::Open);
}

/// A foreign write that changed the state is a new epoch: a probe of the
/// opening before is stale, and so is a closed permit once the circuit
/// is half-open.
#[test]
fn a_foreign_write_that_changed_the_state_starts_an_epoch() {
    let config = config(1, 1);
    let rules = Rules {
        threshold: 1,
        window: 60,
        open: 30,
        probes: 1,
    };
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(5);
    let closed = granted(stored.acquire(&config, at(now, FOREVER, 1)).0);
    let mut milon = Milon::of(&stored);
    assert!(milon.end(rules, Verdict::Failure, now / SEC));
    let mut stored = foreign(&config, &milon, now).unwrap();
    assert_eq!(stored.state(), State::Open);
    assert!(!stored.verdict(&config, &closed, Verdict::Failure, now));
    // Half-open by the crate, the probe failed by PHP: a new opening.
    let later = now + 30 * SEC;
    let probe = granted(stored.acquire(&config, at(later, FOREVER, 2)).0);
    let mut milon = Milon::of(&stored);
    milon.inflight += 1; // PHP's own probe, granted past the crate's slot
    assert!(milon.end(rules, Verdict::Failure, later / SEC + 1));
    let mut reopened = foreign(&config, &milon, later + SEC).unwrap();
    let again = later + 31 * SEC;
    let mut milon = Milon::of(&reopened);
    assert_eq!(milon.allow(rules, again / SEC), (true, true));
    reopened = foreign(&config, &milon, again).unwrap();
    assert_eq!(reopened.state(), State::HalfOpen);
    let before = reopened.clone();
    assert!(!reopened.verdict(&config, &probe, Verdict::Success, again));
    assert_eq!(reopened, before, "a probe of the opening before is stale");
}

/// The crate's own write in an epoch a foreign writer wrote in keeps
/// saying so: the permits granted before the foreign write still count
/// after the crate writes again.
#[test]
fn an_epoch_a_foreign_writer_wrote_in_stays_known_by_its_face() {
    let config = config(3, 1);
    let rules = Rules {
        threshold: 3,
        window: 60,
        open: 30,
        probes: 1,
    };
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(5);
    let first = granted(stored.acquire(&config, at(now, SEC, 1)).0);
    let second = granted(stored.acquire(&config, at(now, SEC, 2)).0);
    let mut milon = Milon::of(&stored);
    assert!(milon.end(rules, Verdict::Failure, now / SEC));
    let mut stored = foreign(&config, &milon, now).unwrap();
    assert!(stored.verdict(&config, &first, Verdict::Failure, now));
    let written = payload::write(&stored, 0, Encoding::Json);
    let mut read =
        payload::read("fuse:k", &written, Codec::default(), Fresh::at(now, SEC)).unwrap();
    assert!(read.foreign, "{}", String::from_utf8_lossy(&written));
    assert!(read.verdict(&config, &second, Verdict::Failure, now));
    assert_eq!(read.state(), State::Open);
    assert!(!read.foreign, "the opening is an epoch of the crate's own");
    let reopened = payload::write(&read, 0, Encoding::Json);
    assert!(
        !String::from_utf8_lossy(&reopened).contains("foreign"),
        "{}",
        String::from_utf8_lossy(&reopened)
    );
}

/// An opening keeps the failures that opened it in milon/fuse's
/// `failures`, as milon/fuse does: its failure recorded late, while open,
/// counts them with its own and keeps the circuit open (with none, it
/// counted one failure and wrote a closed circuit).
#[test]
fn milon_s_late_failure_keeps_an_opening_of_the_crate_s_open() {
    let config = config(3, 1);
    let rules = Rules {
        threshold: 3,
        window: 60,
        open: 30,
        probes: 1,
    };
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(5);
    for id in 0..3 {
        let permit = granted(stored.acquire(&config, at(now + id * SEC, SEC, id)).0);
        stored.verdict(&config, &permit, Verdict::Failure, now + id * SEC);
    }
    assert_eq!(stored.state(), State::Open);
    let mut milon = Milon::of(&stored);
    assert_eq!(milon.failures, [now / SEC, now / SEC + 1, now / SEC + 2]);
    assert!(milon.end(rules, Verdict::Failure, now / SEC + 3));
    assert_eq!(milon.state, "open", "{milon:?}");
    // Read back, they are kept, not counted.
    let written = payload::write(&stored, 0, Encoding::Json);
    let read = payload::read("fuse:k", &written, Codec::default(), Fresh::at(now, SEC)).unwrap();
    assert_eq!(read.opened_by, stored.opened_by);
    assert_eq!(read, stored);
    // A failed probe's opening keeps that failure; a manual one, none.
    stored.force_closed(&config);
    stored.force_open(&config, now + 3 * SEC, 5);
    assert!(Milon::of(&stored).failures.is_empty());
    let probe = granted(stored.acquire(&config, at(now + 40 * SEC, 5 * SEC, 9)).0);
    stored.verdict(&config, &probe, Verdict::Failure, now + 41 * SEC);
    assert_eq!(Milon::of(&stored).failures, [now / SEC + 41]);
}
