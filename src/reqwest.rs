//! A [`reqwest-middleware`](reqwest_middleware) middleware that puts a
//! circuit in front of every request of a client (feature `reqwest`).
//!
//! [`FuseMiddleware`] takes each request's circuit from a
//! [`Registry`]: one per host by default (the circuit's name is the URL's
//! `host[:port]`, the port only when the URL spells it), or one fixed name
//! for every request. A request carrying an [`Operation`] extension goes
//! through that operation's circuit, so operations of one host trip
//! separately.
//!
//! The verdicts:
//!
//! - a response with a status the circuit counts ([`Config`]: 502, 503 and
//!   504 by default, 500 with `count_http_500`) is a counted failure and is
//!   still returned; other statuses of 400 and above are ignored; anything
//!   else is a success ([`Verdict::for_status`]). A counted failure's
//!   `Retry-After` (seconds, or an HTTP date read against the wall clock)
//!   is the server's hint: if that failure opens the circuit, it stays
//!   open at least that long, capped at
//!   [`max_open_duration`](Config::max_open_duration) (SPEC §10). A
//!   `Retry-After` that cannot be read is ignored, and counted
//!   (`fuse_hints_malformed_total`, feature `metrics`; a DEBUG event,
//!   feature `tracing`);
//! - a `reqwest::Error` that [`is_timeout`](::reqwest::Error::is_timeout)
//!   is a timeout, one that [`is_connect`](::reqwest::Error::is_connect) a
//!   connection error; any other error is classified by its source chain
//!   ([`classify_error`](crate::classify::classify_error)): an upstream that resets
//!   the connection, closes it before answering or answers what is not
//!   HTTP (hyper's error says so) is a connection error; the caller's own
//!   error (a request body that fails, a body that fails to decode) is
//!   not counted;
//! - a request future dropped before it finishes is an ignore verdict.
//!
//! When the circuit is open the request never leaves the process: the
//! caller gets `reqwest_middleware::Error::Middleware` wrapping the
//! [`OpenError`]. Recover it with [`open_error`], or by hand:
//!
//! ```
//! # fn check(err: reqwest_middleware::Error) {
//! use fuse_breaker::OpenError;
//! if let reqwest_middleware::Error::Middleware(err) = &err {
//!     if let Some(open) = err.downcast_ref::<OpenError>() {
//!         println!("{} is open, retry in {:?}", open.key(), open.retry_after());
//!     }
//! }
//! # }
//! ```
//!
//! A closed circuit that grades its admission (SPEC §11: a ramp-up after
//! it recovers, adaptive throttling) rejects the calls it sheds the same
//! way: the request never leaves, and the error wraps an [`OpenError`]
//! whose [`throttled`](OpenError::throttled) says why
//! (`Some(Grading::RampUp)` or `Some(Grading::Throttle)`) and whose
//! [`retry_after`](OpenError::retry_after) is zero: nothing to wait for,
//! where an open circuit's is the rest of its cooldown.
//!
//! ```
//! # fn check(err: reqwest_middleware::Error) {
//! use fuse_breaker::reqwest::open_error;
//! match open_error(&err) {
//!     Some(open) => match open.throttled() {
//!         Some(why) => println!("{} shed the request ({why})", open.key()),
//!         None => println!("{} is open, retry in {:?}", open.key(), open.retry_after()),
//!     },
//!     None => println!("the request failed: {err}"),
//! }
//! # }
//! ```
//!
//! Where the middleware sits decides what a circuit counts: placed after a
//! retry middleware (`.with(retry).with(fuse)`), every attempt is a call of
//! the circuit and an open circuit fails the remaining attempts at once;
//! placed before it, one retried request is one call.
//!
//! ```
//! use std::sync::Arc;
//! use fuse_breaker::reqwest::{FuseMiddleware, Operation, open_error};
//! use fuse_breaker::{Config, Registry, State};
//!
//! // A port nobody listens on: every request is refused.
//! let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
//! let registry = Arc::new(Registry::new(Config::builder().failure_threshold(2).build()?));
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(FuseMiddleware::per_host(registry.clone()))
//!     .build();
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! runtime.block_on(async {
//!     let url = format!("http://127.0.0.1:{port}/charge");
//!     for _ in 0..2 {
//!         let err = client.get(&url).with_extension(Operation::new("charge")).send().await.unwrap_err();
//!         assert!(err.is_connect());
//!     }
//!     let host = format!("127.0.0.1:{port}");
//!     assert_eq!(registry.get_operation(&host, "charge").state(), State::Open);
//!
//!     // Rejected without a connection attempt.
//!     let err = client.get(&url).with_extension(Operation::new("charge")).send().await.unwrap_err();
//!     assert_eq!(open_error(&err).unwrap().name(), host);
//!     // Another operation of the same host has a circuit of its own.
//!     let err = client.get(&url).with_extension(Operation::new("refund")).send().await.unwrap_err();
//!     assert!(open_error(&err).is_none());
//! });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use ::reqwest::{Request, Response};
use http::Extensions;
use reqwest_middleware::{Error, Middleware, Next};

use crate::backing::{Backing, Local};
use crate::classify::FailureKind;
use crate::config::Config;
use crate::error::OpenError;
use crate::hint::{self, Hint};
use crate::registry::Registry;
use crate::verdict::Verdict;

/// The operation of a request: a request extension that sends it through
/// its own circuit (`registry.get_operation(name, operation)`). Insert it
/// with `reqwest_middleware::RequestBuilder::with_extension`.
///
/// Each distinct operation is a circuit for the life of the registry:
/// use a bounded set of names.
///
/// ```
/// use fuse_breaker::reqwest::Operation;
///
/// # fn build(client: reqwest_middleware::ClientWithMiddleware) {
/// let request = client
///     .post("http://billing.internal/v1/charges")
///     .with_extension(Operation::new("charge"));
/// # }
/// assert_eq!(Operation::new("charge").as_str(), "charge");
/// assert_eq!(Operation::new(format!("refund-{}", 2)).as_str(), "refund-2");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operation(Cow<'static, str>);

impl Operation {
    /// An operation named `name` (a `&'static str` or a `String`).
    ///
    /// ```
    /// let op = fuse_breaker::reqwest::Operation::new("charge");
    /// assert_eq!(op.as_str(), "charge");
    /// ```
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        Operation(name.into())
    }

    /// The operation's name.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::reqwest::Operation::new("refund").as_str(), "refund");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A `reqwest-middleware` middleware that sends each request through its
/// circuit (see the [module docs](self)).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::reqwest::FuseMiddleware;
/// use fuse_breaker::Registry;
///
/// let registry = Arc::new(Registry::new(Default::default()));
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(FuseMiddleware::per_host(registry))
///     .build();
/// # drop(client);
/// ```
pub struct FuseMiddleware<B: Backing = Local> {
    registry: Arc<Registry<B>>,
    /// `None`: one circuit per host.
    name: Option<Arc<str>>,
}

impl<B: Backing> FuseMiddleware<B> {
    /// A circuit per host: the circuit of a request to
    /// `http://billing.internal:8080/charge` is named
    /// `billing.internal:8080` (`billing.internal` when the URL has no
    /// port).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let middleware = fuse_breaker::reqwest::FuseMiddleware::per_host(registry);
    /// assert_eq!(middleware.name(), None);
    /// ```
    pub fn per_host(registry: Arc<Registry<B>>) -> Self {
        FuseMiddleware {
            registry,
            name: None,
        }
    }

    /// One circuit named `name` for every request (and one per
    /// [`Operation`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let middleware = fuse_breaker::reqwest::FuseMiddleware::named(registry, "billing");
    /// assert_eq!(middleware.name(), Some("billing"));
    /// ```
    pub fn named(registry: Arc<Registry<B>>, name: impl Into<String>) -> Self {
        FuseMiddleware {
            registry,
            name: Some(name.into().into()),
        }
    }

    /// The fixed circuit name, or `None` for a circuit per host.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// assert_eq!(fuse_breaker::reqwest::FuseMiddleware::per_host(registry).name(), None);
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The registry the circuits live in.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let middleware = fuse_breaker::reqwest::FuseMiddleware::per_host(registry.clone());
    /// assert!(Arc::ptr_eq(middleware.registry(), &registry));
    /// ```
    pub fn registry(&self) -> &Arc<Registry<B>> {
        &self.registry
    }
}

impl<B: Backing> fmt::Debug for FuseMiddleware<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FuseMiddleware")
            .field("name", &self.name.as_deref().unwrap_or("<per host>"))
            .field("registry", &self.registry)
            .finish()
    }
}

fn host_and_port(request: &Request) -> &str {
    let authority = request.url().authority();
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

impl<B: crate::backing::Backing> FuseMiddleware<B> {
    /// The name and operation of the circuit `request` goes through.
    fn circuit<'a>(
        &'a self,
        request: &'a Request,
        extensions: &'a Extensions,
    ) -> (&'a str, &'a str) {
        let operation = extensions.get::<Operation>().map_or("", Operation::as_str);
        let name = self
            .name
            .as_deref()
            .unwrap_or_else(|| host_and_port(request));
        (name, operation)
    }
}

// One implementation per backing: admission differs (a local circuit
// decides at once, a shared one asks its store), and each is the whole
// boxed future `reqwest-middleware` asks for, with no second box inside.
#[async_trait::async_trait]
impl Middleware for FuseMiddleware {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let (name, operation) = self.circuit(&request, extensions);
        let permit = self
            .registry
            .try_acquire(name, operation)
            .map_err(Error::middleware)?;
        let outcome = next.run(request, extensions).await;
        let (verdict, hint) = judge(&outcome, permit.config());
        hint::conclude(permit, verdict, hint);
        outcome
    }
}

#[cfg(feature = "store")]
#[async_trait::async_trait]
impl Middleware for FuseMiddleware<crate::store::Shared> {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let (name, operation) = self.circuit(&request, extensions);
        let fuse = self.registry.get_operation(name, operation);
        let permit = fuse.acquire_in_place().await.map_err(Error::middleware)?;
        let outcome = next.run(request, extensions).await;
        // A verdict the store could not take is reported to the circuit's
        // listeners; the response is the caller's all the same.
        let (verdict, hint) = judge(&outcome, fuse.config());
        let _ = permit.conclude_hinted(verdict, hint).await;
        outcome
    }
}

/// The verdict on what the rest of the chain returned, and the server's
/// hint of a counted failure.
fn judge(outcome: &reqwest_middleware::Result<Response>, config: &Config) -> (Verdict, Hint) {
    match outcome {
        Ok(response) => {
            let verdict = Verdict::for_status(response.status().as_u16(), config);
            let hint = if verdict == Verdict::Failure {
                Hint::retry_after(response.headers())
            } else {
                Hint::None
            };
            (verdict, hint)
        }
        Err(Error::Reqwest(err)) => (reqwest_verdict(err, config), Hint::None),
        Err(Error::Middleware(err)) => {
            let err: &(dyn StdError + Send + Sync + 'static) = err.as_ref();
            (Verdict::for_error(err, config), Hint::None)
        }
    }
}

/// The verdict on an error of the reqwest client.
fn reqwest_verdict(err: &::reqwest::Error, config: &Config) -> Verdict {
    if err.is_timeout() {
        Verdict::for_kind(FailureKind::Timeout, config)
    } else if err.is_connect() {
        Verdict::for_kind(FailureKind::Connection, config)
    } else {
        Verdict::for_error(err, config)
    }
}

/// The [`OpenError`] of a request that a circuit rejected, if `error` is
/// one: it is in `reqwest_middleware::Error::Middleware`. A request a
/// closed circuit shed (SPEC §11) is one too, its
/// [`throttled`](OpenError::throttled) saying why.
///
/// ```
/// use fuse_breaker::reqwest::open_error;
///
/// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
/// fuse.force_open();
/// let err = reqwest_middleware::Error::middleware(fuse.try_acquire().unwrap_err());
/// assert_eq!(open_error(&err).unwrap().key(), "fuse:billing");
///
/// let other = reqwest_middleware::Error::middleware(std::io::Error::other("declined"));
/// assert!(open_error(&other).is_none());
/// ```
pub fn open_error(error: &Error) -> Option<&OpenError> {
    let Error::Middleware(err) = error else {
        return None;
    };
    #[cfg(feature = "store")]
    if let Some(refusal) = err.downcast_ref::<crate::store::Refusal>() {
        return refusal.open_error();
    }
    err.downcast_ref::<OpenError>()
}
