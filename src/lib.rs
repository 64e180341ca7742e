//! # Fuse: a lock-free circuit breaker
//!
//! A circuit protects one dependency. When counted failures inside a time
//! window reach a threshold, the circuit opens and calls are rejected
//! without running; after a cooldown the next call probes; enough
//! successful probes close it, one counted failure re-opens it.
//!
//! The engine is lock-free: each circuit is one packed atomic state word, an
//! epoch-stamped record of when it opened and a ring of stamped failure
//! times. A closed circuit without failures admits a call and records its
//! success with atomic loads only, so any number of cores share it without
//! writing a cache line. Every verdict carries the epoch of its permit, and
//! a verdict from a past epoch changes nothing.
//!
//! ```
//! use std::time::Duration;
//! use fuse_breaker::{Config, Error, Fuse, State};
//!
//! let config = Config::builder()
//!     .failure_threshold(3)
//!     .open_duration(Duration::from_secs(10))
//!     .build()?;
//! let fuse = Fuse::builder("billing").operation("charge").config(config).build();
//!
//! let down = || Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
//! for _ in 0..3 {
//!     assert!(matches!(fuse.run(down), Err(Error::Inner(_))));
//! }
//! assert_eq!(fuse.state(), State::Open);
//! match fuse.run(down) {
//!     Err(Error::Open(open)) => assert!(open.retry_after() <= Duration::from_secs(10)),
//!     other => panic!("expected a rejection, got {other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## States
//!
//! ```text
//!                 counted failures in the window reach the threshold
//!   +--------+ ----------------------------------------------------> +------+
//!   | Closed |                                                       | Open |
//!   +--------+ <--+                                          +-----> +------+
//!                 | half_open_probes successes               |          |
//!                 |                                          |          | first call after
//!             +----------+    one counted failure            |          | open_duration
//!             | HalfOpen | ----------------------------------+          |
//!             +----------+ <--------------------------------------------+
//! ```
//!
//! The exact rules are those of the crate's specification: admission,
//! verdicts, stale verdicts dropped by epoch, classification of errors
//! ([`Classify`](classify::Classify)), manual control ([`Fuse::force_open`],
//! [`Fuse::force_closed`], [`Fuse::reset`]).
//!
//! Circuits read time from a [`quanta::Clock`] ([`FuseBuilder::clock`],
//! [`RegistryBuilder::clock`]; `quanta::Clock::mock()` drives one by hand in
//! tests). The crate re-exports the `quanta` it is built with as
//! [`fuse_breaker::quanta`](crate::quanta), so that a program need not
//! depend on a matching version itself: a clock type of the crate's own
//! would only wrap quanta's (which already has the mock, the coarse
//! reading and the calibrated TSC), and a quanta major version the crate
//! moves to is a breaking change of the crate, said in its changelog.

#![cfg_attr(docsrs, feature(doc_cfg))]

/// The clock crate circuits read time from, as this crate is built with
/// (see the crate documentation).
///
/// ```
/// let (clock, mock) = fuse_breaker::quanta::Clock::mock();
/// let fuse = fuse_breaker::Fuse::builder("billing").clock(clock).build();
/// mock.increment(std::time::Duration::from_secs(1));
/// fuse.force_open();
/// assert_eq!(fuse.snapshot().opened_at, Some(std::time::Duration::from_secs(1)));
/// ```
pub use quanta;

#[cfg(feature = "admin")]
pub mod admin;
pub mod backing;
mod builder;
mod choice;
pub mod classify;
mod clock;
mod conclude;
pub mod config;
mod engine;
mod epoch;
mod error;
pub mod events;
mod factor;
mod fallback;
mod fuse;
#[cfg(fuzzing)]
pub mod fuzz;
#[cfg(all(test, not(fuzzing)))]
mod fuzz;
mod grade;
#[cfg(any(feature = "tower", feature = "reqwest"))]
mod hint;
#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
mod lanes;
mod limits;
mod model;
mod names;
#[cfg(any(test, fuzzing))]
mod oracle;
#[cfg(feature = "opentelemetry")]
mod otel;
mod packed;
mod payload_kind;
mod permit;
#[cfg(feature = "persist")]
pub mod persist;
mod policy;
mod random;
mod reconfigure;
mod recovery;
pub mod redact;
#[cfg(any(test, fuzzing))]
mod reference;
mod registry;
#[cfg(feature = "reqwest")]
pub mod reqwest;
#[cfg(any(test, fuzzing, fuse_loom))]
mod rewind;
mod ring;
mod run;
mod saved;
#[cfg(feature = "config-file")]
pub mod settings;
mod sinks;
mod slot;
mod snapshot;
#[cfg(feature = "store")]
pub mod store;
mod sync;
#[cfg(fuse_loom)]
#[doc(hidden)]
pub use sync::LoomWords4;
#[cfg(feature = "metrics")]
mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "tower")]
pub mod tower;
#[cfg(feature = "tracing")]
mod trace;
mod transition;
#[cfg(any(feature = "config-file", feature = "admin"))]
#[cfg_attr(
    not(feature = "config-file"),
    expect(
        dead_code,
        reason = "the admin API reads values from text, never from a file"
    )
)]
mod value;
mod verdict;

pub use builder::FuseBuilder;
pub use config::overrides::Config;
pub use error::{Error, OpenError};
pub use fuse::Fuse;
pub use names::key;
pub use permit::{OwnedPermit, Permit};
pub use registry::{Registry, RegistryBuilder};
pub use saved::{SavedCircuit, SavedWindow};
pub use snapshot::{Grading, Snapshot, State};
#[cfg(feature = "metrics")]
pub use telemetry::MetricNames;
pub use verdict::Verdict;
