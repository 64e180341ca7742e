//! A stored circuit against the oracle (SPEC §3, §8's quorum, §10, §11's
//! ramp-up),
//! which shares no code with the model: the same admissions and the same
//! snapshot after every step of a random history.

use super::*;

#[derive(Clone, Debug)]
enum Op {
    Acquire,
    /// Ends the permit at this index (modulo those held), a failure with
    /// the server's hint if one is given, reported by this reporter.
    End(usize, Verdict, Option<u64>, u64),
    /// Waits this many microseconds (a store's times are whole ones).
    Wait(u64),
    ForceOpen,
    ForceClosed,
}

fn op() -> impl Strategy<Value = Op> {
    let verdict = prop_oneof![
        Just(Verdict::Success),
        Just(Verdict::Failure),
        Just(Verdict::Ignore)
    ];
    let hint = prop_oneof![
        3 => Just(None),
        1 => (0..300 * SEC).prop_map(Some),
        1 => Just(Some(u64::MAX)),
    ];
    prop_oneof![
        4 => Just(Op::Acquire),
        4 => (any::<usize>(), verdict, hint, 1u64..=3).prop_map(|(at, verdict, hint, reporter)| {
            let hint = hint.filter(|_| verdict == Verdict::Failure);
            Op::End(at, verdict, hint, reporter)
        }),
        2 => (0..40_000_000u64).prop_map(Op::Wait),
        1 => Just(Op::ForceOpen),
        1 => Just(Op::ForceClosed),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// With leases that never end, a stored circuit is the circuit of SPEC
    /// §3 and §10: the same admissions and the same snapshot after every
    /// step as the oracle (which shares no code with the model) seeded
    /// with the key's generation, under any backoff, jitter, longest
    /// opening and probe timeout, with the servers' hints on failures. The
    /// one difference is the store's resolution: an opening ends on the
    /// first whole microsecond at or after the oracle's end, so every
    /// decision at a store's time (a whole microsecond) is the oracle's.
    /// Under both policies, with §8's quorum of up to three reporters out
    /// of three (the snapshots show the same reporters), and with §11's
    /// ramp-up from the store's closing (the two sides draw alike).
    #[test]
    fn a_stored_circuit_follows_the_oracle(
        threshold in 1u32..5,
        probes in 1u32..4,
        recovery in recovery(),
        quorum in 1u32..4,
        minimum_calls in prop::option::of(1u32..5),
        ramp in prop::option::of((prop_oneof![Just(1u64), Just(5), Just(30), Just(90)], 1u32..=100)),
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let mut config = recovering(threshold, probes, recovery)
            .to_builder()
            .min_reporters(quorum);
        if let Some((seconds, floor)) = ramp {
            config = config.ramp_up(Duration::from_secs(seconds)).ramp_up_floor(floor);
        }
        if let Some(minimum_calls) = minimum_calls {
            config = config.policy(crate::config::Policy::Rate).minimum_calls(minimum_calls);
        }
        let config = config.build().expect("a valid configuration");
        let mut oracle = Oracle::new(&config).with_seed(GENERATION).shared(&config);
        let mut stored = Stored::fresh(GENERATION);
        let mut held = Vec::new();
        let mut now = 1_700_000_000 * SEC;
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Acquire => {
                    // The same draw on both sides (SPEC §11).
                    fastrand::seed(step as u64);
                    let draw = fastrand::u32(..);
                    let at = At { draw, ..at(now, FOREVER, step as u64) };
                    let (entry, _) = stored.acquire(&config, at);
                    fastrand::seed(step as u64);
                    match (oracle.acquire(now), entry) {
                        (Admit::Throttled(expected), Entry::Rejected { retry_after }) => {
                            let why = crate::error::shed_by(retry_after);
                            prop_assert_eq!(Some(expected), why, "step {}", step);
                        }
                        (Admit::Granted(expected), Entry::Granted(ticket)) => {
                            prop_assert_eq!(expected.probe, ticket.is_probe());
                            held.push((expected, ticket));
                        }
                        (Admit::Rejected(expected), Entry::Rejected { retry_after }) => {
                            prop_assert_eq!(up_to_micros(expected), retry_after, "step {}", step);
                        }
                        (expected, entry) => {
                            prop_assert!(false, "oracle {:?}, store {:?}", expected, entry);
                        }
                    }
                }
                Op::End(index, verdict, hint, reporter) if !held.is_empty() => {
                    let (expected, ticket) = held.remove(index % held.len());
                    oracle.end_reported(expected, outcome(verdict), hint, reporter, now);
                    let opens = Opens { hint, reporter, ..Opens::default() };
                    stored.timed_verdict(&config, &ticket, verdict, false, opens, now);
                }
                Op::End(..) => {}
                Op::Wait(micros) => now += micros * MICRO,
                Op::ForceOpen => {
                    oracle.force_open(now);
                    stored.force_open(&config, now, 0);
                }
                Op::ForceClosed => {
                    oracle.force_closed();
                    stored.force_closed(&config);
                }
            }
            prop_assert_eq!(
                stored.snapshot(&config, now),
                newest_failures(as_stored(oracle.snapshot(now)), threshold),
                "step {}",
                step
            );
            prop_assert_eq!(stored.leases.len(), stored.head.inflight as usize);
            prop_assert_eq!(stored.generation, GENERATION);

        }
    }
}
