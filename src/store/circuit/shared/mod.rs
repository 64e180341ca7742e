//! [`SharedFuse`]: a circuit whose state lives in a [`Store`], what it is
//! made of and what it tells of itself. Its `impl` goes on in the modules
//! below, one job each: admission (`acquire`), verdicts (`conclude`), an
//! operator's changes (`manual`), what it reports (`report`) and running a
//! call (`run`). What it uses is beside it in `circuit`: the step over the
//! store (`step`), the store's health (`health`), its permits and futures,
//! and its builder (`builder`).

mod acquire;
mod conclude;
pub(crate) mod manual;
mod reconfigure;
mod report;
mod run;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::backing::Backing;
use crate::backing::sealed::Sealed;
use crate::config::{Config, ConfigError};
use crate::events::{Events, Listener};
use crate::fallback::Fallback;
use crate::fuse::Fuse;
use crate::names::Names;
use crate::snapshot::{Snapshot, State};
use crate::store::backend::error::StoreError;
use crate::store::cache::Cache;
use crate::store::cache::mirror::Mirror;
use crate::store::circuit::health::Health;
use crate::store::circuit::live::{Live, Reading};
use crate::store::circuit::step::{InStore, Turns};
use crate::store::circuit::throttle::FleetThrottle;
use crate::store::model::payload;
use crate::store::model::stored::{Stored, Ticket};
use crate::store::{Loaded, Store};

/// A circuit shared through a [`Store`] by every process that uses its
/// key: the surface of [`Fuse`], asynchronous (see the [module
/// docs](crate::store)).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
///
/// # futures::executor::block_on(async {
/// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
/// let charged = fuse.run_async(async { Ok::<_, std::io::Error>("charged") }).await;
/// assert_eq!(charged.ok(), Some("charged"));
/// # });
/// ```
pub type SharedFuse = Fuse<Shared>;

/// The [`Backing`] of a circuit shared through a [`Store`]: the key in the
/// store, this process's turn on it, the store's health, the fallback and,
/// in cached mode, the mirror. Chosen by
/// [`FuseBuilder::store`](crate::FuseBuilder::store).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::Fuse;
/// use fuse_breaker::store::{MemoryStore, Shared};
///
/// let fuse: Fuse<Shared> = Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
/// assert_eq!(fuse.key(), "fuse:billing");
/// ```
///
/// A shared circuit decides with a round trip, so it has no synchronous
/// admission: `run` (and `run_with`, `try_acquire_owned`) are the local
/// circuit's alone, and the types refuse them.
///
/// ```compile_fail
/// use std::sync::Arc;
/// use fuse_breaker::Fuse;
/// use fuse_breaker::store::MemoryStore;
///
/// let fuse = Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
/// let _ = fuse.run(|| Ok::<_, std::io::Error>(()));
/// ```
pub struct Shared {
    pub(in crate::store) names: Names,
    /// This process's settings of the circuit, and the probes' lease its
    /// builder was given; its mirror and tasks read them too.
    pub(in crate::store) live: Arc<Live>,
    pub(in crate::store) store: Arc<dyn Store>,
    pub(in crate::store) fallback: Fallback,
    /// Decides under [`Fallback::Local`] while the store does not answer.
    pub(in crate::store) local: Fuse,
    pub(in crate::store) listeners: Events,
    pub(in crate::store) health: Health,
    /// This process's write turn on the key.
    pub(in crate::store) turns: Turns,
    /// Cached mode: the mirror of the key and its quiet permit.
    pub(in crate::store) cache: Option<Arc<Cache>>,
    /// With `throttle_k`: this process's part of the fleet's throttle.
    pub(in crate::store) throttle: Option<Arc<FleetThrottle>>,
    /// The random id this handle reports its failures under (SPEC §8's
    /// quorum; never 0, the anonymous reporter's; at most
    /// [`Increment::MAX`](crate::store::Increment::MAX)).
    pub(in crate::store) reporter: u64,
}

/// What a shared circuit is built with besides what every circuit is:
/// its store, lease, fallback and mode.
#[derive(Clone)]
pub struct SharedOptions {
    pub(in crate::store) store: Arc<dyn Store>,
    pub(in crate::store) lease: Option<Duration>,
    pub(in crate::store) fallback: Fallback,
    pub(in crate::store) staleness: Option<Duration>,
}

impl fmt::Debug for SharedOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedOptions")
            .field("store", &self.store.name())
            .field("lease", &self.lease)
            .field("fallback", &self.fallback)
            .field("staleness", &self.staleness)
            .finish()
    }
}

impl Backing for Shared {}

impl Sealed for Shared {
    type Options = SharedOptions;

    fn names(&self) -> &Names {
        &self.names
    }

    fn config(&self) -> &Config {
        self.live.get()
    }

    fn listen(&self, listener: Arc<dyn Listener>) {
        self.listeners.own.add(&listener);
        self.local.on_transition(listener);
    }

    // What this process holds of a shared circuit is its local fallback
    // (and its mirror, which the next handle reads again): the registry's
    // marks, times and quiet are the fallback's.
    fn now(&self) -> u64 {
        self.local.now()
    }

    fn mark(&self) {
        self.local.mark();
    }

    fn take_mark(&self) -> bool {
        self.local.take_mark()
    }

    fn quiet(&self) -> bool {
        self.local.quiet()
    }

    fn publish(&self) {
        // The counts, which the local circuit's sinks keep for both; the
        // window and the state are the store's (a transition this process
        // makes or hears sets the state).
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        self.local.sinks().publish_counts(self.local.time());
    }

    fn takes_in_place(&self, config: &Config) -> Result<(), ConfigError> {
        Shared::takes_in_place(self, config)
    }

    fn reconfigure(&self, config: Config, by: &str) -> Result<(), ConfigError> {
        self.reconfigure_by(config, by)
    }

    fn fallback(options: &SharedOptions) -> Option<Fallback> {
        Some(options.fallback)
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("store", &self.store.name())
            .field("fallback", &self.fallback)
            .field("store_reachable", &self.health.reachable())
            .finish_non_exhaustive()
    }
}

impl SharedFuse {
    /// The random id this circuit's failures are reported under in the
    /// store (SPEC §8's quorum, `min_reporters`): each `SharedFuse` is one
    /// reporter, so a process builds one per key. From 1 to
    /// [`Increment::MAX`](crate::store::Increment::MAX), a number every store's
    /// increment holds exactly.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let store = Arc::new(MemoryStore::new());
    /// let one = fuse_breaker::Fuse::builder("billing").store(store.clone()).build();
    /// let other = fuse_breaker::Fuse::builder("billing").store(store).build();
    /// assert_ne!(one.reporter(), other.reporter());
    /// assert_ne!(one.reporter(), 0);
    /// assert!(one.reporter() <= fuse_breaker::store::Increment::MAX);
    /// ```
    pub fn reporter(&self) -> u64 {
        self.backing.reporter
    }

    /// How long a probe holds its slot without a verdict: the builder's
    /// [`lease`](crate::store::SharedFuseBuilder::lease), or the
    /// settings' [`probe_timeout`](Config::probe_timeout) in force.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.lease(), fuse.config().open_duration());
    /// ```
    pub fn lease(&self) -> Duration {
        self.backing.live.lease(self.config())
    }

    /// The staleness bound of cached mode (`None`: strict mode, every
    /// decision from the store).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.staleness(), None);
    /// ```
    pub fn staleness(&self) -> Option<Duration> {
        self.backing.cache.as_ref().map(|cache| cache.staleness())
    }

    /// Under the `rate` policy in cached mode: the closed successes this
    /// process has counted and not sent to the store yet (they go with its
    /// next round trip on the key: a failure, a slow call, or the first
    /// admission after `staleness`, or with the step a task of the
    /// circuit's makes once per `staleness`), including those a step is
    /// carrying now. When it reaches 0, every success counted before has
    /// been sent, or lost with a step the store did not answer: a process
    /// that waits for it before it exits leaves none behind. Always 0 in
    /// strict mode, where every verdict is recorded in the store before it
    /// returns.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::{Config, config::Policy};
    ///
    /// # futures::executor::block_on(async {
    /// let config = Config::builder().policy(Policy::Rate).build()?;
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new()))
    ///     .config(config)
    ///     .cached(Duration::from_secs(60))
    ///     .build();
    /// fuse.try_acquire().await?.success().await?; // the admission read the key
    /// fuse.try_acquire().await?.success().await?; // no round trip at all
    /// assert_eq!(fuse.unsent(), 2);
    /// fuse.try_acquire().await?.failure().await?; // sent at once, with the batch
    /// assert_eq!(fuse.unsent(), 0);
    /// let snapshot = fuse.snapshot().await?;
    /// assert_eq!((snapshot.calls, snapshot.failed), (3, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn unsent(&self) -> u64 {
        self.backing
            .cache
            .as_ref()
            .map_or(0, |cache| cache.batched())
    }

    /// In cached mode, how many closed successes this process counted and
    /// lost with a step the store did not answer (in time): the store may
    /// or may not have written them, and they are not sent again (so none
    /// is counted twice). 0 in strict mode.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use fuse_breaker::store::MemoryStore;
    ///
    /// let fuse = fuse_breaker::Fuse::builder("billing")
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .cached(Duration::from_secs(60))
    ///     .build();
    /// assert_eq!(fuse.lost(), 0);
    /// ```
    pub fn lost(&self) -> u64 {
        self.backing.cache.as_ref().map_or(0, |cache| cache.lost())
    }

    /// The share of closed calls this process's throttle sheds now (SPEC
    /// §11): the formula on the fleet's `requests` and `accepts`, as this
    /// process last read them (at most a bucket of the policy window ago);
    /// 0 without `throttle_k`, before the first reading, and while the
    /// store does not answer. Every process of a fleet sheds the same
    /// share; the snapshot's `admission` is the store's view of it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::MemoryStore;
    ///
    /// # futures::executor::block_on(async {
    /// let config = fuse_breaker::Config::builder().throttle_k(2.0).build()?;
    /// let fuse = fuse_breaker::Fuse::builder("billing")
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .config(config)
    ///     .build();
    /// assert_eq!(fuse.throttling(), 0.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn throttling(&self) -> f64 {
        self.throttle()
            .and_then(FleetThrottle::share)
            .map_or(0.0, |share| share.shed.probability())
    }

    /// What decides while the store does not answer.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::config::Fallback;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.fallback(), Fallback::Local);
    /// ```
    pub fn fallback(&self) -> Fallback {
        self.backing.fallback
    }

    /// The store.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.store().name(), "memory");
    /// ```
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.backing.store
    }

    /// The in-process circuit that decides under [`Fallback::Local`] while
    /// the store does not answer.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.local().key(), fuse.key());
    /// ```
    pub fn local(&self) -> &Fuse {
        &self.backing.local
    }

    /// Whether the store answered the last round trip (`false` while the
    /// fallback decides).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert!(fuse.store_reachable());
    /// ```
    pub fn store_reachable(&self) -> bool {
        self.backing.health.reachable()
    }

    /// The circuit's state in the store.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.state().await?, fuse_breaker::State::Closed);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn state(&self) -> Result<State, StoreError> {
        let loaded = self.backing.store.load(self.key()).await?;
        Ok(self.read(&loaded)?.state())
    }

    /// The circuit's snapshot in the store; times are since the Unix epoch
    /// on the store's clock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// assert!(fuse.snapshot().await?.failures.is_empty());
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        Ok(self.snapshot_now().await?.0)
    }

    /// The snapshot, what the payload holds besides (for an operator's
    /// view) and the store's time it was read at (since the Unix epoch).
    pub(crate) async fn snapshot_now(
        &self,
    ) -> Result<(Snapshot, crate::store::Held, Duration), StoreError> {
        let config = self.settings();
        let loaded = self.backing.store.load(self.key()).await?;
        let now = payload::store_time(loaded.now);
        let stored = self.in_store(config).read(&loaded)?;
        let mut snapshot = stored.snapshot(config, now);
        crate::store::circuit::inspect::throttled(
            &*self.backing.store,
            self.key(),
            config,
            &stored,
            &mut snapshot,
        )
        .await?;
        Ok((
            snapshot,
            crate::store::Held::of(&stored),
            Duration::from_nanos(now),
        ))
    }

    /// The settings in force, as a decision reads them once when it
    /// arrives (SPEC §12).
    #[inline]
    pub(in crate::store) fn settings(&self) -> &'static Config {
        self.backing.live.get()
    }

    /// The circuit's key in its store, for a step under `config`.
    pub(in crate::store) fn in_store(&self, config: &Config) -> InStore<'_> {
        let reading = Reading::of(&self.backing.live, config);
        InStore {
            store: &*self.backing.store,
            key: self.key(),
            lease: reading.lease,
            ttl: reading.ttl,
            width: reading.width,
            open: reading.open,
            turns: &self.backing.turns,
        }
    }

    /// The circuit in `loaded`, read from its key.
    pub(in crate::store) fn read(&self, loaded: &Loaded) -> Result<Stored, StoreError> {
        self.in_store(self.settings()).read(loaded)
    }

    /// In cached mode, what the mirror decides by itself (`None`: ask the
    /// store).
    pub(in crate::store) fn by_mirror<T>(
        &self,
        decide: impl FnOnce(&Mirror, Duration) -> Option<T>,
    ) -> Option<T> {
        self.backing.cache.as_ref()?.decide(decide)
    }

    /// Keeps what a round trip found, `stored` (read or written at the
    /// store's `now`): in cached mode as the mirror, unless a newer
    /// reading is there already; in the counting sinks, its state when
    /// they show another.
    pub(in crate::store) fn remember(&self, stored: &Stored, now: u64) {
        if let Some(cache) = &self.backing.cache {
            cache.remember(stored, now);
        }
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        self.local().sinks().shown(stored.state(), || {
            stored.snapshot(self.settings(), now).open_for
        });
    }

    /// The closed permit of a quiet mirror still fresh.
    #[inline]
    pub(in crate::store) fn quiet_ticket(&self) -> Option<Ticket> {
        if self.throttle().is_some_and(FleetThrottle::shedding) {
            return None;
        }
        self.backing.cache.as_ref()?.quiet_ticket()
    }

    /// With `throttle_k`: this process's part of the fleet's throttle.
    #[inline]
    pub(in crate::store) fn throttle(&self) -> Option<&FleetThrottle> {
        self.backing.throttle.as_deref()
    }
}
