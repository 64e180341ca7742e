//! The payload under a key (SPEC §8): JSON with milon/fuse's five fields,
//! which milon/fuse reads and writes, and this crate's own under `fuse`
//! (times in microseconds, the generation, the epoch, the probe leases).
//!
//! A payload whose `fuse` part is missing, of another version, or does not
//! agree with the five fields (milon/fuse wrote it over ours) is read by the
//! five fields alone, in a generation of its own (unnamed until this crate
//! writes the key, like an absent key's: see [`Stored::absent`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::MAX_HALF_OPEN_PROBES;
use crate::epoch::Epoch;
use crate::model::Head;
use crate::snapshot::State;

use super::stored::{Lease, Stored};

/// The version of the `fuse` part this crate writes.
const VERSION: u32 = 1;

const NANOS_PER_MICRO: u64 = 1_000;

/// The store's time at the payload's resolution (whole microseconds), in
/// nanoseconds: every time the rules see from a store is one, so that
/// writing a time and reading it back changes no decision.
pub(crate) fn store_time(since_epoch: std::time::Duration) -> u64 {
    let nanos = u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX);
    nanos - nanos % NANOS_PER_MICRO
}
const NANOS_PER_SEC: u64 = 1_000_000_000;

/// A payload that could not be read: the key, and what was wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayloadError {
    key: String,
    reason: String,
}

impl PayloadError {
    pub(crate) fn new(key: &str, reason: impl fmt::Display) -> Self {
        PayloadError {
            key: key.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// The key whose payload could not be read.
    ///
    /// ```
    /// # use fuse_breaker::store::PayloadError;
    /// # fn show(err: &PayloadError) {
    /// eprintln!("{} holds no circuit", err.key());
    /// # }
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the payload under {} is not a circuit: {}",
            self.key, self.reason
        )
    }
}

impl std::error::Error for PayloadError {}

#[derive(Serialize, Deserialize)]
struct Payload {
    state: String,
    opened_at: Option<u64>,
    #[serde(default)]
    failures: Vec<u64>,
    #[serde(default)]
    half_open_successes: u32,
    #[serde(default)]
    half_open_inflight: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fuse: Option<Own>,
}

/// The crate's own fields.
#[derive(Serialize, Deserialize)]
struct Own {
    version: u32,
    generation: u64,
    epoch: u64,
    opened_at_us: Option<u64>,
    failures_us: Vec<u64>,
    leases: Vec<OwnLease>,
}

#[derive(Serialize, Deserialize)]
struct OwnLease {
    id: u64,
    until_us: u64,
}

/// What reading a payload written by milon/fuse alone needs: when the
/// probes it counts in flight lose their slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fresh {
    pub(crate) lease_until: u64,
}

fn state_name(state: State) -> &'static str {
    match state {
        State::Closed => "closed",
        State::Open => "open",
        State::HalfOpen => "half_open",
    }
}

/// The payload of `stored`.
pub(crate) fn write(stored: &Stored) -> Vec<u8> {
    let half_open = stored.head.state == State::HalfOpen;
    let closed = stored.head.state == State::Closed;
    let payload = Payload {
        state: state_name(stored.head.state).to_owned(),
        opened_at: (!closed).then_some(stored.opened_at / NANOS_PER_SEC),
        failures: stored
            .failures
            .iter()
            .map(|at| at / NANOS_PER_SEC)
            .collect(),
        half_open_successes: if half_open { stored.head.successes } else { 0 },
        half_open_inflight: if half_open { stored.head.inflight } else { 0 },
        fuse: Some(Own {
            version: VERSION,
            generation: stored.generation,
            epoch: stored.epoch,
            opened_at_us: (!closed).then_some(stored.opened_at / NANOS_PER_MICRO),
            failures_us: stored
                .failures
                .iter()
                .map(|at| at / NANOS_PER_MICRO)
                .collect(),
            leases: stored
                .leases
                .iter()
                .map(|lease| OwnLease {
                    id: lease.id,
                    until_us: lease.until / NANOS_PER_MICRO,
                })
                .collect(),
        }),
    };
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// Reads the payload under `key`; `fresh` for one milon/fuse wrote.
pub(crate) fn read(key: &str, bytes: &[u8], fresh: Fresh) -> Result<Stored, PayloadError> {
    let payload: Payload =
        serde_json::from_slice(bytes).map_err(|err| PayloadError::new(key, err))?;
    let state = match payload.state.as_str() {
        "closed" => State::Closed,
        "open" => State::Open,
        "half_open" => State::HalfOpen,
        other => {
            return Err(PayloadError::new(
                key,
                format_args!("unknown state {other:?}"),
            ));
        }
    };
    for (field, value) in [
        ("half_open_successes", payload.half_open_successes),
        ("half_open_inflight", payload.half_open_inflight),
    ] {
        if value > MAX_HALF_OPEN_PROBES {
            return Err(PayloadError::new(
                key,
                format_args!("{field} is {value}, above {MAX_HALF_OPEN_PROBES}"),
            ));
        }
    }
    if state != State::Closed && payload.opened_at.is_none() {
        return Err(PayloadError::new(key, "opened_at is null while not closed"));
    }
    let half_open = state == State::HalfOpen;
    let successes = if half_open {
        payload.half_open_successes
    } else {
        0
    };
    let inflight = if half_open {
        payload.half_open_inflight
    } else {
        0
    };
    if let Some(own) = payload.fuse.as_ref().filter(|own| {
        own.version == VERSION
            && own.failures_us.len() == payload.failures.len()
            && own.leases.len() == inflight as usize
            && (state == State::Closed) == own.opened_at_us.is_none()
    }) {
        return Ok(Stored {
            generation: own.generation,
            epoch: own.epoch,
            head: head(state, own.epoch, successes, inflight),
            opened_at: own
                .opened_at_us
                .unwrap_or(0)
                .saturating_mul(NANOS_PER_MICRO),
            failures: own
                .failures_us
                .iter()
                .map(|at| at.saturating_mul(NANOS_PER_MICRO))
                .collect(),
            leases: own
                .leases
                .iter()
                .map(|lease| Lease {
                    id: lease.id,
                    until: lease.until_us.saturating_mul(NANOS_PER_MICRO),
                })
                .collect(),
        });
    }
    // milon/fuse's fields alone: no generation yet.
    let mut failures: Vec<u64> = payload
        .failures
        .iter()
        .map(|at| at.saturating_mul(NANOS_PER_SEC))
        .collect();
    failures.sort_unstable();
    Ok(Stored {
        generation: 0,
        epoch: 0,
        head: head(state, 0, successes, inflight),
        opened_at: payload.opened_at.unwrap_or(0).saturating_mul(NANOS_PER_SEC),
        failures,
        leases: (0..u64::from(inflight))
            .map(|id| Lease {
                id,
                until: fresh.lease_until,
            })
            .collect(),
    })
}

fn head(state: State, epoch: u64, successes: u32, inflight: u32) -> Head {
    #[allow(clippy::cast_possible_truncation)] // the head keeps the low bits
    let epoch = Epoch::new(epoch as u32);
    let head = match state {
        State::Closed => Head::closed(epoch),
        State::Open => Head::open(epoch),
        State::HalfOpen => Head::half_open(epoch),
    };
    Head {
        successes,
        inflight,
        ..head
    }
}

#[cfg(test)]
#[path = "payload_tests.rs"]
mod tests;
