//! The engine against the reference model on a decoded history; see
//! `fuse_breaker::fuzz::differential`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuse_breaker::fuzz::differential(data));
