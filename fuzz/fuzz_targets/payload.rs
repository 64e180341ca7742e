//! Arbitrary bytes under a key, read as a circuit; see `fuse_breaker::fuzz::payload`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuse_breaker::fuzz::payload(data));
