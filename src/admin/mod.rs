//! See and steer circuits over HTTP (feature `admin`): an axum router
//! with a JSON API, a stream of transitions and a live dashboard page.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /` | the dashboard: one HTML page, its style and script inside |
//! | `GET /circuits?limit=N&after=KEY` | a [`CircuitList`]: up to `N` (default 1000, at most 5000) circuits by key, after `KEY` |
//! | `GET /circuits/{key}` | one [`CircuitView`] |
//! | `POST /circuits/{key}/open`, `/close`, `/reset` | the change, then the [`CircuitView`] |
//! | `PUT /circuits/{key}/settings` | the circuit's settings changed in place (SPEC §12), then a [`SettingsChange`] |
//! | `PUT /names/{name}/settings` | the registry's settings of a name changed, for its circuits and those to come, then a [`SettingsChange`] |
//! | `GET /events` | server-sent events: `transition` ([`TransitionView`]) per transition as it happens, `lagged` (`{"missed": n}`) when a stream fell behind |
//!
//! **The token.** Writes need `Authorization: Bearer <token>` with the
//! token the application gives [`Admin::token`]; without one they are off
//! (`403 read_only`). [`Admin::private_reads`] makes every read need it
//! too (the page itself is static and stays public; it asks for the
//! token). Every refusal is an [`ApiError`]: a 4xx or 5xx status and
//! `{"error": "...", "code": "..."}`.
//!
//! **Settings.** A `PUT` of settings needs the token; its body is a JSON
//! object of settings by name (those of
//! [`Overrides`](crate::config::Overrides)), each value a number, a
//! boolean, a list of numbers, `null` (none), or the text a `FUSE_*`
//! variable would hold (`{"failure_threshold": 3, "open_duration": "10s",
//! "slow_call_duration": null}`). The settings are checked whole against
//! the circuit's (or the name's) current ones and put in force in place,
//! or refused with nothing changed: `422 invalid_setting` for a setting
//! that does not exist or a value a rule refuses, `409 not_in_place` for
//! one a running circuit cannot take, each naming it. A caller may name
//! itself in `X-Fuse-Changed-By` (printable ASCII, at most 64 bytes): the
//! change's event says `admin (NAME)` (`admin` without it). Settings are
//! each process's own: a change reaches the circuits of the process that
//! serves the API, a shared circuit's included, and writes nothing to its
//! store. A name's change is made in every registry the API serves, or in
//! none when one refuses it.
//!
//! **Hosts.** The API answers to loopback names (`localhost`,
//! `127.0.0.1`, `[::1]`, any port) and to the hosts given to
//! [`Admin::allow_host`] (or to any, with [`Admin::any_host`]); a request
//! that names another host is refused (`403 host_not_allowed`), as a page
//! on another site that points a name of its own at this address would
//! send (DNS rebinding). Every answer says `X-Content-Type-Options:
//! nosniff`; the page runs its own script and style only (named by hash
//! in its Content-Security-Policy).
//!
//! **Policies.** A view says which rule opens the closed circuit
//! ([`ConfigView::policy`], SPEC §9). Under `count` the window is its
//! [`failures`](CircuitView::failures) against
//! [`failure_threshold`](ConfigView::failure_threshold); under `rate` it
//! is [`calls`](CircuitView::calls), [`failed`](CircuitView::failed) and
//! [`slow`](CircuitView::slow), against `failure_rate`, `minimum_calls`,
//! `slow_call_rate` and `slow_call_duration_ms` of the
//! [`config`](CircuitView::config); the page draws each as such.
//!
//! **Mounting.** [`Admin::router`] builds an [`axum::Router`] (a tower
//! service), or says with a [`BuildError`] which setting no request could
//! satisfy; nest it under any prefix. The page is then at the prefix
//! itself (`/admin/fuse`, which is how axum nests `/`) and finds the API
//! from its own address.
//!
//! ```
//! use std::sync::Arc;
//! use fuse_breaker::{Registry, admin::Admin};
//!
//! let registry = Arc::new(Registry::new(Default::default()));
//! let admin = Admin::new().registry(registry.clone()).token("s3cret").router()?;
//! let app: axum::Router = axum::Router::new().nest("/admin/fuse", admin);
//! # let _ = app;
//! # Ok::<(), fuse_breaker::admin::BuildError>(())
//! ```
//!
//! Shared circuits (feature `store`) are served from a
//! [`SharedRegistry`](crate::store::SharedRegistry) with [`Admin::shared`]:
//! their state is read from the store, so the page shows the fleet's
//! circuit; the events are the transitions this process makes (the list,
//! read again every two seconds by the page, shows the others). Those
//! reads are bounded ([`Admin::store_reads_per_second`]).

use std::sync::Arc;

mod auth;
mod build_error;
mod circuits;
mod config_view;
mod error;
mod events;
mod hosts;
mod page;
#[cfg(feature = "store")]
mod reads;
mod routes;
mod settings;
mod view;

pub use build_error::BuildError;
pub use error::ApiError;
pub use settings::{SettingChange, SettingsChange};
pub use view::{CircuitList, CircuitView, ConfigView, TransitionView};

use auth::Access;
use circuits::Circuits;
use events::EventStreams;
use hosts::{Host, Hosts};
use routes::Served;

/// Event streams open at once, unless the application says.
const DEFAULT_MAX_STREAMS: usize = 64;

/// An admin API: what it serves, and who may change it.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::{Registry, admin::Admin};
///
/// let registry = Arc::new(Registry::new(Default::default()));
/// let router: axum::Router = Admin::new()
///     .registry(registry)
///     .token(std::env::var("FUSE_ADMIN_TOKEN").unwrap_or_else(|_| "s3cret".into()))
///     .private_reads(true)
///     .router()?;
/// # let _ = router;
/// # Ok::<(), fuse_breaker::admin::BuildError>(())
/// ```
#[derive(Debug, Default)]
pub struct Admin {
    circuits: Circuits,
    token: Option<String>,
    private_reads: bool,
    max_streams: Option<usize>,
    hosts: Hosts,
    /// The first allowed host that is not one.
    bad_host: Option<BuildError>,
}

impl Admin {
    /// An admin API that serves no circuit yet, read only.
    ///
    /// ```
    /// let router: axum::Router = fuse_breaker::admin::Admin::new().router()?;
    /// # let _ = router;
    /// # Ok::<(), fuse_breaker::admin::BuildError>(())
    /// ```
    pub fn new() -> Self {
        Admin::default()
    }

    /// Serves the in-process circuits of `registry`, those that exist and
    /// those to come.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let admin = fuse_breaker::admin::Admin::new().registry(registry);
    /// # let _ = admin;
    /// ```
    #[must_use]
    pub fn registry(mut self, registry: Arc<crate::Registry>) -> Self {
        self.circuits.local = Some(registry);
        self
    }

    /// Serves the shared circuits this process keeps in `registry` (read
    /// from their store; a key that is also an in-process circuit's is the
    /// shared one).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let shared = Arc::new(fuse_breaker::Registry::builder().defaults(Default::default()).store(Arc::new(MemoryStore::new())).build().expect("defaults alone are valid"));
    /// let admin = fuse_breaker::admin::Admin::new().shared(shared);
    /// # let _ = admin;
    /// ```
    #[cfg(feature = "store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "store")))]
    #[must_use]
    pub fn shared(mut self, registry: Arc<crate::store::SharedRegistry>) -> Self {
        self.circuits.shared = Some(registry);
        self
    }

    /// The most shared circuits the lists read from their store in a
    /// second (default 1000; at least 1): one list reads at most that
    /// many, and all lists together at most that many a second more, so
    /// that a request cannot make the store answer thousands of reads.
    /// Each reading also serves every answer for a second. A circuit a
    /// list cannot read in its turn is listed with the state `unread`
    /// (those read longest ago go first, so the next list reads it); one
    /// circuit asked for alone (`GET /circuits/{key}`) is read all the
    /// same.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedRegistry};
    /// let shared = Arc::new(fuse_breaker::Registry::builder().defaults(Default::default()).store(Arc::new(MemoryStore::new())).build().expect("defaults alone are valid"));
    /// let admin = fuse_breaker::admin::Admin::new().shared(shared).store_reads_per_second(200);
    /// # let _ = admin;
    /// ```
    #[cfg(feature = "store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "store")))]
    #[must_use]
    pub fn store_reads_per_second(mut self, reads: u32) -> Self {
        self.circuits.reads = reads::Reads::new(reads);
        self
    }

    /// The admin token: open, close and reset need
    /// `Authorization: Bearer <token>`. Without one (or with an empty one)
    /// they are off. A token a bearer header cannot carry (RFC 6750:
    /// ASCII letters, digits and `-._~+/`, then `=` at the end only; so no
    /// space, line break or non-ASCII character) makes
    /// [`router`](Self::router) fail with [`BuildError::Token`], rather
    /// than serve an API that says it is writable while every write fails.
    ///
    /// ```
    /// let admin = fuse_breaker::admin::Admin::new().token("s3cret");
    /// # let _ = admin;
    /// ```
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Whether reads (the list, a circuit, the events) need the token too
    /// (default `false`). With no token set, nobody may read.
    ///
    /// ```
    /// let admin = fuse_breaker::admin::Admin::new().token("s3cret").private_reads(true);
    /// # let _ = admin;
    /// ```
    #[must_use]
    pub fn private_reads(mut self, private: bool) -> Self {
        self.private_reads = private;
        self
    }

    /// The most event streams open at once for clients without the admin
    /// token (default 64); one more is refused with
    /// `503 too_many_streams`. Clients that bring the token have as many
    /// slots of their own (and take the others once theirs are full), so
    /// that anonymous streams cannot lock the operator out.
    ///
    /// ```
    /// let admin = fuse_breaker::admin::Admin::new().max_streams(8);
    /// # let _ = admin;
    /// ```
    #[must_use]
    pub fn max_streams(mut self, max: usize) -> Self {
        self.max_streams = Some(max);
        self
    }

    /// A host the API answers to besides loopback (`localhost`,
    /// `127.0.0.0/8`, `[::1]`, which it always answers to): a name or an
    /// IP address, any port (`fuse.example.com`), or with a port, that
    /// port only (`10.0.0.5:8080`). Requests that name another host in
    /// `Host` are refused (`403 host_not_allowed`): that is what a page
    /// on another site sends when it points a name of its own at this
    /// address (DNS rebinding). An application that listens on another
    /// address than loopback allows that address
    /// (`listener.local_addr()?.to_string()`), and one behind a proxy the
    /// names the proxy forwards; one that is not a host makes
    /// [`router`](Self::router) fail with [`BuildError::Host`].
    ///
    /// ```
    /// let router = fuse_breaker::admin::Admin::new()
    ///     .allow_host("fuse.example.com")
    ///     .allow_host("10.0.0.5:8080")
    ///     .router()?;
    /// # let _ = router;
    /// # Ok::<(), fuse_breaker::admin::BuildError>(())
    /// ```
    #[must_use]
    pub fn allow_host(mut self, host: &str) -> Self {
        match Host::allowed(host) {
            Ok(host) => {
                if let Hosts::Listed(hosts) = &mut self.hosts {
                    hosts.push(host);
                }
            }
            Err(err) => {
                self.bad_host.get_or_insert(err);
            }
        }
        self
    }

    /// Answers whatever host a request names: for an application behind
    /// a proxy that checks `Host` itself (or one that nobody's browser can
    /// reach). See [`allow_host`](Self::allow_host).
    ///
    /// ```
    /// let router = fuse_breaker::admin::Admin::new().any_host().router()?;
    /// # let _ = router;
    /// # Ok::<(), fuse_breaker::admin::BuildError>(())
    /// ```
    #[must_use]
    pub fn any_host(mut self) -> Self {
        self.hosts = Hosts::Any;
        self
    }

    /// The router, or the [`BuildError`] that names the setting no
    /// request could satisfy. Its transitions listener is registered on
    /// the registries once the router is built (one per router).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let router = fuse_breaker::admin::Admin::new().registry(registry).router()?;
    /// let app: axum::Router = axum::Router::new().nest("/fuse", router);
    /// # let _ = app;
    /// # Ok::<(), fuse_breaker::admin::BuildError>(())
    /// ```
    pub fn router(self) -> Result<axum::Router, BuildError> {
        if let Some(err) = self.bad_host {
            return Err(err);
        }
        let access = Access::new(self.token.as_deref(), self.private_reads)?;
        let events = EventStreams::new(self.max_streams.unwrap_or(DEFAULT_MAX_STREAMS));
        if let Some(registry) = &self.circuits.local {
            registry.on_transition(events.listener());
        }
        #[cfg(feature = "store")]
        if let Some(registry) = &self.circuits.shared {
            registry.on_transition(events.listener());
        }
        let served = Served {
            circuits: self.circuits,
            access,
            events,
        };
        let router = routes::routes(served).layer(axum::middleware::from_fn_with_state(
            Arc::new(self.hosts),
            hosts::guard,
        ));
        Ok(router)
    }
}
