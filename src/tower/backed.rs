//! [`LayerBacking`] and [`CallThrough`]: what a [`FuseService`](super::FuseService)
//! does for each backing of its circuits. A circuit of this process admits
//! in `call` and the inner call starts there; a shared circuit's
//! admission is a round trip, so its call's future asks the store first.

use std::future::Future;
use std::sync::Arc;

use tower_service::Service;

use super::BoxError;
use super::carry::CarryPermit;
use super::classify::ClassifyResponse;
use super::future::ResponseFuture;
use crate::backing::{Backing, Local};
use crate::error::OpenError;
use crate::fuse::Fuse;
use crate::permit::OwnedPermit;
use crate::registry::Registry;

/// A backing whose circuits a [`FuseService`](super::FuseService) can
/// call through: [`Local`] and `store::Shared` (feature `store`), the only
/// backings there are.
///
/// ```
/// use fuse_breaker::backing::Local;
/// use fuse_breaker::tower::LayerBacking;
///
/// fn through<B: LayerBacking>() {}
/// through::<Local>();
/// ```
pub trait LayerBacking: Backing {
    /// What a [`SelectCircuit`](super::SelectCircuit) picks for a request:
    /// the circuit's permit or its rejection for a circuit of this
    /// process (`Result<OwnedPermit, OpenError>`), the circuit itself for
    /// a shared one (`Arc<SharedFuse>`), which the call's future asks.
    type Pick;

    /// The pick of `fuse`.
    fn pick(fuse: &Arc<Fuse<Self>>) -> Self::Pick;

    /// The pick of the circuit of `name` and `operation` in `registry`.
    fn pick_in(registry: &Registry<Self>, name: &str, operation: &str) -> Self::Pick;
}

/// How a [`FuseService`](super::FuseService) over circuits of this backing
/// calls its inner service `S` with a request `Req`, its verdicts given by
/// the classifier `C`. The crate implements it for each backing.
///
/// ```
/// use fuse_breaker::backing::Local;
/// use fuse_breaker::tower::{CallThrough, DefaultClassifier};
/// use tower::util::ServiceFn;
///
/// type Inner = ServiceFn<fn(()) -> std::future::Ready<Result<http::Response<()>, std::io::Error>>>;
/// fn through<B: CallThrough<Inner, (), DefaultClassifier>>() {}
/// through::<Local>();
/// ```
pub trait CallThrough<S, Req, C>: LayerBacking
where
    S: Service<Req>,
    C: ClassifyResponse<S::Response>,
    S::Response: CarryPermit<C::ClassifyEos>,
{
    /// The future of one call.
    type Future: Future<
        Output = Result<<S::Response as CarryPermit<C::ClassifyEos>>::Response, BoxError>,
    >;

    /// Calls `inner` (made ready by `poll_ready`) with `request` under
    /// what was picked for it.
    fn call(pick: Self::Pick, inner: &mut S, request: Req, classifier: &C) -> Self::Future;
}

impl LayerBacking for Local {
    type Pick = Result<OwnedPermit, OpenError>;

    #[inline]
    fn pick(fuse: &Arc<Fuse>) -> Self::Pick {
        fuse.try_acquire_owned()
    }

    #[inline]
    fn pick_in(registry: &Registry, name: &str, operation: &str) -> Self::Pick {
        registry.try_acquire(name, operation)
    }
}

impl<S, Req, C> CallThrough<S, Req, C> for Local
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: ClassifyResponse<S::Response> + Clone,
    S::Response: CarryPermit<C::ClassifyEos>,
{
    type Future = ResponseFuture<S::Future, C>;

    #[inline]
    fn call(pick: Self::Pick, inner: &mut S, request: Req, classifier: &C) -> Self::Future {
        match pick {
            Ok(permit) => ResponseFuture::called(inner.call(request), permit, classifier.clone()),
            Err(open) => ResponseFuture::rejected(classifier.reject(open)),
        }
    }
}
