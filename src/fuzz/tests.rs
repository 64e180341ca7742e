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
