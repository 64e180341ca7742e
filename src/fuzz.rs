//! The harnesses of the `cargo fuzz` targets in `fuzz/` (built with
//! `--cfg fuzzing`, where this module is public), which property tests
//! also run under `cargo test`:
//!
//! - [`differential()`] and [`models`] (`differential.rs`): the engine,
//!   through the public API, against the reference circuit (the model's
//!   rules over a `Vec`) and the oracle (a second reading of SPEC §3 that
//!   shares no code with the model), on a history decoded from bytes;
//!   where its circuit starts is in `start.rs`, its configurations and
//!   clock steps in `setup.rs`;
//! - [`config`] (`builder.rs`): the configuration builder against SPEC §2
//!   and §10;
//! - [`payload()`] (`payload.rs`, feature `store`): what a store holds
//!   under a key, in either encoding, read as a circuit and written back.
//!
//! This file holds the byte reader they share.

// Public for the fuzz targets only; private in test builds.
#![cfg_attr(not(fuzzing), allow(unreachable_pub))]

mod builder;
mod differential;
#[cfg(feature = "store")]
mod payload;
mod setup;
mod start;

pub use builder::config;
pub use differential::{differential, models};
#[cfg(feature = "store")]
pub use payload::payload;

/// Reads bytes as they are needed; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&first, rest)) => {
                self.0 = rest;
                first
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) << 32 | u64::from(self.u32())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests;
