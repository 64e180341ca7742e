//! The circuits an admin API serves: an in-process [`Registry`] and, with
//! the `store` feature, a [`SharedRegistry`] — listed by key, found by
//! key, read as [`CircuitView`]s (shared ones within the bounds of
//! [`Reads`]) and steered.

use std::sync::Arc;

use super::ApiError;
#[cfg(feature = "store")]
use super::reads::Reads;
use super::view::CircuitView;
use crate::fuse::Fuse;
use crate::registry::Registry;
#[cfg(feature = "store")]
use crate::store::{SharedFuse, SharedRegistry};

/// What a write asks of a circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    Open,
    Close,
    Reset,
}

impl Action {
    /// The action a path names (`open`, `close`, `reset`).
    pub(super) fn parse(name: &str) -> Result<Self, ApiError> {
        match name {
            "open" => Ok(Action::Open),
            "close" => Ok(Action::Close),
            "reset" => Ok(Action::Reset),
            other => Err(ApiError::bad_request(format!(
                "no action {other:?}: open, close or reset"
            ))),
        }
    }
}

/// Every source of circuits of one admin API.
#[derive(Debug, Default)]
pub(super) struct Circuits {
    pub(super) local: Option<Arc<Registry>>,
    #[cfg(feature = "store")]
    pub(super) shared: Option<Arc<SharedRegistry>>,
    /// The shared circuits' readings and the lists' budget of reads.
    #[cfg(feature = "store")]
    pub(super) reads: Reads,
}

/// A page of the list.
#[derive(Debug)]
pub(super) struct Page {
    /// Its circuits, by key.
    pub(super) circuits: Vec<One>,
    /// Circuits in all.
    pub(super) total: usize,
    /// Whether circuits follow the page.
    pub(super) more: bool,
}

/// One circuit of either kind.
#[derive(Clone, Debug)]
pub(super) enum One {
    Local(Arc<Fuse>),
    #[cfg(feature = "store")]
    Shared(Arc<SharedFuse>),
}

impl Circuits {
    /// The first `limit` circuits by key after `after`, how many there are
    /// in all, and whether more follow. A key of both kinds is the shared
    /// circuit (the fleet's). The in-process circuits come from a range of
    /// the registry's ordered index (no sort of every key).
    pub(super) fn page(&self, after: Option<&str>, limit: usize) -> Page {
        #[cfg(feature = "store")]
        let shared: Vec<Arc<SharedFuse>> = self
            .shared
            .iter()
            .flat_map(|registry| registry.circuits())
            .filter(|fuse| after.is_none_or(|after| fuse.key() > after))
            .collect();
        #[cfg(not(feature = "store"))]
        let shared: Vec<One> = Vec::new();
        // Enough in-process circuits for the page past those a shared one
        // hides, and one more to know whether more follow.
        let wanted = limit.saturating_add(1).saturating_add(shared.len());
        let (local, total) = self
            .local
            .as_ref()
            .map_or((Vec::new(), 0), |registry| registry.page(after, wanted));
        let mut all: Vec<One> = local.into_iter().map(One::Local).collect();
        #[cfg(feature = "store")]
        let total = total + self.shared_total();
        #[cfg(feature = "store")]
        {
            all.retain(|one| {
                shared
                    .binary_search_by(|other| other.key().cmp(one.key()))
                    .is_err()
            });
            all.extend(shared.into_iter().map(One::Shared));
            all.sort_by(|a, b| a.key().cmp(b.key()));
        }
        let more = all.len() > limit;
        all.truncate(limit);
        Page {
            circuits: all,
            total,
            more,
        }
    }

    /// Shared circuits in all, less those whose keys an in-process
    /// circuit has too (counted once).
    #[cfg(feature = "store")]
    fn shared_total(&self) -> usize {
        let shared = self.shared.iter().flat_map(|registry| registry.circuits());
        shared
            .filter(|fuse| {
                self.local
                    .as_ref()
                    .is_none_or(|registry| registry.by_key(fuse.key()).is_none())
            })
            .count()
    }

    /// The views of a page's circuits, in order.
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    pub(super) async fn views(&self, ones: &[One]) -> Vec<CircuitView> {
        #[cfg(feature = "store")]
        {
            let shared: Vec<&SharedFuse> = ones.iter().filter_map(One::as_shared).collect();
            let mut shared = self.reads.views(&shared).await.into_iter();
            ones.iter()
                .filter_map(|one| match one {
                    One::Local(fuse) => Some(CircuitView::of(fuse)),
                    One::Shared(_) => shared.next(),
                })
                .collect()
        }
        #[cfg(not(feature = "store"))]
        ones.iter()
            .map(|One::Local(fuse)| CircuitView::of(fuse))
            .collect()
    }

    /// The view of one circuit (a shared one from a fresh reading or its
    /// store).
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    pub(super) async fn view(&self, one: &One) -> CircuitView {
        match one {
            One::Local(fuse) => CircuitView::of(fuse),
            #[cfg(feature = "store")]
            One::Shared(fuse) => self.reads.one(fuse).await,
        }
    }

    /// Carries out `action` on `one`, then its view (a shared one read
    /// again).
    pub(super) async fn act(&self, one: &One, action: Action) -> Result<CircuitView, ApiError> {
        let overwritten = one.act(action).await?;
        let mut view = match one {
            One::Local(fuse) => CircuitView::of(fuse),
            #[cfg(feature = "store")]
            One::Shared(fuse) => self.reads.again(fuse).await,
        };
        view.overwritten = overwritten;
        Ok(view)
    }

    /// The circuit whose key is `key`.
    pub(super) fn find(&self, key: &str) -> Result<One, ApiError> {
        #[cfg(feature = "store")]
        if let Some(fuse) = self
            .shared
            .as_ref()
            .and_then(|registry| registry.by_key(key))
        {
            return Ok(One::Shared(fuse));
        }
        self.local
            .as_ref()
            .and_then(|registry| registry.by_key(key))
            .map(One::Local)
            .ok_or_else(|| ApiError::not_found(key))
    }
}

impl One {
    pub(super) fn key(&self) -> &str {
        match self {
            One::Local(fuse) => fuse.key(),
            #[cfg(feature = "store")]
            One::Shared(fuse) => fuse.key(),
        }
    }

    /// The shared circuit, if that is what this is.
    #[cfg(feature = "store")]
    fn as_shared(&self) -> Option<&SharedFuse> {
        match self {
            One::Local(_) => None,
            One::Shared(fuse) => Some(fuse),
        }
    }

    /// Carries out `action`; what it overwrote that was not a circuit.
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    async fn act(&self, action: Action) -> Result<Option<String>, ApiError> {
        match self {
            One::Local(fuse) => {
                match action {
                    Action::Open => fuse.force_open(),
                    Action::Close => fuse.force_closed(),
                    Action::Reset => fuse.reset(),
                }
                Ok(None)
            }
            #[cfg(feature = "store")]
            One::Shared(fuse) => match action {
                Action::Open => fuse.force_open().await,
                Action::Close => fuse.force_closed().await,
                Action::Reset => fuse.reset().await,
            }
            .map(|change| change.overwritten().map(ToString::to_string))
            .map_err(|err| ApiError::store(err.to_string())),
        }
    }
}
