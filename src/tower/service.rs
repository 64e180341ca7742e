//! [`FuseService`]: a service behind a circuit.

use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

use super::BoxError;
use super::backed::{CallThrough, LayerBacking};
use super::carry::CarryPermit;
use super::classify::{ClassifyResponse, DefaultClassifier};
use super::select::{OneCircuit, SelectCircuit};
use crate::fuse::Fuse;

/// A service behind a circuit (built by [`FuseLayer`](super::FuseLayer)).
///
/// [`poll_ready`](Service::poll_ready) only asks the inner service;
/// [`call`](Service::call) asks the circuit for a permit and, when the
/// circuit rejects the call, returns a ready error without calling the
/// inner service (see the [module docs](super) for why). The error type is
/// [`BoxError`]: an [`OpenError`](crate::OpenError) when rejected (with
/// [`DefaultClassifier`]), the inner service's error otherwise.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::{FuseService, open_error};
/// use fuse_breaker::Fuse;
/// use tower::{ServiceExt, service_fn};
///
/// let fuse = Arc::new(Fuse::new("billing", Default::default()));
/// let inner = service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new(()))
/// });
/// let svc = FuseService::new(inner, fuse.clone());
/// fuse.force_open();
/// let err = futures::executor::block_on(svc.oneshot(http::Request::new(()))).unwrap_err();
/// assert!(open_error(&*err).is_some());
/// ```
#[derive(Clone, Debug)]
pub struct FuseService<S, P = OneCircuit, C = DefaultClassifier> {
    inner: S,
    select: P,
    classifier: C,
}

impl<S, B: LayerBacking> FuseService<S, OneCircuit<B>> {
    /// `inner` behind `fuse`, classified by [`DefaultClassifier`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let svc = fuse_breaker::tower::FuseService::new((), fuse);
    /// assert_eq!(svc.selector().fuse().name(), "billing");
    /// ```
    pub fn new(inner: S, fuse: Arc<Fuse<B>>) -> Self {
        FuseService::from_parts(inner, OneCircuit::new(fuse), DefaultClassifier)
    }
}

impl<S, P, C> FuseService<S, P, C> {
    /// `inner` behind the circuits `select` picks, classified by
    /// `classifier`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::{FuseService, OkIsSuccess, OneCircuit};
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let svc = FuseService::from_parts((), OneCircuit::new(fuse), OkIsSuccess);
    /// assert_eq!(*svc.get_classifier(), OkIsSuccess);
    /// ```
    pub fn from_parts(inner: S, select: P, classifier: C) -> Self {
        FuseService {
            inner,
            select,
            classifier,
        }
    }

    /// The inner service.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(*fuse_breaker::tower::FuseService::new(7, fuse).get_ref(), 7);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let mut svc = fuse_breaker::tower::FuseService::new(7, fuse);
    /// *svc.get_mut() += 1;
    /// assert_eq!(*svc.get_ref(), 8);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(fuse_breaker::tower::FuseService::new(7, fuse).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The circuit selector.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let svc = fuse_breaker::tower::FuseService::new((), fuse);
    /// assert_eq!(svc.selector().fuse().key(), "fuse:billing");
    /// ```
    pub fn selector(&self) -> &P {
        &self.select
    }

    /// The classifier.
    ///
    /// ```
    /// use fuse_breaker::tower::{DefaultClassifier, FuseService};
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(*FuseService::new((), fuse).get_classifier(), DefaultClassifier);
    /// ```
    pub fn get_classifier(&self) -> &C {
        &self.classifier
    }
}

impl<S, Req, P, C> Service<Req> for FuseService<S, P, C>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    P: SelectCircuit<Req>,
    P::Backing: CallThrough<S, Req, C>,
    C: ClassifyResponse<S::Response>,
    S::Response: CarryPermit<C::ClassifyEos>,
{
    type Response = <S::Response as CarryPermit<C::ClassifyEos>>::Response;
    type Error = BoxError;
    type Future = <P::Backing as CallThrough<S, Req, C>>::Future;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        let pick = self.select.select(&request);
        P::Backing::call(pick, &mut self.inner, request, &self.classifier)
    }
}
