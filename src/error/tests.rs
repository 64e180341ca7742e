use super::*;

/// What a `Result` of a protected call costs to move: the rejection is
/// three words, and beside an `io::Error` the whole error four at most.
#[test]
fn errors_are_small() {
    assert!(std::mem::size_of::<OpenError>() <= 24);
    assert!(std::mem::size_of::<Error<std::io::Error>>() <= 32);
    assert!(std::mem::size_of::<Result<u64, Error<std::io::Error>>>() <= 32);
}
