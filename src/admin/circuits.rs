//! The circuits an admin API serves: an in-process [`Registry`] and, with
//! the `store` feature, a [`SharedRegistry`] — listed by key, found by
//! key, read as [`CircuitView`]s and steered.

use std::sync::Arc;
#[cfg(feature = "store")]
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ApiError;
use super::view::CircuitView;
#[cfg(feature = "store")]
use super::view::Reading;
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
#[derive(Clone, Debug, Default)]
pub(super) struct Circuits {
    pub(super) local: Option<Arc<Registry>>,
    #[cfg(feature = "store")]
    pub(super) shared: Option<Arc<SharedRegistry>>,
}

/// One circuit of either kind.
#[derive(Clone, Debug)]
pub(super) enum One {
    Local(Arc<Fuse>),
    #[cfg(feature = "store")]
    Shared(Arc<SharedFuse>),
}

impl Circuits {
    /// Every circuit, sorted by key; a key of both kinds is the shared
    /// circuit (the fleet's).
    pub(super) fn all(&self) -> Vec<One> {
        let local = self.local.iter().flat_map(|registry| registry.fuses());
        #[cfg(feature = "store")]
        {
            let shared: Vec<One> = self
                .shared
                .iter()
                .flat_map(|registry| registry.circuits())
                .map(One::Shared)
                .collect();
            let mut all: Vec<One> = local
                .map(One::Local)
                .filter(|one| {
                    shared
                        .binary_search_by(|other| other.key().cmp(one.key()))
                        .is_err()
                })
                .chain(shared.iter().cloned())
                .collect();
            all.sort_unstable_by(|a, b| a.key().cmp(b.key()));
            all
        }
        #[cfg(not(feature = "store"))]
        local.map(One::Local).collect()
    }

    /// The circuit whose key is `key`.
    pub(super) fn find(&self, key: &str) -> Result<One, ApiError> {
        #[cfg(feature = "store")]
        if let Some(fuse) = self
            .shared
            .iter()
            .flat_map(|registry| registry.circuits())
            .find(|fuse| fuse.key() == key)
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

    /// The circuit now (a shared one read from its store: when that fails,
    /// this process's fallback circuit, with the error).
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    pub(super) async fn view(&self) -> CircuitView {
        match self {
            One::Local(fuse) => CircuitView::of(fuse),
            #[cfg(feature = "store")]
            One::Shared(fuse) => shared_view(fuse).await,
        }
    }

    /// Carries out `action`.
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    pub(super) async fn act(&self, action: Action) -> Result<(), ApiError> {
        match self {
            One::Local(fuse) => {
                match action {
                    Action::Open => fuse.force_open(),
                    Action::Close => fuse.force_closed(),
                    Action::Reset => fuse.reset(),
                }
                Ok(())
            }
            #[cfg(feature = "store")]
            One::Shared(fuse) => match action {
                Action::Open => fuse.force_open().await,
                Action::Close => fuse.force_closed().await,
                Action::Reset => fuse.reset().await,
            }
            .map_err(|err| ApiError::store(err.to_string())),
        }
    }
}

#[cfg(feature = "store")]
async fn shared_view(fuse: &SharedFuse) -> CircuitView {
    let (snapshot, now, wall, store_error) = match fuse.snapshot_now().await {
        Ok((snapshot, now)) => (snapshot, now, UNIX_EPOCH + now, None),
        Err(err) => {
            let local = fuse.local();
            (
                local.snapshot(),
                Duration::from_nanos(local.now()),
                SystemTime::now(),
                Some(err.to_string()),
            )
        }
    };
    CircuitView::read(&Reading {
        key: fuse.key(),
        name: fuse.name(),
        operation: fuse.operation(),
        shared: true,
        snapshot: &snapshot,
        now,
        wall,
        config: fuse.config(),
        store_error,
    })
}
