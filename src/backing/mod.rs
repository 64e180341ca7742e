//! What a [`Fuse`](crate::Fuse)'s state lives in: its [`Backing`]. [`Local`], this
//! process's atomics, is the default; a store's,
//! `store::Shared`, is the other (feature `store`). What
//! every circuit has whatever its backing (its names, configuration and
//! listeners) is written here once.

use std::sync::Arc;

use crate::config::Config;
use crate::events::Listener;

mod local;

pub use local::Local;

/// What a circuit's state lives in, chosen on its builder: [`Local`] (the
/// default, `Fuse::builder(name).build()`) or a store's
/// `store::Shared` (`Fuse::builder(name).store(store)`,
/// feature `store`). What a backing can do is said by the methods of
/// `Fuse<B>` for it: a local circuit admits synchronously
/// ([`Fuse::try_acquire`](crate::Fuse::try_acquire)); a shared one asks its store, asynchronously.
///
/// Sealed: the crate's two backings are the only ones.
///
/// ```
/// use fuse_breaker::Fuse;
/// use fuse_breaker::backing::Backing;
///
/// fn key_of<B: Backing>(fuse: &Fuse<B>) -> &str {
///     fuse.key()
/// }
/// assert_eq!(key_of(&Fuse::new("billing", Default::default())), "fuse:billing");
/// ```
pub trait Backing: sealed::Sealed {}

pub(crate) mod sealed {
    use super::{Arc, Config, Listener};
    use crate::config::ConfigError;
    use crate::names::Names;

    /// What every backing tells of its circuit.
    pub trait Sealed: std::fmt::Debug + Send + Sync + Sized + 'static {
        /// What the circuit's builder holds for this backing besides the
        /// names, configuration and local options.
        type Options: std::fmt::Debug + Clone + Send + Sync;
        fn names(&self) -> &Names;
        fn config(&self) -> &Config;
        fn listen(&self, listener: Arc<dyn Listener>);
        /// The circuit's time now on its local clock, in nanoseconds (a
        /// registry's idle times).
        fn now(&self) -> u64;
        /// Notes a registry lookup.
        fn mark(&self);
        /// Whether a lookup was noted since the last take.
        fn take_mark(&self) -> bool;
        /// Whether retiring the circuit from a registry loses nothing: what
        /// this process holds of it is closed with an empty window.
        fn quiet(&self) -> bool;
        /// Publishes what the circuit keeps to itself to the sinks of the
        /// `metrics` and `opentelemetry` features (a registry's listing).
        fn publish(&self);
        /// `Ok` if the circuit can take `config` in place (SPEC §12);
        /// otherwise the first setting that cannot change.
        fn takes_in_place(&self, config: &Config) -> Result<(), ConfigError>;
        /// Puts `config` in force while the circuit runs (SPEC §12), the
        /// event naming `by` as who asked; refused whole, naming the
        /// setting, when the circuit cannot take it in place.
        fn reconfigure(&self, config: Config, by: &str) -> Result<(), ConfigError>;
        /// What decides while the store does not answer, for circuits
        /// built with `options` that share their state through a store;
        /// `None` for those that keep it in this process.
        fn fallback(options: &Self::Options) -> Option<crate::fallback::Fallback>;
    }
}
