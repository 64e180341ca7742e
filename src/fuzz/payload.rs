//! The `payload` target: what a store holds under a key, read as a
//! circuit (SPEC §8). Arbitrary bytes, in either encoding (JSON, PHP's
//! `serialize()`), never panic and are read in bounded memory; a payload
//! that reads as a circuit is written back in both encodings, and what is
//! written always reads again (a write never makes a payload its own
//! readers refuse).

use super::Bytes;
use crate::store::model::payload::{self, Fresh};
use crate::store::{Codec, Encoding};

/// Reads `data` (after a byte choosing what the reader accepts, and the
/// reading's time) as a payload, and checks what a circuit read from it
/// writes. Never panics on any input (but on a broken promise).
pub fn payload(data: &[u8]) {
    let mut bytes = Bytes(data);
    let codec = match bytes.u8() % 3 {
        0 => Codec::new(Encoding::Json),
        1 => Codec::new(Encoding::Php),
        _ => Codec::new(Encoding::Json).reading_any(),
    };
    // A store's time: a whole microsecond, from 2023 on.
    let now = (1_700_000_000_000_000 + u64::from(bytes.u32())) * 1_000;
    let fresh = Fresh::at(now, 30_000_000_000);
    let Ok(stored) = payload::read("fuse:fuzz", bytes.0, codec, fresh) else {
        return;
    };
    let any = Codec::new(Encoding::Json).reading_any();
    for encoding in [Encoding::Json, Encoding::Php] {
        let written = payload::write(&stored, 0, encoding);
        if let Err(err) = payload::read("fuse:fuzz", &written, any, fresh) {
            panic!(
                "a circuit read from {:?} wrote {:?} in {encoding:?}, which reads as: {err}",
                String::from_utf8_lossy(data),
                String::from_utf8_lossy(&written)
            );
        }
    }
}
