//! A tower [`Layer`](tower_layer::Layer) and [`Service`](tower_service::Service)
//! that put a circuit in front of any service (feature `tower`).
//!
//! [`FuseLayer`] wraps a service in a [`FuseService`]: each call asks the
//! circuit for a permit, runs the inner call if it gets one, and ends the
//! permit with the verdict a [`ClassifyResponse`] classifier gives the
//! response. Its futures are `'static` ([`ResponseFuture`] owns its
//! permit), and a future dropped before it finishes is an ignore verdict,
//! so a cancelled call never holds a probe slot. The same layer puts a
//! circuit a fleet shares (`Fuse<store::Shared>`, feature `store`) in
//! front of a service: the call's future then asks the store for the
//! permit and gives it the verdict ([`LayerBacking`] says what each
//! backing does).
//!
//! ```
//! use std::sync::Arc;
//! use fuse_breaker::tower::{FuseLayer, open_error};
//! use fuse_breaker::{Config, Fuse};
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! let fuse = Arc::new(Fuse::new("billing", Config::builder().failure_threshold(2).build()?));
//! let billing = ServiceBuilder::new()
//!     .layer(FuseLayer::new(fuse.clone()))
//!     .service(service_fn(|_req: http::Request<String>| async {
//!         Ok::<_, std::io::Error>(http::Response::builder().status(503).body(String::new()).unwrap())
//!     }));
//!
//! futures::executor::block_on(async {
//!     for _ in 0..2 {
//!         // A counted status is a failure, and the response still reaches the caller.
//!         let res = billing.clone().oneshot(http::Request::new(String::new())).await?;
//!         assert_eq!(res.status(), 503);
//!     }
//!     // Open: the inner service is not called; the error is an `OpenError`.
//!     let err = billing.clone().oneshot(http::Request::new(String::new())).await.unwrap_err();
//!     let open = open_error(&*err).expect("rejected by the circuit");
//!     assert_eq!(open.key(), "fuse:billing");
//!     Ok::<_, fuse_breaker::tower::BoxError>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! ## Rejection happens in `call`, not in `poll_ready`
//!
//! [`FuseService::poll_ready`](tower_service::Service::poll_ready) only asks
//! the inner service. [`call`](tower_service::Service::call) asks the
//! circuit for a permit and, when the circuit rejects the call, returns a
//! future that is ready with the rejection and never calls the inner
//! service: an open circuit never sends the request. The alternatives are
//! worse:
//!
//! - a permit taken in `poll_ready` may never be used (a caller may drop a
//!   ready service, or a balancer may poll several and call one), and a
//!   half-open probe slot held that way would block the circuit;
//! - the state can change between `poll_ready` and `call`, so the answer of
//!   `poll_ready` would be stale anyway;
//! - a service that reports "not ready" while its circuit is open looks
//!   overloaded to balancers and `Buffer`s, which wait for it or evict it,
//!   instead of failing fast.
//!
//! When a rejected call does not call the inner service, whatever readiness
//! the inner service reserved in `poll_ready` (a concurrency-limit permit,
//! a buffer slot) stays reserved for the next call, as with tower's own
//! `LoadShed` or `Filter`.
//!
//! ## Errors
//!
//! The service's error type is [`BoxError`], tower's convention (its
//! `Timeout` layer does the same): when the circuit is open the error is an
//! [`OpenError`] (with its
//! [`retry_after`](OpenError::retry_after)), found with
//! [`open_error`] or `err.downcast_ref::<OpenError>()`; otherwise it is the
//! inner service's error, boxed. A server turns the rejection into
//! `503 Service Unavailable` with a `Retry-After` header with
//! [`open_response`]. With the `tonic` feature, `grpc::GrpcClassifier`
//! rejects with a `tonic::Status` (`UNAVAILABLE`) that has the `OpenError`
//! as its source.
//!
//! ## A call a closed circuit shed
//!
//! A closed circuit that grades its admission (SPEC §11: a ramp-up after
//! it recovers, `ramp_up`; adaptive throttling, `throttle_k`) rejects the
//! calls it sheds with an [`OpenError`] too, which the inner service never
//! sees either. It is told apart by
//! [`throttled`](OpenError::throttled) (`Some(Grading::RampUp)` or
//! `Some(Grading::Throttle)`), and it asks no one to wait: its
//! [`retry_after`](OpenError::retry_after) is zero. So:
//!
//! - the service's error is that `OpenError`, boxed (or what the
//!   classifier's [`reject`](ClassifyResponse::reject) makes of it), found
//!   with [`open_error`] as any rejection;
//! - [`open_response`] answers `503 Service Unavailable` with
//!   `Retry-After: 0` and a body that says the circuit is closed and shed
//!   the call, and why (`ramp_up` or `throttle`), where an open circuit's
//!   says it is open and its `Retry-After` counts the cooldown down;
//! - `grpc::open_status` (feature `tonic`) is `UNAVAILABLE` with that
//!   message and no retry pushback (see its documentation), the
//!   `OpenError` its source.
//!
//! ```
//! use std::time::Duration;
//! use fuse_breaker::tower::{open_error, open_response};
//! use fuse_breaker::{Config, Fuse, Grading};
//!
//! // Recovered a moment ago: the ramp admits 1 % of calls at first.
//! let (clock, mock) = quanta::Clock::mock();
//! let config = Config::builder()
//!     .failure_threshold(1)
//!     .half_open_probes(1)
//!     .ramp_up(Duration::from_secs(100))
//!     .ramp_up_floor(1)
//!     .build()?;
//! let fuse = Fuse::builder("billing").clock(clock).config(config).build();
//! fuse.force_open();
//! mock.increment(Duration::from_secs(30));
//! fuse.try_acquire()?.success(); // the probe closes it
//!
//! let shed = std::iter::repeat_with(|| fuse.try_acquire())
//!     .find_map(Result::err)
//!     .expect("the ramp sheds nearly every call");
//! assert_eq!(shed.throttled(), Some(Grading::RampUp));
//! let res = open_response(&shed);
//! assert_eq!(res.status(), http::StatusCode::SERVICE_UNAVAILABLE);
//! assert_eq!(res.headers()[http::header::RETRY_AFTER], "0");
//! assert!(res.body().contains("is closed and shed this call (ramp_up)"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Classification
//!
//! A [`ClassifyResponse`] classifier is a pure rule, as tower-http's are: a
//! reference to the response (or the error) in, a [`Classification`] out
//! (the [`Verdict`](crate::Verdict) and an optional retry-after hint). It never touches the
//! permit or the response: the layer's future ends the permit with the
//! verdict and hands the response on as it came. A classifier whose
//! verdict is in the trailers (gRPC) answers
//! [`Classified::RequiresEos`] with a `ClassifyEos` that judges the end of
//! the body, and the response's body holds the permit until then
//! (`ClassifiedBody`, feature `tonic`). The classifiers:
//!
//! - [`DefaultClassifier`] (the default) for `http::Response`s: a status
//!   the circuit's [`Config`](crate::Config) counts (502, 503 and 504 by
//!   default, 500 when `count_http_500` is set) is a counted failure, and
//!   the response is still returned; its `Retry-After` is the server's
//!   hint of when to come back, which keeps the circuit it opens open that
//!   long, capped at `max_open_duration` (SPEC §10); other statuses of 400
//!   and above are ignored; anything else is a success;
//! - [`OkIsSuccess`] for services whose responses are not HTTP: every
//!   response is a success;
//! - [`classify_fn`] for a closure `Fn(&Res, &Config) -> Verdict` (or
//!   `-> Classification`);
//! - `grpc::GrpcClassifier` (feature `tonic`) for gRPC.
//!
//! Every classifier sees the inner service's errors boxed, exactly as the
//! caller gets them; by default they go through
//! [`classify_error`](crate::classify::classify_error) (the source chain, then the
//! messages: timeouts and connection errors count, anything else is
//! ignored).
//!
//! ## One circuit or one per operation
//!
//! [`FuseLayer::new`] puts one circuit in front of every request;
//! [`FuseLayer::per_operation`] picks the circuit of each request from a
//! [`Registry`](crate::Registry) by an operation that a function reads from
//! the request (its path, its gRPC method), so that `charge` and `refund`
//! trip separately. Each distinct operation is a circuit for the life of
//! the registry: map requests to a bounded set of names (not raw paths with
//! identifiers in them).

mod backed;
mod carry;
mod classify;
#[cfg(feature = "tonic")]
mod eos;
mod future;
#[cfg(feature = "tonic")]
pub mod grpc;
mod layer;
mod pending;
mod select;
mod service;
#[cfg(feature = "store")]
mod shared;
#[cfg(feature = "store")]
mod shared_future;

use std::error::Error as StdError;

pub use backed::{CallThrough, LayerBacking};
pub use carry::CarryPermit;
pub use classify::{
    Classification, Classified, ClassifyFn, ClassifyResponse, DefaultClassifier, NeverClassifyEos,
    OkIsSuccess, classify_fn,
};
#[cfg(feature = "tonic")]
pub use eos::{ClassifiedBody, ClassifyEos};
pub use future::ResponseFuture;
pub use layer::FuseLayer;
pub use pending::PendingPermit;
pub use select::{OneCircuit, PerOperation, SelectCircuit};
pub use service::FuseService;
#[cfg(feature = "store")]
pub use shared_future::SharedResponseFuture;

use crate::error::OpenError;

/// The error type of a [`FuseService`]: an [`OpenError`] when the circuit
/// rejected the call, the inner service's error otherwise.
///
/// ```
/// use fuse_breaker::tower::{BoxError, open_error};
/// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
/// fuse.force_open();
/// let err: BoxError = Box::new(fuse.try_acquire().unwrap_err());
/// assert!(err.downcast_ref::<fuse_breaker::OpenError>().is_some());
/// ```
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// The [`OpenError`] in `error` or in its source chain, if the error is a
/// rejection by a circuit.
///
/// ```
/// use fuse_breaker::tower::{BoxError, open_error};
///
/// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
/// fuse.force_open();
/// let err: BoxError = Box::new(fuse.try_acquire().unwrap_err());
/// assert_eq!(open_error(&*err).map(|open| open.name()), Some("billing"));
///
/// let other: BoxError = "card declined".into();
/// assert!(open_error(&*other).is_none());
/// ```
pub fn open_error<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a OpenError> {
    let mut next = Some(error);
    while let Some(err) = next {
        if let Some(open) = err.downcast_ref::<OpenError>() {
            return Some(open);
        }
        next = err.source();
    }
    None
}

/// The answer of a server whose downstream circuit is open:
/// `503 Service Unavailable`, a `Retry-After` header with the rest of the
/// cooldown in whole seconds (rounded up), and the rejection as a plain
/// text body. `http::Response<String>` is an axum `IntoResponse` and a
/// hyper response as it is; `.map(Into::into)` turns its body into another
/// body type.
///
/// A call a closed circuit shed (SPEC §11,
/// [`OpenError::throttled`]) is answered `503` with `Retry-After: 0`: it
/// has nothing to wait for, and its body says the circuit is closed and
/// shed it, and why (see the [module docs](self#a-call-a-closed-circuit-shed)).
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::tower::open_response;
///
/// let (clock, mock) = quanta::Clock::mock();
/// let fuse = fuse_breaker::Fuse::builder("billing").clock(clock).build();
/// fuse.force_open();
/// mock.increment(Duration::from_millis(28_500)); // 1.5 s of the 30 s cooldown left
///
/// let res = open_response(&fuse.try_acquire().unwrap_err());
/// assert_eq!(res.status(), http::StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(res.headers()[http::header::RETRY_AFTER], "2");
/// assert!(res.body().starts_with("circuit fuse:billing is open"));
/// ```
pub fn open_response(open: &OpenError) -> http::Response<String> {
    let retry_after = open.retry_after();
    let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    let mut res = http::Response::new(open.to_string());
    *res.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    let headers = res.headers_mut();
    headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}
