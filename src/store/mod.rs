//! Shared stores (SPEC §8, feature `store`): one circuit under one key, for
//! every process that uses the key.
//!
//! A [`SharedFuse`] keeps its circuit in a [`Store`]: every admission and
//! verdict reads the payload under the circuit's key with the store's
//! time, runs the crate's rules on it, and, when they changed something,
//! writes the result back with a compare-and-set against the payload it
//! read (so two processes never both win a transition, never exceed the
//! probe limit together and never lose a counted failure). Under the
//! `rate` policy a closed success is an [`Increment`] the store applies
//! in its own atomic step instead (Redis, SQL and memory do), so that the
//! successes of a fleet never race each other's compare-and-set. Nothing is
//! written when nothing changed, and no lock is held across the protected
//! call. Probes carry a lease: a process that dies mid-probe frees its slot
//! when the lease ends.
//!
//! The payload is JSON that milon/fuse reads and writes too (its five
//! fields, plus this crate's under `fuse`), so a PHP service and a Rust one
//! can protect one dependency through one key.
//!
//! ```
//! use std::sync::Arc;
//! use fuse_breaker::store::{MemoryStore, SharedFuse};
//! use fuse_breaker::{Config, State};
//!
//! # futures::executor::block_on(async {
//! let store = Arc::new(MemoryStore::new());
//! let config = Config::builder().failure_threshold(2).build()?;
//! // Two processes' circuits for one dependency: one circuit.
//! let here = fuse_breaker::Fuse::builder("billing").store(store.clone()).config(config.clone()).build();
//! let there = fuse_breaker::Fuse::builder("billing").store(store).config(config).build();
//! here.try_acquire().await?.failure().await?;
//! there.try_acquire().await?.failure().await?;
//! assert_eq!(here.state().await?, State::Open);
//! assert!(there.try_acquire().await.is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

// The layers, each depending only on those listed before it (the cache
// and the circuit call each other: cached mode is a way of running one).
mod backend;
mod cache;
mod circuit;
pub(crate) mod model;
mod registry;
#[cfg(all(feature = "config-file", any(feature = "redis", feature = "sql")))]
mod settings;

pub use backend::changes::Changes;
pub use backend::counting::Counting;
pub use backend::error::{Error, Refusal, StoreError};
pub use backend::keys::KeyPage;
pub use backend::memory::MemoryStore;
pub use backend::open::{open, open_with, open_with_table};
pub use backend::options::StoreOptions;
#[cfg(feature = "redis")]
pub use backend::redis::{LaravelCache, RedisStore};
#[cfg(feature = "sql")]
pub use backend::sql::SqlStore;
pub use backend::{Incremented, Loaded, Store, Swap};
pub use circuit::builder::SharedFuseBuilder;
pub use circuit::conclusion::Conclusion;
pub use circuit::future::Admission;
pub use circuit::inspect::{Held, inspect, snapshot_of};
pub use circuit::permit::SharedPermit;
pub use circuit::shared::manual::ManualChange;
pub use circuit::shared::{Shared, SharedFuse};
pub use model::asked::THROTTLE_SUFFIX;
pub use model::codec::{Codec, Encoding};
pub use model::increment::Increment;
pub use model::payload::PayloadError;
pub use registry::{SharedRegistry, SharedRegistryBuilder};
