//! [`SharedFuse`]: a circuit whose state lives in a [`Store`], and its
//! builder.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::cache::Cache;
use super::error::{Error, Refusal, StoreError};
use super::future::{Admission, Conclusion};
use super::mirror::Mirror;
use super::payload::{self, Fresh, PayloadError};
use super::permit::{Held, SharedPermit};
use super::random;
use super::stored::{At, Entry, Stored};
use super::{Loaded, Store, Swap};
use crate::classify::Classify;
use crate::config::Config;
use crate::error::OpenError;
use crate::events::{Listener, Listeners};
use crate::fallback::Fallback;
use crate::fuse::Fuse;
use crate::model;
use crate::names::Names;
use crate::snapshot::{Snapshot, State};
use crate::transition::{Reason, Transition};
use crate::verdict::Verdict;

/// How many compare-and-sets one step may lose to other writers before it
/// gives up (each loss returns the key's new payload, so a retry costs one
/// round trip). The writers of one process take turns (see
/// [`SharedFuse::step`]), so only other processes make a step lose.
const MAX_CONFLICTS: u32 = 256;

/// The first wait before a store that failed is tried again; it doubles
/// with each failure in a row, up to [`MAX_BACKOFF`] (so a store that
/// answers again is used within about two of them: the first try may meet
/// a connection still being remade).
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// A circuit shared through a [`Store`] by every process that uses its
/// key: the surface of [`Fuse`], asynchronous (see the [module
/// docs](super)).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
///
/// # futures::executor::block_on(async {
/// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
/// let charged = fuse.run_async(async { Ok::<_, std::io::Error>("charged") }).await;
/// assert_eq!(charged.ok(), Some("charged"));
/// # });
/// ```
pub struct SharedFuse {
    names: Names,
    config: Config,
    store: Arc<dyn Store>,
    lease: Duration,
    ttl: Duration,
    fallback: Fallback,
    /// Decides under [`Fallback::Local`] while the store does not answer.
    local: Fuse,
    pub(super) listeners: Listeners,
    health: Mutex<Health>,
    /// Held by the step of this process that is writing the key: its
    /// writers take turns rather than race each other's compare-and-sets.
    /// The payload the last of them wrote, and the store's time it was
    /// decided at.
    pub(super) writing: tokio::sync::Mutex<Option<Loaded>>,
    /// How many writes this process's steps made on the key (a hint, read
    /// before a step reads the key; the compare-and-set decides).
    pub(super) writes: crate::sync::Tally,
    /// Cached mode: the mirror of the key and its quiet permit.
    pub(super) cache: Option<Arc<Cache>>,
    /// Set while the store is thought down (the details in `health`).
    down: crate::sync::Hint,
    /// How many failed round trips this circuit has seen: a round trip
    /// that began before the last of them cannot end the outage.
    outages: crate::sync::Tally,
}

/// Whether the store answered last time, and when to try it again.
#[derive(Debug, Default)]
struct Health {
    down: Option<Down>,
}

#[derive(Debug)]
struct Down {
    error: StoreError,
    retry_at: Instant,
    backoff: Duration,
    /// The count of failed round trips with this one (see
    /// `SharedFuse::outages`).
    seen: u64,
}

/// Builds a [`SharedFuse`]: its key's parts, configuration, lease and
/// fallback.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use fuse_breaker::store::{Fallback, MemoryStore, SharedFuse};
///
/// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
///     .app("shop")
///     .operation("charge")
///     .lease(Duration::from_secs(10))
///     .fallback(Fallback::Reject)
///     .build();
/// assert_eq!(fuse.key(), "fuse:shop:billing:charge");
/// ```
#[must_use]
pub struct SharedFuseBuilder {
    name: String,
    app: Option<String>,
    operation: Option<String>,
    config: Config,
    store: Arc<dyn Store>,
    lease: Option<Duration>,
    fallback: Fallback,
    staleness: Option<Duration>,
}

impl fmt::Debug for SharedFuseBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuseBuilder")
            .field("name", &self.name)
            .field("store", &self.store.name())
            .finish_non_exhaustive()
    }
}

impl SharedFuseBuilder {
    /// The app segment of the key.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).app("shop").build();
    /// assert_eq!(fuse.key(), "fuse:shop:billing");
    /// ```
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// The operation segment of the key.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).operation("refund").build();
    /// assert_eq!(fuse.key(), "fuse:billing:refund");
    /// ```
    pub fn operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// The configuration (every process sharing the key should use the
    /// same one).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let config = fuse_breaker::Config::builder().failure_threshold(3).build()?;
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).config(config).build();
    /// assert_eq!(fuse.config().failure_threshold(), 3);
    /// # Ok::<(), fuse_breaker::ConfigError>(())
    /// ```
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// How long a probe holds its slot without a verdict before it counts
    /// as an ignore verdict (default: the open duration).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
    ///     .lease(Duration::from_secs(5))
    ///     .build();
    /// assert_eq!(fuse.lease(), Duration::from_secs(5));
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// What decides while the store does not answer (default
    /// [`Fallback::Local`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{Fallback, MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
    ///     .fallback(Fallback::Allow)
    ///     .build();
    /// assert_eq!(fuse.fallback(), Fallback::Allow);
    /// ```
    pub fn fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = fallback;
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
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
    ///     .cached(Duration::from_millis(100))
    ///     .build();
    /// assert_eq!(fuse.staleness(), Some(Duration::from_millis(100)));
    /// ```
    pub fn cached(mut self, staleness: Duration) -> Self {
        self.staleness = Some(staleness);
        self
    }

    /// The shared circuit.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.name(), "billing");
    /// ```
    pub fn build(self) -> SharedFuse {
        let prefix = self.config.key_prefix().to_owned();
        let names = Names::new(
            &prefix,
            self.app.as_deref(),
            &self.name,
            self.operation.as_deref(),
        );
        let mut local = Fuse::builder(&self.name).config(self.config.clone());
        if let Some(app) = &self.app {
            local = local.app(app);
        }
        if let Some(operation) = &self.operation {
            local = local.operation(operation);
        }
        let ttl = 2 * self
            .config
            .failure_window()
            .max(self.config.open_duration());
        let listeners = Listeners::default();
        // The sinks of the features, ahead of any listener the user adds.
        #[cfg(feature = "tracing")]
        listeners.add(&(Arc::new(crate::trace::TraceSink) as Arc<dyn Listener>));
        #[cfg(feature = "metrics")]
        listeners
            .add(&(Arc::new(crate::telemetry::Telemetry::new(names.key())) as Arc<dyn Listener>));
        let lease = self.lease.unwrap_or(self.config.open_duration());
        let cache = self.staleness.map(|staleness| {
            let cache = Arc::new(Cache::new(names.key(), &self.config, lease, staleness));
            if let Some(changes) = self.store.changes() {
                changes.watch(names.key(), &cache);
            }
            cache
        });
        SharedFuse {
            names,
            lease,
            ttl,
            config: self.config,
            store: self.store,
            fallback: self.fallback,
            local: local.build(),
            listeners,
            health: Mutex::default(),
            writing: tokio::sync::Mutex::new(None),
            writes: crate::sync::Tally::new(),
            cache,
            down: crate::sync::Hint::default(),
            outages: crate::sync::Tally::new(),
        }
    }
}

/// Whether `after` is another circuit than `before`: a transition (a new
/// epoch) or a reset (a new generation).
fn moved(before: &Stored, after: &Stored) -> bool {
    before.epoch != after.epoch || before.generation != after.generation
}

fn nanos(time: Duration) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

impl SharedFuse {
    /// A builder for the circuit `name` in `store`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.key(), "fuse:billing");
    /// ```
    pub fn builder(name: impl Into<String>, store: Arc<dyn Store>) -> SharedFuseBuilder {
        SharedFuseBuilder {
            name: name.into(),
            app: None,
            operation: None,
            config: Config::default(),
            store,
            lease: None,
            fallback: Fallback::default(),
            staleness: None,
        }
    }

    /// The circuit's key in the store.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.key(), "fuse:billing");
    /// ```
    pub fn key(&self) -> &str {
        self.names.key()
    }

    /// The circuit's name.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.name(), "billing");
    /// ```
    pub fn name(&self) -> &str {
        self.names.name()
    }

    /// The circuit's operation, if any.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new()))
    ///     .operation("charge")
    ///     .build();
    /// assert_eq!(fuse.operation(), Some("charge"));
    /// ```
    pub fn operation(&self) -> Option<&str> {
        self.names.operation()
    }

    /// The configuration.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.config().failure_threshold(), 8);
    /// ```
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How long a probe holds its slot without a verdict.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.lease(), fuse.config().open_duration());
    /// ```
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The staleness bound of cached mode (`None`: strict mode, every
    /// decision from the store).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.staleness(), None);
    /// ```
    pub fn staleness(&self) -> Option<Duration> {
        self.cache.as_ref().map(|cache| cache.staleness())
    }

    /// What decides while the store does not answer.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{Fallback, MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.fallback(), Fallback::Local);
    /// ```
    pub fn fallback(&self) -> Fallback {
        self.fallback
    }

    /// The store.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.store().name(), "memory");
    /// ```
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The in-process circuit that decides under [`Fallback::Local`] while
    /// the store does not answer.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.local().key(), fuse.key());
    /// ```
    pub fn local(&self) -> &Fuse {
        &self.local
    }

    /// Whether the store answered the last round trip (`false` while the
    /// fallback decides).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert!(fuse.store_reachable());
    /// ```
    pub fn store_reachable(&self) -> bool {
        self.health().down.is_none()
    }

    /// Adds a listener of this circuit's transitions (those this process
    /// made in the store, and the local circuit's) and of the store's
    /// outages and returns.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// let seen = Arc::new(AtomicUsize::new(0));
    /// let count = seen.clone();
    /// fuse.on_transition(move |_: &fuse_breaker::Transition| { count.fetch_add(1, Ordering::Relaxed); });
    /// fuse.force_open().await?;
    /// assert_eq!(seen.load(Ordering::Relaxed), 1);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn on_transition(&self, listener: impl Listener) {
        let listener: Arc<dyn Listener> = Arc::new(listener);
        self.listeners.add(&listener);
        self.local.on_transition(listener);
    }

    /// A permit for one call, or the reason there is none. One round trip
    /// to the store for a closed circuit; two when the admission changes
    /// the circuit (the move to half-open, a probe slot). While the store
    /// does not answer, the [`Fallback`] decides.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// let permit = fuse.try_acquire().await?;
    /// permit.success().await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Admission<'_> {
        // The common case inline: a quiet mirror's closed permit.
        if !self.down.get()
            && let Some(ticket) = self.quiet_ticket()
        {
            return Admission::granted(self, ticket);
        }
        self.try_acquire_slow()
    }

    /// Admission when the quiet mirror does not decide it.
    #[inline(never)]
    fn try_acquire_slow(&self) -> Admission<'_> {
        if let Some(error) = self.still_down() {
            return Admission::ready(self.fall_back(error));
        }
        if let Some(ticket) = self.quiet_ticket() {
            return Admission::granted(self, ticket);
        }
        if let Some(entry) =
            self.by_mirror(|mirror, staleness| mirror.admit(&self.config, staleness))
        {
            return Admission::ready(self.entry(entry));
        }
        Admission::asking(self.acquire_asking())
    }

    /// Admission that asks the store.
    async fn acquire_asking(&self) -> Result<SharedPermit<'_>, Refusal> {
        let begun = self.outages.get();
        match self.acquire_from_store().await {
            Ok(entry) => {
                self.answered(begun);
                self.entry(entry)
            }
            Err(error) if error.is_unreachable() => {
                self.failed(&error);
                self.fall_back(error)
            }
            Err(error) => Err(Refusal::Store(error)),
        }
    }

    /// Runs `fut` if the circuit admits it and records its outcome (as
    /// [`Fuse::run_async`]). A verdict the store could not take is
    /// reported to the listeners and does not change the call's result.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// let out = fuse.run_async(async { Err::<(), _>(fuse_breaker::FailureKind::Timeout) }).await;
    /// assert!(out.is_err());
    /// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_async<T, E, F>(&self, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
        E: Classify,
    {
        let config = &self.config;
        self.run_judged(fut, |outcome| {
            Verdict::for_outcome(
                outcome,
                |_| Verdict::Success,
                |err| Verdict::for_kind(err.failure_kind(), config),
            )
        })
        .await
    }

    /// Like [`run_async`](Self::run_async), with the classification of
    /// this call given (as [`Fuse::run_async_with`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// let out = fuse.run_async_with(async { Err::<(), _>("503") }, |e| *e == "503", |_| true).await;
    /// assert!(out.is_err());
    /// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_async_with<T, E, F, IsFailure, IsSuccess>(
        &self,
        fut: F,
        is_failure: IsFailure,
        is_success: IsSuccess,
    ) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
        IsFailure: FnOnce(&E) -> bool,
        IsSuccess: FnOnce(&T) -> bool,
    {
        self.run_judged(fut, |outcome| {
            Verdict::for_outcome(
                outcome,
                |value| Verdict::success_if(is_success(value)),
                |err| Verdict::failure_if(is_failure(err)),
            )
        })
        .await
    }

    async fn run_judged<T, E, F>(
        &self,
        fut: F,
        judge: impl FnOnce(&Result<T, E>) -> Verdict,
    ) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let permit = self.try_acquire().await.map_err(Error::Refused)?;
        let outcome = fut.await;
        // A verdict the store did not take was reported where it failed.
        let _ = permit.conclude(judge(&outcome)).await;
        outcome.map_err(Error::Inner)
    }

    /// The circuit's state in the store.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert_eq!(fuse.state().await?, fuse_breaker::State::Closed);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn state(&self) -> Result<State, StoreError> {
        let loaded = self.store.load(self.key()).await?;
        Ok(self.read(&loaded)?.state())
    }

    /// The circuit's snapshot in the store; times are since the Unix epoch
    /// on the store's clock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// # futures::executor::block_on(async {
    /// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
    /// assert!(fuse.snapshot().await?.failures.is_empty());
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        Ok(self.snapshot_now().await?.0)
    }

    /// The snapshot and the store's time it was read at (since the Unix
    /// epoch).
    pub(crate) async fn snapshot_now(&self) -> Result<(Snapshot, Duration), StoreError> {
        let loaded = self.store.load(self.key()).await?;
        let now = payload::store_time(loaded.now);
        let snapshot = self.read(&loaded)?.snapshot(&self.config, now);
        Ok((snapshot, Duration::from_nanos(now)))
    }

    fn entry(&self, entry: Entry) -> Result<SharedPermit<'_>, Refusal> {
        match entry {
            Entry::Granted(ticket) => Ok(SharedPermit::new(self, Held::Store(ticket))),
            Entry::Rejected { retry_after } => Err(Refusal::Open(OpenError::new(
                self.names.label(),
                retry_after,
            ))),
        }
    }

    /// In cached mode, what the mirror decides by itself (`None`: ask the
    /// store).
    fn by_mirror<T>(&self, decide: impl FnOnce(&Mirror, Duration) -> Option<T>) -> Option<T> {
        self.cache.as_ref()?.decide(decide)
    }

    /// In cached mode, keeps `stored` (read or written at the store's
    /// `now`) as the mirror, unless a newer reading is there already.
    fn remember(&self, stored: &Stored, now: u64) {
        if let Some(cache) = &self.cache {
            cache.remember(stored, now);
        }
    }

    /// The closed permit of a quiet mirror still fresh.
    #[inline]
    fn quiet_ticket(&self) -> Option<super::stored::Ticket> {
        self.cache.as_ref()?.quiet_ticket()
    }

    /// Ends a permit the store granted; `Ok` also when the verdict was
    /// stale.
    #[inline]
    pub(super) fn conclude_in_store(
        &self,
        ticket: super::stored::Ticket,
        verdict: Verdict,
    ) -> Conclusion<'_> {
        let quiet =
            verdict != Verdict::Failure && self.quiet_ticket().is_some_and(|quiet| quiet == ticket);
        if quiet {
            // A success or an ignore of the quiet circuit's own permit:
            // nothing to clear, nothing to send.
            return Conclusion::settled();
        }
        self.conclude_slow(ticket, verdict)
    }

    /// A verdict the quiet mirror does not settle.
    #[inline(never)]
    fn conclude_slow(&self, ticket: super::stored::Ticket, verdict: Verdict) -> Conclusion<'_> {
        let settled = self.by_mirror(|mirror, staleness| {
            mirror
                .settles(&self.config, &ticket, verdict, staleness)
                .then_some(())
        });
        if settled.is_some() {
            return Conclusion::settled();
        }
        Conclusion::asking(self.conclude_asking(ticket, verdict))
    }

    /// A verdict that asks the store.
    async fn conclude_asking(
        &self,
        ticket: super::stored::Ticket,
        verdict: Verdict,
    ) -> Result<(), StoreError> {
        let ticket = &ticket;
        let begun = self.outages.get();
        let result = self
            .step(None, |stored, now| {
                stored.verdict(&self.config, ticket, verdict, now)
            })
            .await
            .map(drop);
        match &result {
            Ok(()) => self.answered(begun),
            Err(error) if error.is_unreachable() => self.failed(error),
            Err(_) => {}
        }
        result
    }

    async fn acquire_from_store(&self) -> Result<Entry, StoreError> {
        let lease = nanos(self.lease);
        let mut entry = None;
        self.step(None, |stored, now| {
            let at = At {
                now,
                lease,
                lease_id: random::next(),
                generation: random::next(),
            };
            let (granted, changed) = stored.acquire(&self.config, at);
            entry = Some(granted);
            changed
        })
        .await?;
        // `step` runs the closure at least once before it returns `Ok`.
        Ok(entry.unwrap_or(Entry::Rejected { retry_after: 0 }))
    }

    /// A manual change: always written, and always a new epoch; a payload
    /// that is not a circuit is overwritten (and returned).
    pub(super) async fn manual(
        &self,
        reason: Reason,
        change: impl Fn(&mut Stored, u64),
    ) -> Result<Option<PayloadError>, StoreError> {
        self.step(Some(reason), |stored, now| {
            change(stored, now);
            true
        })
        .await
    }

    /// One step on the circuit in the store: read it with the store's time,
    /// apply `step` (which says whether it changed anything), and write the
    /// result against what was read, again on every lost race. `manual`:
    /// the reason of a manual change (a rule's transition has its own).
    ///
    /// A step that writes first takes this circuit's write turn, so that the
    /// writers of one process never race each other (64 tasks failing at
    /// once lost 27 round trips per call to each other without it): a read
    /// and a decision need no turn, and nothing is held across a call. A
    /// step that finds a write of this process made since it began reading
    /// decides again on the payload that write left, with no round trip
    /// (a write of another process since is what the compare-and-set
    /// finds).
    ///
    /// A manual change overwrites a payload that is not a circuit (as a
    /// fresh circuit in a new generation) and returns what was wrong with
    /// it; any other step fails on one.
    async fn step(
        &self,
        manual: Option<Reason>,
        mut step: impl FnMut(&mut Stored, u64) -> bool,
    ) -> Result<Option<PayloadError>, StoreError> {
        let writes = self.writes.get();
        let (mut loaded, deleted) = match self.store.load(self.key()).await {
            Ok(loaded) => (loaded, None),
            // What the store cannot even hand over (a value of another
            // type, a row that is not text) is deleted first by a manual
            // change, which then writes on the absent key.
            Err(err) => match (manual, err.payload_error()) {
                (Some(_), Some(unreadable)) => {
                    let unreadable = unreadable.clone();
                    self.store.delete(self.key(), false).await?;
                    (self.store.load(self.key()).await?, Some(unreadable))
                }
                _ => return Err(err),
            },
        };
        let mut turn: Option<tokio::sync::MutexGuard<'_, Option<Loaded>>> = None;
        for _ in 0..MAX_CONFLICTS {
            let mut overwritten = deleted.clone();
            let mut stored = match self.read(&loaded) {
                Ok(stored) => stored,
                Err(err) => match (manual, err.payload_error()) {
                    (Some(_), Some(unreadable)) => {
                        overwritten = Some(unreadable.clone());
                        Stored::reset(random::next())
                    }
                    _ => return Err(err),
                },
            };
            let before = stored.clone();
            let now = payload::store_time(loaded.now);
            if !step(&mut stored, now) {
                self.remember(&stored, now);
                return Ok(overwritten);
            }
            if stored.generation == 0 {
                // The key's first write names its generation.
                stored.generation = random::next();
            }
            if turn.is_none() {
                let last = self.writing.lock().await;
                let newer = last
                    .as_ref()
                    .filter(|last| self.writes.get() != writes && last.payload != loaded.payload)
                    .map(|last| Loaded {
                        payload: last.payload.clone(),
                        now: last.now.max(loaded.now),
                    });
                turn = Some(last);
                if let Some(newer) = newer {
                    loaded = newer;
                    continue;
                }
            }
            let written = payload::write(&stored);
            // A transition is announced to every process's mirrors (no
            // process knows whether others cache).
            let announce = moved(&before, &stored);
            match self
                .store
                .swap(
                    self.key(),
                    loaded.payload.as_deref(),
                    &written,
                    self.ttl,
                    announce,
                )
                .await?
            {
                Swap::Written => {
                    if let Some(last) = turn.as_mut() {
                        self.writes.add(1);
                        **last = Some(Loaded {
                            payload: Some(written),
                            now: loaded.now,
                        });
                    }
                    self.remember(&stored, now);
                    self.report(&before, &stored, loaded.now, manual);
                    return Ok(overwritten);
                }
                Swap::Changed(now) => loaded = now,
            }
        }
        Err(StoreError::contended(
            self.store.name(),
            self.key(),
            MAX_CONFLICTS,
        ))
    }

    pub(super) fn read(&self, loaded: &Loaded) -> Result<Stored, StoreError> {
        let Some(bytes) = &loaded.payload else {
            return Ok(Stored::absent());
        };
        let fresh = Fresh {
            lease_until: payload::store_time(loaded.now).saturating_add(nanos(self.lease)),
        };
        payload::read(self.key(), bytes, fresh)
            .map_err(|err| StoreError::payload(self.store.name(), err))
    }

    /// Tells the listeners of a transition this process wrote.
    pub(super) fn report(
        &self,
        before: &Stored,
        after: &Stored,
        at: Duration,
        manual: Option<Reason>,
    ) {
        let (from, to) = (before.state(), after.state());
        let Some(reason) = manual
            .or_else(|| model::reason(from, to))
            .filter(|_| moved(before, after))
        else {
            return;
        };
        self.listeners.emit(&Transition {
            key: self.key(),
            from,
            to,
            reason,
            at,
        });
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The store's last error, while it is not yet time to try it again.
    #[inline]
    fn still_down(&self) -> Option<StoreError> {
        if !self.down.get() {
            return None;
        }
        self.still_down_slow()
    }

    #[inline(never)]
    fn still_down_slow(&self) -> Option<StoreError> {
        let health = self.health();
        let down = health.down.as_ref()?;
        (Instant::now() < down.retry_at).then(|| down.error.clone())
    }

    /// The store answered a round trip begun when `begun` failures had
    /// been seen: back to it, if it had not answered, unless the trip began
    /// before the last failure was seen (a reply already on its way when
    /// the store went down says nothing of the store now).
    fn answered(&self, begun: u64) {
        if !self.down.get() {
            return;
        }
        let was_down = {
            let mut health = self.health();
            if health.down.as_ref().is_some_and(|down| down.seen > begun) {
                return;
            }
            self.down.set(false);
            health.down.take().is_some()
        };
        if was_down {
            self.tell(true, None);
        }
    }

    /// The store did not answer: the fallback decides until the next try,
    /// after a backoff that doubles with each failure in a row.
    fn failed(&self, error: &StoreError) {
        let mut health = self.health();
        let backoff = health
            .down
            .as_ref()
            .map_or(MIN_BACKOFF, |down| (down.backoff * 2).min(MAX_BACKOFF));
        let first = health.down.is_none();
        self.down.set(true);
        // Counted under the lock `answered` reads it under; a round trip
        // that read an older count is only taken as older still.
        let seen = self.outages.add(1) + 1;
        health.down = Some(Down {
            error: error.clone(),
            retry_at: Instant::now() + backoff,
            backoff,
            seen,
        });
        drop(health);
        // A mirror is only as good as the connection it came over.
        if let Some(cache) = &self.cache {
            cache.forget();
        }
        if first {
            self.tell(false, Some(error));
        }
    }

    /// Tells the listeners the store stopped answering, or answers again.
    fn tell(&self, reachable: bool, error: Option<&StoreError>) {
        self.listeners.emit_store(&super::StoreEvent {
            key: self.key(),
            store: self.store.name(),
            reachable,
            fallback: self.fallback,
            error,
            overwritten: None,
        });
    }

    /// Tells the listeners an operator's change overwrote a payload that
    /// was not a circuit.
    pub(super) fn tell_overwritten(&self, unreadable: &PayloadError) {
        self.listeners.emit_store(&super::StoreEvent {
            key: self.key(),
            store: self.store.name(),
            reachable: true,
            fallback: self.fallback,
            error: None,
            overwritten: Some(unreadable),
        });
    }

    fn fall_back(&self, error: StoreError) -> Result<SharedPermit<'_>, Refusal> {
        match self.fallback {
            Fallback::Local => match self.local.try_acquire_owned() {
                Ok(permit) => Ok(SharedPermit::new(self, Held::Local(permit))),
                Err(open) => Err(Refusal::Open(open)),
            },
            Fallback::Allow => Ok(SharedPermit::new(self, Held::Allowed)),
            Fallback::Reject => Err(Refusal::Store(error)),
        }
    }
}

impl fmt::Debug for SharedFuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuse")
            .field("key", &self.key())
            .field("store", &self.store.name())
            .field("fallback", &self.fallback)
            .field("store_reachable", &self.store_reachable())
            .finish_non_exhaustive()
    }
}
