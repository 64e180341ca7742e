//! The payload under a key (SPEC §8): JSON with milon/fuse's five fields,
//! which milon/fuse reads and writes, and this crate's own under `fuse`
//! (times in microseconds, the generation, the epoch, the probe leases,
//! and SPEC §10's opening: `retry_at_us` while open, when it ends;
//! `openings` while open or half-open, its n + 1; `half_open_since_us`
//! while half-open, when the half-open epoch started). Each of the three
//! is written only in its states and read only in them, so a closed
//! payload (the one an [`Increment`](crate::store::Increment) applies to) has
//! none of them.
//!
//! What a payload does not give is read as milon/fuse has it: an opening
//! without its end lasts the reader's `open_duration` from `opened_at` and
//! is a first opening (n = 0); a half-open epoch without its start started
//! at that end. An `openings` of 0 while open or half-open is refused (an
//! opening counts itself: this crate never writes one), as is an opening
//! that ends before it began or later than the longest duration after it.
//!
//! While open, `failures` (and `fuse.failures_us`) hold the failures that
//! opened the circuit, as milon/fuse keeps them (its failure recorded in an
//! open circuit counts them with its own): read back, never counted.
//!
//! While closed, `fuse.reporters` names who reported the window's
//! failures (SPEC §8's quorum; see `payload/reporters.rs`); a closed
//! payload without it (milon/fuse's, or an older version's) reads as one
//! anonymous reporter of its failures.
//!
//! A payload whose `fuse` part is missing, of another version, or does not
//! agree with the five fields (milon/fuse wrote it over ours: another
//! state, another `opened_at`, other counts) is read by the five fields
//! alone, in a generation of its own (unnamed until this crate writes the
//! key, like an absent key's: see [`Stored::absent`]).
//!
//! A store may spell the payload as PHP's `serialize()` of milon/fuse's
//! array instead, as Laravel's cache keeps it: the same fields, the
//! crate's own as a string of their JSON under `fuse` (see
//! `payload/encoding.rs` and `payload/php.rs`).

use serde::{Deserialize, Serialize};

use crate::config::{MAX_DURATION, MAX_HALF_OPEN_PROBES, nanos};
use crate::epoch::Epoch;
use crate::model::Head;
use crate::policy::{Buckets, Failures, Window};
use crate::snapshot::State;

use crate::store::model::quorum::Reporters;
use crate::store::model::stored::{Lease, Ramp, Stored};
use crate::store::{Codec, Encoding};

mod encoding;
mod error;
mod php;
mod rate;
mod reporters;

pub(crate) use crate::policy::width;
pub(crate) use crate::store::model::resolution::{NANOS_PER_MICRO, store_time};
pub use error::PayloadError;
pub(crate) use error::too_large;
use rate::OwnRate;
pub(crate) use rate::rate_prefix;

/// The version of the `fuse` part this crate writes.
const VERSION: u32 = 1;

const NANOS_PER_SEC: u64 = 1_000_000_000;

const MICROS_PER_SEC: u64 = 1_000_000;

/// How far after the store's time (plus the reader's lease) a payload's
/// `opened_at` and failures may be: milon/fuse writes its times from its
/// machine's clock, which may run a little ahead of the store's.
const MAX_AHEAD: u64 = 60 * NANOS_PER_SEC;

/// A time a store's clock told in `seconds` and `micros` since the Unix
/// epoch (Redis `TIME`, an announcement), if it is one: the microseconds a
/// fraction of a second, the whole within the nanoseconds 64 bits hold
/// (until the year 2554), as every time the rules see is.
#[cfg(any(feature = "redis", feature = "sql"))]
pub(crate) fn clock(seconds: u64, micros: u64) -> Option<std::time::Duration> {
    let nanos = seconds
        .checked_mul(NANOS_PER_SEC)?
        .checked_add(micros.checked_mul(NANOS_PER_MICRO)?)?;
    (micros < 1_000_000 && nanos < u64::MAX).then(|| std::time::Duration::from_nanos(nanos))
}

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
    /// The epoch is known by its face alone (a foreign writer wrote in
    /// it, see [`Stored::foreign`]); absent otherwise. Before the
    /// window: a payload with it is no increment's (see
    /// [`Increment`](crate::store::Increment)), whose prefix names its epoch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    foreign: bool,
    /// While closed and ramping up (SPEC §11): when the store closed the
    /// circuit. Before the window: a payload with it is no increment's
    /// (see [`Increment`](crate::store::Increment)), whose prefix has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ramp_since_us: Option<u64>,
    /// With `ramp_since_us`: the openings in a row before the closing
    /// (SPEC §10's n + 1 of the opening whose probes closed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ramp_openings: Option<u64>,
    /// The window of the `rate` policy (absent under `count`, whose window
    /// is `failures_us`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rate: Option<OwnRate>,
    /// While open: when the opening ends (SPEC §10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_at_us: Option<u64>,
    /// While open or half-open: the openings in a row, this one included
    /// (SPEC §10's n + 1, at least 1, at most `u32::MAX`; read as a `u64`
    /// so that a value out of range is an error naming the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    openings: Option<u64>,
    /// While half-open: when the half-open epoch started (for the probe
    /// timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    half_open_since_us: Option<u64>,
    /// While closed: the window's reporters, each `[id, at_us]` (SPEC §8's
    /// quorum; see `payload/reporters.rs`). The last field: an increment
    /// keeps what follows the `rate` buckets as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reporters: Option<Vec<[u64; 2]>>,
}

#[derive(Serialize, Deserialize)]
struct OwnLease {
    id: u64,
    until_us: u64,
}

/// What reading a payload needs from its reader: the store's time of the
/// reading, which the payload's times are checked against, and that time
/// plus the reader's probe lease, when the probes a payload of milon/fuse
/// alone counts in flight lose their slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fresh {
    pub(crate) now: u64,
    pub(crate) lease_until: u64,
    /// The reader's bucket width under `rate`, in nanoseconds (0: keep a
    /// payload's bucket numbers as written).
    pub(crate) width: u64,
    /// The reader's open duration, in nanoseconds: how long an opening
    /// whose end a payload does not give lasts.
    pub(crate) open: u64,
}

impl Fresh {
    /// A reading at the store's time `now` by a reader whose probes hold
    /// `lease` nanoseconds.
    pub(crate) fn at(now: u64, lease: u64) -> Self {
        Fresh {
            now,
            lease_until: now.saturating_add(lease),
            width: 0,
            open: 0,
        }
    }

    /// This reading by a reader of `config`: a `rate` window written with
    /// another bucket width is put in `config`'s buckets.
    #[must_use]
    #[cfg(test)]
    pub(crate) fn of(self, config: &crate::config::Config) -> Self {
        Fresh {
            width: width(config),
            open: config.open_nanos(),
            ..self
        }
    }

    /// The latest `opened_at` or failure a payload may hold.
    pub(in crate::store) fn latest_event(self) -> u64 {
        self.now.saturating_add(MAX_AHEAD)
    }

    /// The latest end of an opening a payload may hold: the latest
    /// opening, plus the longest duration a configuration takes.
    fn latest_retry(self) -> u64 {
        self.latest_event().saturating_add(nanos(MAX_DURATION))
    }

    /// The latest end of a probe's lease a payload may hold (no lease is
    /// longer than the longest duration a configuration takes).
    fn latest_lease(self) -> u64 {
        self.now.saturating_add(nanos(MAX_DURATION))
    }
}

/// The time `time` (in seconds or microseconds, as `unit` nanoseconds) of
/// `field` under `key`, in nanoseconds, unless it is after `limit`.
fn checked(key: &str, field: &str, unit: u64, time: u64, limit: u64) -> Result<u64, PayloadError> {
    time.checked_mul(unit)
        .filter(|&nanos| nanos <= limit)
        .ok_or_else(|| {
            let unit = if unit == NANOS_PER_SEC { "s" } else { "us" };
            PayloadError::new(
                key,
                format_args!(
                    "{field} holds {time} {unit} since the Unix epoch, \
                     in the future of the store's clock"
                ),
            )
        })
}

/// The payload of `stored` in `encoding`, a `rate` window's buckets
/// `width` nanoseconds wide (see [`width`]).
pub(crate) fn write(stored: &Stored, width: u64, encoding: Encoding) -> Vec<u8> {
    let half_open = stored.head.state == State::HalfOpen;
    let closed = stored.head.state == State::Closed;
    let payload = Payload {
        state: stored.head.state.as_str().to_owned(),
        opened_at: (!closed).then_some(stored.opened_at / NANOS_PER_SEC),
        failures: failure_times(stored)
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
            failures_us: failure_times(stored)
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
            rate: match &stored.window {
                Window::Rate(buckets) => Some(OwnRate::of(buckets, width)),
                Window::Count(_) => None,
            },
            retry_at_us: (stored.head.state == State::Open)
                .then_some(stored.phase / NANOS_PER_MICRO),
            openings: (!closed).then_some(u64::from(stored.head.n.saturating_add(1))),
            half_open_since_us: half_open.then_some(stored.phase / NANOS_PER_MICRO),
            reporters: if closed {
                reporters::write(&stored.reporters)
            } else {
                None
            },
            foreign: stored.foreign,
            ramp_since_us: stored
                .ramp
                .filter(|_| closed)
                .map(|ramp| ramp.since / NANOS_PER_MICRO),
            ramp_openings: stored
                .ramp
                .filter(|_| closed)
                .map(|ramp| u64::from(ramp.n.saturating_add(1))),
        }),
    };
    encoding::encode(&payload, encoding)
}

/// The failure times of a `count` window (none under another policy).
fn failure_times(stored: &Stored) -> &[u64] {
    match &stored.window {
        _ if stored.head.state == State::Open => &stored.opened_by,
        Window::Count(failures) => failures.times(),
        Window::Rate(_) => &[],
    }
}

/// Reads the payload under `key` in the encoding it is in, if `codec`
/// reads it; `fresh` for one milon/fuse wrote, and to check its times.
pub(crate) fn read(
    key: &str,
    bytes: &[u8],
    codec: Codec,
    fresh: Fresh,
) -> Result<Stored, PayloadError> {
    if bytes.len() > PayloadError::MAX_BYTES {
        return Err(too_large(
            key,
            u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        ));
    }
    let payload = encoding::decode(key, bytes, codec)?;
    // The states as milon/fuse spells them, which is how the crate does.
    let Some(state) = [State::Closed, State::Open, State::HalfOpen]
        .into_iter()
        .find(|state| state.as_str() == payload.state)
    else {
        return Err(PayloadError::new(
            key,
            format_args!("unknown state {:?}", payload.state),
        ));
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
    // Failures count only while closed; an open payload's are those that
    // opened it (kept, not counted), and a half-open one's (milon/fuse's
    // may keep some) are left out.
    let closed = state == State::Closed;
    let opened_at = payload.opened_at.filter(|_| !closed);
    if let Some(own) = payload.fuse.as_ref().filter(|own| {
        own.version == VERSION
            && own.failures_us.len() == payload.failures.len()
            && own.leases.len() == inflight as usize
            && opened_at == own.opened_at_us.map(|at| at / MICROS_PER_SEC)
    }) {
        return read_own(
            key,
            own,
            head(state, own.epoch, successes, inflight, 0),
            fresh,
        );
    }
    // milon/fuse's fields alone: no generation yet.
    let seconds = |field, time| checked(key, field, NANOS_PER_SEC, time, fresh.latest_event());
    let failures = payload
        .failures
        .iter()
        .filter(|_| state != State::HalfOpen)
        .map(|&at| seconds("failures", at))
        .collect::<Result<Vec<_>, _>>()?;
    let opened_at = opened_at.map_or(Ok(0), |at| seconds("opened_at", at))?;
    let (window, opened_by) = split(state, failures);
    Ok(Stored {
        generation: 0,
        epoch: 0,
        head: head(state, 0, successes, inflight, 0),
        opened_at,
        phase: opened_at.saturating_add(fresh.open),
        reporters: reporters::read(key, None, &window, 0, fresh)?,
        window,
        leases: (0..u64::from(inflight))
            .map(|id| Lease {
                id,
                until: fresh.lease_until,
            })
            .collect(),
        opened_by,
        foreign: true,
        ramp: None,
    })
}

/// A payload's failures in `state`: while closed, a `count` window;
/// while open, those that opened it (see [`Stored::opened_by`]).
fn split(state: State, failures: Vec<u64>) -> (Window, Vec<u64>) {
    if state == State::Open {
        (Window::Count(Failures::default()), failures)
    } else {
        (Window::Count(Failures::from_times(failures)), Vec::new())
    }
}

/// The crate's own fields under `key`, of a circuit whose head is `head`.
fn read_own(key: &str, own: &Own, head: Head, fresh: Fresh) -> Result<Stored, PayloadError> {
    let micros = |field, time, limit| checked(key, field, NANOS_PER_MICRO, time, limit);
    let event = fresh.latest_event();
    let failures: Vec<u64> = own
        .failures_us
        .iter()
        .filter(|_| head.state != State::HalfOpen)
        .map(|&at| micros("failures_us", at, event))
        .collect::<Result<_, _>>()?;
    let (counted, opened_by) = split(head.state, failures);
    let leases = own
        .leases
        .iter()
        .map(|lease| {
            let until = micros("leases.until_us", lease.until_us, fresh.latest_lease())?;
            Ok(Lease {
                id: lease.id,
                until,
            })
        })
        .collect::<Result<_, _>>()?;
    let opened_at = own
        .opened_at_us
        .map_or(Ok(0), |at| micros("opened_at_us", at, event))?;
    let phase = match head.state {
        State::Open => own
            .retry_at_us
            .map(|at| opening_end(key, at, opened_at, fresh))
            .transpose()?,
        State::HalfOpen => own
            .half_open_since_us
            .map(|at| micros("half_open_since_us", at, event))
            .transpose()?,
        State::Closed => Some(0),
    };
    // Without them (written before SPEC §10), an opening lasted the open
    // duration, and a half-open epoch started when it ended.
    let phase = phase.unwrap_or(opened_at.saturating_add(fresh.open));
    let ramp = match (head.state, own.ramp_since_us, own.ramp_openings) {
        (State::Closed, Some(since), Some(openings)) => Some(Ramp {
            n: n_of(key, "ramp_openings", openings)?,
            since: micros("ramp_since_us", since, event)?,
        }),
        (State::Closed, Some(_), None) => {
            return Err(PayloadError::new(
                key,
                "ramp_since_us is set without ramp_openings",
            ));
        }
        _ => None,
    };
    let head = Head {
        n: match (head.state, own.openings) {
            (State::Closed, _) | (_, None) => 0,
            (_, Some(openings)) => n_of(key, "openings", openings)?,
        },
        ramping: ramp.is_some(),
        ..head
    };
    let window = match &own.rate {
        None => counted,
        Some(_) if head.state != State::Closed => Window::Rate(Buckets::default()),
        Some(rate) => Window::Rate(rate.read(key, fresh)?),
    };
    let reporters = if head.state == State::Closed {
        let width = match (fresh.width, &own.rate) {
            (0, Some(rate)) => rate.width(),
            (width, _) => width,
        };
        reporters::read(key, own.reporters.as_deref(), &window, width, fresh)?
    } else {
        Reporters::default()
    };
    Ok(Stored {
        generation: own.generation,
        epoch: own.epoch,
        head,
        opened_at,
        phase,
        window,
        reporters,
        leases,
        opened_by,
        foreign: own.foreign,
        ramp,
    })
}

/// When an opening at `opened_at` (nanoseconds) that a payload under
/// `key` says ends at `retry_at_us` ends, if that can be: not before it
/// began, and no later than the longest duration a configuration takes
/// after it.
fn opening_end(
    key: &str,
    retry_at_us: u64,
    opened_at: u64,
    fresh: Fresh,
) -> Result<u64, PayloadError> {
    let retry_at = checked(
        key,
        "retry_at_us",
        NANOS_PER_MICRO,
        retry_at_us,
        fresh.latest_retry(),
    )?;
    if retry_at < opened_at || retry_at - opened_at > nanos(MAX_DURATION) {
        return Err(PayloadError::new(
            key,
            format_args!(
                "retry_at_us holds {retry_at_us} us since the Unix epoch, {} the opening \
                 at {} us",
                if retry_at < opened_at {
                    "before"
                } else {
                    "longer than the longest duration after"
                },
                opened_at / NANOS_PER_MICRO
            ),
        ));
    }
    Ok(retry_at)
}

/// SPEC §10's n of an opening a payload under `key` says is the
/// `openings`-th in a row: refused when 0 (an opening counts itself) or
/// above `u32::MAX`.
fn n_of(key: &str, field: &str, openings: u64) -> Result<u32, PayloadError> {
    match u32::try_from(openings) {
        Ok(openings @ 1..) => Ok(openings - 1),
        _ => Err(PayloadError::new(
            key,
            format_args!("{field} is {openings}, not from 1 to {}", u32::MAX),
        )),
    }
}

fn head(state: State, epoch: u64, successes: u32, inflight: u32, n: u32) -> Head {
    #[allow(clippy::cast_possible_truncation)] // the head keeps the low bits
    let epoch = Epoch::new(epoch as u32);
    let head = match state {
        State::Closed => Head::closed(epoch),
        State::Open => Head::open(epoch, n),
        State::HalfOpen => Head::half_open(epoch, n),
    };
    Head {
        successes,
        inflight,
        ..head
    }
}

#[cfg(test)]
mod tests;
