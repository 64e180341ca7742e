//! The circuits an admin API serves: an in-process [`Registry`] and, with
//! the `store` feature, a [`SharedRegistry`] — listed by key, found by
//! key, read as [`CircuitView`]s (shared ones within the bounds of
//! [`Reads`]) and steered.

use std::sync::Arc;

use super::ApiError;
#[cfg(feature = "store")]
use super::reads::Reads;
use super::settings::{Requested, SettingsChange};
use super::view::CircuitView;
use crate::backing::Backing;
use crate::config::Config;
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

/// A page of the list: its circuits of this process and its shared ones,
/// which are read differently (a shared one within the lists' budget of
/// store reads).
#[derive(Debug, Default)]
pub(super) struct Page {
    local: Vec<Arc<Fuse>>,
    #[cfg(feature = "store")]
    shared: Vec<Arc<SharedFuse>>,
    /// Circuits in all.
    pub(super) total: usize,
    /// The page's last key, when circuits follow it.
    pub(super) next: Option<String>,
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
        let shared: Vec<Arc<Fuse>> = Vec::new();
        // Enough in-process circuits for the page past those a shared one
        // hides, and one more to know whether more follow.
        let wanted = limit.saturating_add(1).saturating_add(shared.len());
        let (mut local, total) = self
            .local
            .as_ref()
            .map_or((Vec::new(), 0), |registry| registry.page(after, wanted));
        local.retain(|fuse| {
            shared
                .binary_search_by(|other| other.key().cmp(fuse.key()))
                .is_err()
        });
        #[cfg(feature = "store")]
        let total = total + self.shared_total();
        let mut keys: Vec<&str> = local.iter().map(|fuse| fuse.key()).collect();
        keys.extend(shared.iter().map(|fuse| fuse.key()));
        keys.sort_unstable();
        let next = (keys.len() > limit).then(|| keys[limit - 1].to_owned());
        let mut page = Page {
            total,
            ..Page::default()
        };
        let on_page = |key: &str| next.as_deref().is_none_or(|last| key <= last);
        page.local = local
            .into_iter()
            .filter(|fuse| on_page(fuse.key()))
            .collect();
        #[cfg(feature = "store")]
        {
            page.shared = shared
                .into_iter()
                .filter(|fuse| on_page(fuse.key()))
                .collect();
        }
        page.next = next;
        page
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

    /// The views of a page's circuits, by key.
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    pub(super) async fn views(&self, page: &Page) -> Vec<CircuitView> {
        let local = page.local.iter().map(|fuse| CircuitView::of(fuse));
        #[cfg(feature = "store")]
        {
            let shared: Vec<&SharedFuse> = page.shared.iter().map(|fuse| &**fuse).collect();
            let mut views: Vec<CircuitView> = local.collect();
            views.extend(self.reads.views(&shared).await);
            views.sort_by(|a, b| a.key.cmp(&b.key));
            views
        }
        #[cfg(not(feature = "store"))]
        local.collect()
    }

    /// The view of the circuit whose key is `key` (a shared one from a
    /// fresh reading or its store).
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    pub(super) async fn view(&self, key: &str) -> Result<CircuitView, ApiError> {
        #[cfg(feature = "store")]
        if let Some(fuse) = self.shared_by_key(key) {
            return Ok(self.reads.one(&fuse).await);
        }
        Ok(CircuitView::of(&*self.local_by_key(key)?))
    }

    /// Carries out `action` on the circuit whose key is `key`, then its
    /// view (a shared one read again).
    #[cfg_attr(not(feature = "store"), allow(clippy::unused_async))]
    pub(super) async fn act(&self, key: &str, action: Action) -> Result<CircuitView, ApiError> {
        #[cfg(feature = "store")]
        if let Some(fuse) = self.shared_by_key(key) {
            let change = match action {
                Action::Open => fuse.force_open().await,
                Action::Close => fuse.force_closed().await,
                Action::Reset => fuse.reset().await,
            }
            .map_err(|err| ApiError::store(err.to_string()))?;
            let mut view = self.reads.again(&fuse).await;
            view.overwritten = change.overwritten().map(ToString::to_string);
            return Ok(view);
        }
        let fuse = self.local_by_key(key)?;
        match action {
            Action::Open => fuse.force_open(),
            Action::Close => fuse.force_closed(),
            Action::Reset => fuse.reset(),
        }
        Ok(CircuitView::of(&fuse))
    }

    /// Puts the settings `requested` names in force for the circuit whose
    /// key is `key` (SPEC §12; a shared circuit's in this process alone):
    /// its own from now on, a registry's reload leaves them. Refused whole,
    /// with nothing changed.
    pub(super) fn set_circuit(
        &self,
        key: &str,
        requested: &Requested,
    ) -> Result<SettingsChange, ApiError> {
        #[cfg(feature = "store")]
        if let Some(fuse) = self.shared_by_key(key) {
            return set_circuit(&fuse, requested);
        }
        set_circuit(&*self.local_by_key(key)?, requested)
    }

    /// Puts the settings `requested` names in force for the name `name` of
    /// every registry the API serves: every circuit of the name that runs
    /// its registry's settings, and those made from now on. Refused whole,
    /// with nothing changed (a registry that took them is put back when
    /// the next refuses them).
    pub(super) fn set_name(
        &self,
        name: &str,
        requested: &Requested,
    ) -> Result<SettingsChange, ApiError> {
        let local = match &self.local {
            Some(registry) => Some((registry, set_name(registry, name, requested)?)),
            None => None,
        };
        #[cfg(feature = "store")]
        if let Some(registry) = &self.shared {
            match set_name(registry, name, requested) {
                Ok(taken) => return Ok(local.map_or(taken.0, |(_, (change, _))| change)),
                Err(refused) => {
                    if let Some((registry, (_, before))) = local {
                        // The in-process registry's name as it was: in
                        // place, since it ran so a moment ago.
                        let back = crate::config::Overrides::from(before.clone());
                        let _ = registry.reconfigure_by(name, &back, &requested.by);
                    }
                    return Err(refused);
                }
            }
        }
        local
            .map(|(_, (change, _))| change)
            .ok_or_else(|| ApiError::not_found(name))
    }

    /// The shared circuit whose key is `key`: the fleet's, before one of
    /// this process of the same key.
    #[cfg(feature = "store")]
    fn shared_by_key(&self, key: &str) -> Option<Arc<SharedFuse>> {
        self.shared.as_ref()?.by_key(key)
    }

    /// The circuit of this process whose key is `key`.
    fn local_by_key(&self, key: &str) -> Result<Arc<Fuse>, ApiError> {
        self.local
            .as_ref()
            .and_then(|registry| registry.by_key(key))
            .ok_or_else(|| ApiError::not_found(key))
    }
}

/// [`Circuits::set_circuit`] of `fuse`.
fn set_circuit<B: Backing>(
    fuse: &Fuse<B>,
    requested: &Requested,
) -> Result<SettingsChange, ApiError> {
    let from = fuse.config().clone();
    let to = requested
        .overrides
        .apply(&from)
        .map_err(|err| ApiError::invalid_setting(err.to_string()))?;
    fuse.reconfigure_by(to, &requested.by)
        .map_err(|err| ApiError::not_in_place(err.to_string()))?;
    Ok(SettingsChange::new(
        fuse.name(),
        Some(fuse.key()),
        &requested.by,
        &from,
        fuse.config(),
    ))
}

/// [`Circuits::set_name`] of one registry: the change, and the name's
/// settings before it.
fn set_name<B: Backing>(
    registry: &Registry<B>,
    name: &str,
    requested: &Requested,
) -> Result<(SettingsChange, &'static Config), ApiError> {
    let from = registry.config_for(name);
    requested
        .overrides
        .apply(from)
        .map_err(|err| ApiError::invalid_setting(err.to_string()))?;
    let to = registry
        .reconfigure_by(name, &requested.overrides, &requested.by)
        .map_err(|err| ApiError::not_in_place(err.to_string()))?;
    Ok((
        SettingsChange::new(name, None, &requested.by, from, &to),
        from,
    ))
}
