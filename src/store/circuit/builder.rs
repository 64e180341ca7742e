//! Building a shared circuit: [`FuseBuilder::store`] chooses a store as
//! the circuit's backing, and the store's options (lease, fallback, cached
//! mode) are set on the builder it returns.

use std::sync::Arc;
use std::time::Duration;

use crate::backing::Local;
use crate::builder::FuseBuilder;
use crate::events::{Events, Listeners};
use crate::fallback::Fallback;
use crate::fuse::Fuse;
use crate::store::Store;
use crate::store::cache::Cache;
use crate::store::cache::refresh::Reader;
use crate::store::circuit::health::Health;
use crate::store::circuit::live::Live;
use crate::store::circuit::shared::{Shared, SharedFuse, SharedOptions};
use crate::store::circuit::step::Turns;
use crate::store::circuit::throttle::FleetThrottle;

/// The builder of a shared circuit: [`FuseBuilder`] with a store chosen
/// ([`FuseBuilder::store`]).
pub type SharedFuseBuilder = FuseBuilder<Shared>;

impl FuseBuilder<Local> {
    /// Shares the circuit through `store` (feature `store`): its state
    /// lives under its key there, for every process that builds a circuit
    /// of that key (SPEC §8). What this builder was given (app,
    /// operation, configuration, clock) is kept; the clock and its
    /// options are those of the local circuit that decides under
    /// [`Fallback::Local`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::Fuse;
    /// use fuse_breaker::config::Fallback;
    /// use fuse_breaker::store::{MemoryStore};
    ///
    /// let fuse = Fuse::builder("billing")
    ///     .app("shop")
    ///     .operation("charge")
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .lease(Duration::from_secs(10))
    ///     .fallback(Fallback::Reject)
    ///     .build();
    /// assert_eq!(fuse.key(), "fuse:shop:billing:charge");
    /// ```
    pub fn store(self, store: Arc<dyn Store>) -> SharedFuseBuilder {
        self.backed(SharedOptions {
            store,
            lease: None,
            fallback: Fallback::default(),
            staleness: None,
        })
    }
}

impl FuseBuilder<Shared> {
    /// How long a probe holds its slot without a verdict before it counts
    /// as an ignore verdict (default: the
    /// [`probe_timeout`](crate::Config::probe_timeout) of the settings in
    /// force, SPEC §10, which follows a
    /// [`reconfigure`](crate::Fuse::reconfigure); a lease given here
    /// stays).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use fuse_breaker::Fuse;
    /// # use fuse_breaker::store::MemoryStore;
    /// let fuse = Fuse::builder("billing")
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .lease(Duration::from_secs(5))
    ///     .build();
    /// assert_eq!(fuse.lease(), Duration::from_secs(5));
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = Some(lease);
        self
    }

    /// What decides while the store does not answer (default
    /// [`Fallback::Local`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::Fuse;
    /// # use fuse_breaker::config::Fallback;
    /// # use fuse_breaker::store::{MemoryStore};
    /// let fuse = Fuse::builder("billing")
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .fallback(Fallback::Allow)
    ///     .build();
    /// assert_eq!(fuse.fallback(), Fallback::Allow);
    /// ```
    pub fn fallback(mut self, fallback: Fallback) -> Self {
        self.options.fallback = fallback;
        self
    }

    /// Cached mode: decide from this process's mirror of the circuit (the
    /// newest reading of the key, kept from every round trip) while it is
    /// younger than `staleness`. Then a closed circuit with no failures
    /// admits and takes successes with no round trip, and an open one
    /// rejects locally until its retry time; half-open admissions, probe
    /// verdicts and failures still go to the store. The difference from
    /// strict mode: a success the mirror showed nothing to clear for is
    /// not sent, so failures another process recorded less than
    /// `staleness` ago may survive it. Transitions are announced through
    /// stores that can ([`Store::changes`]: Redis pub/sub, the memory
    /// store), so another process's opening or closing replaces the
    /// mirror as soon as it arrives; through one that cannot, it is seen
    /// up to `staleness` late. The mirror is dropped when the store does
    /// not answer and when its channel of announcements drops. The common case (a quiet closed
    /// circuit) measures its age on the process's coarse clock, which
    /// ticks every millisecond: the bound holds to that tick (and to how
    /// late an overloaded machine runs the clock's thread).
    ///
    /// Under the `rate` policy a closed success changes the fleet's window:
    /// it is counted in a batch with no round trip and sent with the next
    /// step on the key (a failure or a slow call, which go at once, or the
    /// first admission after `staleness`), and, for a circuit built inside
    /// a tokio runtime with the `redis` or `sql` feature, by a task of the
    /// circuit's own once per `staleness` when no call comes
    /// ([`SharedFuse::unsent`] tells how many wait).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use fuse_breaker::Fuse;
    /// # use fuse_breaker::store::MemoryStore;
    /// let fuse = Fuse::builder("billing")
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .cached(Duration::from_millis(100))
    ///     .build();
    /// assert_eq!(fuse.staleness(), Some(Duration::from_millis(100)));
    /// ```
    pub fn cached(mut self, staleness: Duration) -> Self {
        self.options.staleness = Some(staleness);
        self
    }

    /// The shared circuit.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::Fuse;
    /// # use fuse_breaker::store::MemoryStore;
    /// let fuse = Fuse::builder("billing")
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .build();
    /// assert_eq!(fuse.name(), "billing");
    /// ```
    pub fn build(self) -> SharedFuse {
        let names = self.names();
        let config = self.config.clone().unwrap_or_default();
        let shared = self.listeners.clone();
        // Decides under `Fallback::Local`.
        let (local, options) = self.config(config.clone()).split::<Local>(());
        let local = local.build();
        let SharedOptions {
            store,
            lease,
            fallback,
            staleness,
        } = options;
        let listeners = Events {
            own: Listeners::default(),
            shared,
        };
        // The sinks of the features, ahead of any listener the user adds:
        // the local circuit's, so that its key has one set of series.
        crate::sinks::install_beside(&listeners.own, local.sinks(), store.name());
        // Read by the circuit, its mirror and its tasks at each use: a
        // reconfiguration reaches them all (SPEC §12).
        let throttles = config.throttle_k().is_some();
        let live = Arc::new(Live::new(config, lease));
        let cache = staleness.map(|staleness| {
            let reader = Reader::here(store.clone(), live.clone());
            let cache = Arc::new(Cache::new(names.key(), live.clone(), staleness, reader));
            if let Some(changes) = store.changes() {
                changes.watch(names.key(), &cache);
            }
            #[cfg(any(feature = "redis", feature = "sql"))]
            crate::store::cache::flush::Flush {
                store: store.clone(),
                key: names.key().to_owned(),
                live: live.clone(),
            }
            .start(&cache);
            cache
        });
        let throttle = throttles.then(|| {
            let throttle = Arc::new(FleetThrottle::default());
            throttle.start(store.clone(), names.key(), live.clone());
            throttle
        });
        Fuse {
            backing: Shared {
                names,
                live,
                store,
                fallback,
                local,
                listeners,
                health: Health::default(),
                turns: Turns::new(),
                cache,
                throttle,
                // A number a store's increment holds exactly (Redis's Lua
                // numbers are doubles), never the anonymous 0.
                reporter: crate::random::next() % crate::store::Increment::MAX + 1,
            },
        }
    }
}
