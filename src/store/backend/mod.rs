//! The backend contract ([`Store`], what it answers with) and the stores
//! that keep it: in this process's memory, on Redis, in a SQL table; what
//! opens one from a URL, the errors a store reports, and the place that
//! hands out what other processes announced. It depends on the stored
//! model below it and on nothing above it.

pub(crate) mod changes;
pub(crate) mod counting;
pub(crate) mod error;
pub(crate) mod keys;
pub(crate) mod memory;
pub(crate) mod open;
pub(crate) mod options;
#[cfg(feature = "redis")]
pub(crate) mod redis;
#[cfg(feature = "sql")]
pub(crate) mod sql;

use std::fmt;
use std::time::Duration;

use crate::store::model::codec::Codec;
use crate::store::model::increment::Increment;
use changes::Changes;
use error::StoreError;
use keys::KeyPage;

/// What a store did with an [`Increment`](crate::store::Increment).
///
/// ```
/// use fuse_breaker::store::Incremented;
/// assert!(Incremented::Applied.is_applied());
/// assert!(!Incremented::Skipped.is_applied());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incremented {
    /// The key held nothing the increment applies to; it is unchanged.
    Skipped,
    /// Applied (an increment that asks for no answer: a success's).
    Applied,
    /// Applied, by an increment that asks for the payload it wrote
    /// ([`Increment::answers`](crate::store::Increment::answers)): that payload, and the store's time of
    /// the increment.
    Wrote(Loaded),
    /// Not applied, by an increment that answers, from a store that tells
    /// what the key held instead (the verdict of an epoch another process
    /// ended needs no further round trip): that payload, as of the
    /// increment or a little before, and the store's time.
    Unchanged(Loaded),
}

impl Incremented {
    /// Whether the increment was applied.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::store::{Incremented, Loaded};
    /// let wrote = Incremented::Wrote(Loaded { payload: Some(b"{}".to_vec()), now: Duration::ZERO });
    /// assert!(wrote.is_applied());
    /// ```
    pub fn is_applied(&self) -> bool {
        matches!(self, Incremented::Applied | Incremented::Wrote(_))
    }
}

/// What a store answered to a read: the payload under the key (`None` when
/// absent or expired) and the store's time, since the Unix epoch.
///
/// ```
/// use std::time::Duration;
/// let loaded = fuse_breaker::store::Loaded { payload: None, now: Duration::from_secs(1_700_000_000) };
/// assert!(loaded.payload.is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The payload, as written.
    pub payload: Option<Vec<u8>>,
    /// The store's clock, since the Unix epoch.
    pub now: Duration,
}

/// What a store answered to a compare-and-set.
///
/// ```
/// use fuse_breaker::store::Swap;
/// assert_eq!(Swap::Written, Swap::Written);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Swap {
    /// The key held the expected payload; it now holds the new one.
    Written,
    /// The key held something else: what it holds now, and the store's
    /// time (one round trip saved on the retry).
    Changed(Loaded),
}

/// A store of payloads under keys, with a clock of its own: what a
/// [`SharedFuse`](crate::store::SharedFuse) needs from Redis, a database or memory. It knows no rule
/// of the circuit but one: it reads, it compares and sets, and (if it can)
/// it applies an [`Increment`], a closed verdict of the `rate` policy,
/// whose rule [`Increment::apply`] gives.
///
/// Implementations must make [`swap`](Self::swap) atomic: of two swaps
/// that expect the same payload, at most one writes; and
/// [`increment`](Self::increment) atomic against every other write of the
/// key (so that two increments never lose one another).
///
/// ```
/// use fuse_breaker::store::{Loaded, MemoryStore, Store, Swap};
/// use std::time::Duration;
///
/// # futures::executor::block_on(async {
/// let store = MemoryStore::new();
/// let ttl = Duration::from_secs(60);
/// assert_eq!(store.swap("fuse:a", None, b"{}", ttl, false).await?, Swap::Written);
/// // A second writer that also saw the key absent loses.
/// assert!(matches!(store.swap("fuse:a", None, b"[]", ttl, false).await?, Swap::Changed(_)));
/// assert_eq!(store.load("fuse:a").await?.payload.as_deref(), Some(&b"{}"[..]));
/// store.delete("fuse:a", false).await?;
/// assert_eq!(store.load("fuse:a").await?.payload, None);
/// # Ok::<(), fuse_breaker::store::StoreError>(())
/// # }).unwrap();
/// ```
#[async_trait::async_trait]
pub trait Store: Send + Sync + fmt::Debug + 'static {
    /// Where the store is, for errors and events (`redis://127.0.0.1:6379`;
    /// no password).
    fn name(&self) -> &str;

    /// The payload under `key` and the store's time.
    async fn load(&self, key: &str) -> Result<Loaded, StoreError>;

    /// Writes `new` under `key`, to expire after `ttl`, if the key holds
    /// `expected` (`None`: the key is absent or expired); otherwise
    /// returns what it holds. `announce`: the write is a transition, to
    /// tell every process's [`Changes`] of (in the same atomic step where
    /// the store can; a store that cannot announce ignores it).
    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<Swap, StoreError>;

    /// Writes `new` under `key`, to expire after `ttl`, if the key holds a
    /// payload that starts with `prefix`, whatever follows it: an
    /// [`Increment::prefix`], a circuit still closed in the epoch it names
    /// whatever its window counted since (what the opening found by a
    /// failure's increment writes, so that the successes landing meanwhile
    /// cannot make it lose every compare-and-set). Whether it wrote;
    /// `announce` as for [`swap`](Self::swap). Default: a load and a
    /// [`swap`](Self::swap), again while the key changes under it and
    /// still starts with `prefix` (256 times at most).
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, Store};
    ///
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::new();
    /// let ttl = Duration::from_secs(60);
    /// store.put("fuse:a", b"[closed 7][1,2,3]", ttl);
    /// assert!(store.swap_prefixed("fuse:a", b"[closed 7]", b"[open 8]", ttl, false).await?);
    /// assert!(!store.swap_prefixed("fuse:a", b"[closed 7]", b"[open 9]", ttl, false).await?);
    /// assert_eq!(store.load("fuse:a").await?.payload.as_deref(), Some(&b"[open 8]"[..]));
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    async fn swap_prefixed(
        &self,
        key: &str,
        prefix: &[u8],
        new: &[u8],
        ttl: Duration,
        announce: bool,
    ) -> Result<bool, StoreError> {
        const MAX_CONFLICTS: u32 = 256;
        let mut loaded = self.load(key).await?;
        for _ in 0..MAX_CONFLICTS {
            let Some(held) = loaded.payload.as_deref().filter(|p| p.starts_with(prefix)) else {
                return Ok(false);
            };
            match self.swap(key, Some(held), new, ttl, announce).await? {
                Swap::Written => return Ok(true),
                Swap::Changed(now) => loaded = now,
            }
        }
        Err(StoreError::contended(self.name(), key, MAX_CONFLICTS))
    }

    /// Deletes `key`, whatever it holds (what [`SharedFuse::reset`](crate::store::SharedFuse::reset) does:
    /// the circuit is forgotten, and the next read finds a fresh closed
    /// one). `announce`: tell every process's [`Changes`] (in the crate's
    /// announcement, an empty payload says the key was deleted).
    async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError>;

    /// Applies `increment` to the payload under `key` in one atomic step of the
    /// store (see [`Increment`]): when the key held a payload the increment
    /// applies to, it now holds [`Increment::apply`]'s result, on the store's
    /// clock, to expire after [`Increment::ttl`], and the answer is
    /// [`Incremented::Applied`], or [`Incremented::Wrote`] with that payload
    /// and the store's time for an increment that
    /// [`answers`](Increment::answers); otherwise the key is unchanged, the
    /// answer is [`Incremented::Skipped`] (or, to an increment that
    /// answers, [`Incremented::Unchanged`] with what the key holds, where
    /// the store can tell it in the same round trip), and the verdict takes
    /// a compare-and-set step unless that shows it stale. Default: `Skipped`, always (a store that cannot
    /// increment still takes every verdict by compare-and-set).
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::store::{Incremented, MemoryStore, Store, Increment};
    ///
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::frozen();
    /// let increment = Increment::new(b"[".to_vec(), 1_000_000, 10, 1, Duration::from_secs(60));
    /// assert_eq!(store.increment("fuse:a", &increment).await?, Incremented::Skipped, "absent");
    /// store.put("fuse:a", b"[[]}}}", Duration::from_secs(60));
    /// assert_eq!(store.increment("fuse:a", &increment).await?, Incremented::Applied);
    /// assert!(store.load("fuse:a").await?.payload.unwrap().starts_with(b"[[["));
    /// // A failure's increment answers with what it wrote.
    /// let failure = increment.reported(1, 0, 7, 1);
    /// let Incremented::Wrote(wrote) = store.increment("fuse:a", &failure).await? else {
    ///     panic!("a failure's increment answers");
    /// };
    /// assert_eq!(wrote.payload, store.load("fuse:a").await?.payload);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    async fn increment(&self, key: &str, increment: &Increment) -> Result<Incremented, StoreError> {
        let _ = (key, increment);
        Ok(Incremented::Skipped)
    }

    /// Where this store hands its circuits what it hears besides its
    /// replies, if it hears anything ([`Changes`]: the transitions other
    /// processes announced through it, the moves of its primary). Asking
    /// starts nothing; a store that listens on a channel starts when a
    /// cached circuit first watches a key there. Default: it hears
    /// nothing, and cached circuits see other processes' transitions up to
    /// their staleness late.
    fn changes(&self) -> Option<&Changes> {
        None
    }

    /// How this store spells its payloads ([`Codec`]; default: JSON
    /// alone, as milon/fuse's `DatabaseStore` and this crate's stores
    /// write it).
    ///
    /// ```
    /// use fuse_breaker::store::{Codec, MemoryStore, Store};
    /// assert_eq!(MemoryStore::new().codec(), Codec::default());
    /// ```
    fn codec(&self) -> Codec {
        Codec::default()
    }

    /// A page of the keys that start with `prefix`, taken literally (no
    /// character in it is a pattern), expired keys left out: what an
    /// operator's listing of circuits reads. `after`: the
    /// [`next`](KeyPage::next) of the page before (`None`: the first
    /// page). A page holds about `limit` keys (at least one is asked for);
    /// every key present from the first page to the last is in one of the
    /// pages. Default: an error saying that the store cannot list its keys
    /// ([`StoreError::is_unsupported`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::store::{MemoryStore, Store};
    ///
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::new();
    /// for key in ["fuse:shop:a", "fuse:shop:b", "fuse:shopping:c", "fuse:shop*:d"] {
    ///     store.put(key, b"{}", Duration::from_secs(60));
    /// }
    /// let first = store.keys("fuse:shop:", None, 1).await?;
    /// assert_eq!(first.keys, ["fuse:shop:a"]);
    /// let second = store.keys("fuse:shop:", first.next.as_deref(), 1).await?;
    /// assert_eq!(second.keys, ["fuse:shop:b"]);
    /// assert!(second.is_last());
    /// // `*` is a character like any other.
    /// assert_eq!(store.keys("fuse:shop*", None, 10).await?.keys, ["fuse:shop*:d"]);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    async fn keys(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage, StoreError> {
        let _ = (prefix, after, limit);
        Err(StoreError::unsupported(self.name(), "list its keys"))
    }
}

/// What a store that wraps another hands each method to, and what it does
/// before each round trip (see [`forward_store`]).
pub(crate) trait Forward {
    type To: Store + ?Sized;
    fn to(&self) -> &Self::To;
    fn trip(&self) {}
}

/// `impl Store for $ty`, every method handed to [`Forward::to`], after
/// [`Forward::trip`] for the round trips: none of the store's own methods
/// is left to the trait's default.
macro_rules! forward_store {
    ([$($generics:tt)*] $ty:ty) => {
        #[async_trait::async_trait]
        impl<$($generics)*> Store for $ty {
            fn name(&self) -> &str {
                self.to().name()
            }

            async fn load(&self, key: &str) -> Result<Loaded, StoreError> {
                self.trip();
                self.to().load(key).await
            }

            async fn swap(
                &self,
                key: &str,
                expected: Option<&[u8]>,
                new: &[u8],
                ttl: Duration,
                announce: bool,
            ) -> Result<Swap, StoreError> {
                self.trip();
                self.to().swap(key, expected, new, ttl, announce).await
            }

            async fn swap_prefixed(
                &self,
                key: &str,
                prefix: &[u8],
                new: &[u8],
                ttl: Duration,
                announce: bool,
            ) -> Result<bool, StoreError> {
                self.trip();
                self.to().swap_prefixed(key, prefix, new, ttl, announce).await
            }

            async fn delete(&self, key: &str, announce: bool) -> Result<(), StoreError> {
                self.trip();
                self.to().delete(key, announce).await
            }

            async fn increment(
                &self,
                key: &str,
                increment: &Increment,
            ) -> Result<Incremented, StoreError> {
                self.trip();
                self.to().increment(key, increment).await
            }

            fn changes(&self) -> Option<&Changes> {
                self.to().changes()
            }

            fn codec(&self) -> Codec {
                self.to().codec()
            }

            async fn keys(
                &self,
                prefix: &str,
                after: Option<&str>,
                limit: usize,
            ) -> Result<KeyPage, StoreError> {
                self.trip();
                self.to().keys(prefix, after, limit).await
            }
        }
    };
}
pub(crate) use forward_store;

/// A store behind an `Arc` is the store (to wrap a shared one, as
/// [`Counting`](crate::store::Counting) does).
impl<S: Store + ?Sized> Forward for std::sync::Arc<S> {
    type To = S;
    fn to(&self) -> &S {
        self
    }
}

forward_store!([S: Store + ?Sized] std::sync::Arc<S>);
