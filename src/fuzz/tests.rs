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
