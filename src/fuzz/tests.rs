//! The harnesses of the fuzz targets as property tests.

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

/// The differential histories reach SPEC §11: calls shed by the ramp and
/// by the throttle, and relapses within a ramp, in a few hundred random
/// histories (of the kind the property tests run).
#[test]
fn the_histories_reach_graded_admission() {
    let mut rng = fastrand::Rng::with_seed(11);
    let mut reached = super::differential::Reached::default();
    for _ in 0..500 {
        let len = rng.usize(0..800);
        let data: Vec<u8> = std::iter::repeat_with(|| rng.u8(..)).take(len).collect();
        let history = super::differential::run(&data, true);
        reached.ramp_sheds += history.ramp_sheds;
        reached.throttle_sheds += history.throttle_sheds;
        reached.relapses += history.relapses;
    }
    assert!(reached.ramp_sheds > 0, "{reached:?}");
    assert!(reached.throttle_sheds > 0, "{reached:?}");
    assert!(reached.relapses > 0, "{reached:?}");
}

/// Inputs the `config` target found: a key prefix holding a `:` (valid,
/// SPEC §2) once taken for one the builder must refuse.
#[test]
fn config_findings() {
    let mut colon = vec![255_u8; 67];
    colon[15] = 247;
    colon[19] = 35;
    colon[24] = 205;
    colon[35..49].fill(0);
    colon[41] = 22;
    colon[44] = 96;
    colon[49] = 58;
    colon[66] = 10;
    // SPEC §11's settings, read after the prefix: unset.
    colon[61..].fill(0);
    super::config(&colon);
}

/// Payloads the `payload` target starts from: milon/fuse's and this
/// crate's, in both encodings.
#[cfg(feature = "store")]
const SEEDS: [&[u8]; 3] = [
    br#"{"state":"open","opened_at":1700000000,"failures":[1699999990,1700000000],"half_open_successes":0,"half_open_inflight":0}"#,
    br#"a:5:{s:5:"state";s:9:"half_open";s:9:"opened_at";i:1700000000;s:8:"failures";a:0:{}s:19:"half_open_successes";i:1;s:18:"half_open_inflight";i:1;}"#,
    br#"{"state":"closed","opened_at":null,"failures":[1700000000],"half_open_successes":0,"half_open_inflight":0,"fuse":{"version":1,"generation":7,"epoch":2,"opened_at_us":null,"failures_us":[1700000000000001],"leases":[]}}"#,
];

#[cfg(feature = "store")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The same harness as the `payload` fuzz target, on random bytes and
    /// on the seeds cut short or with a byte changed.
    #[test]
    fn payload(
        head in prop::collection::vec(any::<u8>(), 5),
        seed in 0..SEEDS.len(),
        cut in any::<prop::sample::Index>(),
        change in prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
        noise in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut body = SEEDS[seed].to_vec();
        if let Some((at, byte)) = change {
            let at = at.index(body.len());
            body[at] = byte;
        }
        body.truncate(cut.index(body.len() + 1).max(body.len() / 2));
        super::payload(&[head.clone(), body].concat());
        super::payload(&[head, noise].concat());
    }
}

/// Two histories of one throttled configuration in a row: the second
/// circuit takes the first one's slot, whose throttle window holds a
/// request of the epoch the second one starts in.
#[test]
fn a_slot_reused_by_a_throttled_circuit() {
    // count, threshold 5, one probe, open and window 1 µs, no slow calls,
    // no recovery settings; throttling with K = 1, at most 50 %, from one
    // request; seed 0; a fresh start.
    let config = [0, 4, 0, 232, 3, 232, 3, 0, 0, 2, 0, 5, 0, 0, 0, 0, 0, 0];
    // Acquire, the permit fails; then the clock stays.
    let first = [config.as_slice(), &[0, 100, 0]].concat();
    let second = [config.as_slice(), &[180, 0]].concat();
    super::differential(&first);
    super::differential(&second);
}
