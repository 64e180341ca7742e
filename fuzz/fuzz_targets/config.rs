//! Arbitrary configuration-builder inputs; see `fuse_breaker::fuzz::config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuse_breaker::fuzz::config(data));
