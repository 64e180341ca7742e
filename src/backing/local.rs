//! [`Local`]: the default backing, the circuit's state in this process's
//! atomics.

use std::fmt;
use std::sync::Arc;

use super::Backing;
use super::sealed::Sealed;
use crate::config::{Config, ConfigError};
use crate::engine::Engine;
use crate::events::Listener;
use crate::slot::{Occupant, Slot};
use crate::snapshot::State;

/// The default [`Backing`]: the circuit's state in this process's atomics,
/// decided without a lock or a round trip.
///
/// ```
/// use fuse_breaker::{Fuse, backing::Local};
/// let fuse: Fuse<Local> = Fuse::builder("billing").build();
/// assert!(fuse.try_acquire().is_ok());
/// ```
pub struct Local {
    /// The circuit's atomics, in memory its permits may outlive it in.
    pub(crate) slot: &'static Slot,
    /// Everything else the engine reads.
    pub(crate) occupant: Arc<Occupant>,
    /// Set by a registry's lookups, taken by its sweeps.
    pub(crate) used: crate::sync::UseMark,
}

impl Local {
    /// The backing of a circuit that has just occupied `slot`.
    pub(crate) fn new(slot: &'static Slot, occupant: Arc<Occupant>) -> Self {
        Local {
            slot,
            occupant,
            used: crate::sync::UseMark::default(),
        }
    }
}

impl Drop for Local {
    /// Frees the circuit's slot for a later circuit; permits still out
    /// become stale.
    fn drop(&mut self) {
        Engine::new(self.slot, &self.occupant).retire();
        self.slot.vacate();
    }
}

impl Backing for Local {}

impl Sealed for Local {
    type Options = ();

    fn names(&self) -> &crate::names::Names {
        self.occupant.names()
    }

    fn config(&self) -> &Config {
        Engine::new(self.slot, &self.occupant).config()
    }

    fn listen(&self, listener: Arc<dyn Listener>) {
        self.occupant.events().own.add(&listener);
    }

    fn now(&self) -> u64 {
        self.occupant.time().now()
    }

    #[inline]
    fn mark(&self) {
        self.used.set();
    }

    fn take_mark(&self) -> bool {
        self.used.take()
    }

    fn quiet(&self) -> bool {
        let snapshot = Engine::new(self.slot, &self.occupant).snapshot();
        snapshot.state == State::Closed && snapshot.failures.is_empty() && snapshot.calls == 0
    }

    fn takes_in_place(&self, config: &Config) -> Result<(), ConfigError> {
        Local::takes_in_place(self, config)
    }

    fn reconfigure(&self, config: Config, by: &str) -> Result<(), ConfigError> {
        self.reconfigure_by(config, by)
    }

    fn fallback((): &()) -> Option<crate::fallback::Fallback> {
        None
    }

    fn publish(&self) {
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        {
            let engine = Engine::new(self.slot, &self.occupant);
            self.occupant.sinks().publish(
                || engine.snapshot(),
                engine.config(),
                self.occupant.time(),
            );
        }
    }
}

impl fmt::Debug for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Local")
            .field("state", &Engine::new(self.slot, &self.occupant).state())
            .field("coarse_clock", &self.occupant.time().is_coarse())
            .finish_non_exhaustive()
    }
}
