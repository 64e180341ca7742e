#[test]
fn numbers_differ_and_fit_in_63_bits() {
    let numbers: std::collections::HashSet<u64> = (0..10_000).map(|_| super::next()).collect();
    assert_eq!(numbers.len(), 10_000);
    assert!(numbers.iter().all(|&n| n > 0 && n < 1 << 63));
}
