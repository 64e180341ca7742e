//! [`SharedFuseLayer`]: the layer over a circuit a fleet shares through a
//! store (features `tower` and `store`).

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use super::BoxError;
use super::carry::CarryPermit;
use super::classify::{ClassifyResponse, DefaultClassifier};
use super::shared_future::SharedResponseFuture;
use crate::store::SharedFuse;

/// A [`Layer`] that puts a [`SharedFuse`] in front of a service: each call
/// asks the store for a permit (so the call's future does the admission,
/// not `call`), runs the inner call if it gets one, and gives the store
/// the verdict of its [`ClassifyResponse`] classifier, the same
/// classifiers as [`FuseLayer`](super::FuseLayer)'s ([`DefaultClassifier`]
/// by default; `grpc::GrpcClassifier` with the `tonic` feature, whose
/// verdicts in trailers the response body gives the store when they pass).
/// A refused call fails with the [`Refusal`](crate::store::Refusal), boxed
/// ([`ClassifyResponse::refuse`]), without calling the inner service. The
/// inner service is cloned for each call (its futures are `'static`), as
/// tower's `Buffer` and retry layers do.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
/// use fuse_breaker::tower::SharedFuseLayer;
/// use fuse_breaker::Config;
/// use tower::{Layer, ServiceExt, service_fn};
///
/// # futures::executor::block_on(async {
/// let store = Arc::new(MemoryStore::new());
/// let config = Config::builder().failure_threshold(1).build()?;
/// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(store).config(config).build());
/// let billing = SharedFuseLayer::new(fuse.clone()).layer(service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::builder().status(503).body(()).unwrap())
/// }));
/// let res = billing.clone().oneshot(http::Request::new(())).await?;
/// assert_eq!(res.status(), 503);
/// assert!(billing.oneshot(http::Request::new(())).await.is_err(), "open for the fleet");
/// # Ok::<(), fuse_breaker::tower::BoxError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SharedFuseLayer<C = DefaultClassifier> {
    fuse: Arc<SharedFuse>,
    classifier: C,
}

impl SharedFuseLayer {
    /// A layer over `fuse`, judging HTTP responses by status
    /// ([`DefaultClassifier`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// let layer = fuse_breaker::tower::SharedFuseLayer::new(fuse);
    /// # drop(layer);
    /// ```
    pub fn new(fuse: Arc<SharedFuse>) -> Self {
        SharedFuseLayer {
            fuse,
            classifier: DefaultClassifier,
        }
    }
}

impl<C> SharedFuseLayer<C> {
    /// The same layer with another classifier.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::tower::{OkIsSuccess, SharedFuseLayer};
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("lookup").store(Arc::new(MemoryStore::new())).build());
    /// let layer = SharedFuseLayer::new(fuse).classifier(OkIsSuccess);
    /// assert_eq!(*layer.get_classifier(), OkIsSuccess);
    /// ```
    pub fn classifier<C2>(self, classifier: C2) -> SharedFuseLayer<C2> {
        SharedFuseLayer {
            fuse: self.fuse,
            classifier,
        }
    }

    /// The classifier.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::tower::{DefaultClassifier, SharedFuseLayer};
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// assert_eq!(*SharedFuseLayer::new(fuse).get_classifier(), DefaultClassifier);
    /// ```
    pub fn get_classifier(&self) -> &C {
        &self.classifier
    }
}

impl<S, C: Clone> Layer<S> for SharedFuseLayer<C> {
    type Service = SharedFuseService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        SharedFuseService {
            inner,
            fuse: self.fuse.clone(),
            classifier: self.classifier.clone(),
        }
    }
}

impl<C> fmt::Debug for SharedFuseLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuseLayer")
            .field("fuse", &self.fuse)
            .finish_non_exhaustive()
    }
}

/// A service behind a [`SharedFuse`] (built by [`SharedFuseLayer`]).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
/// use fuse_breaker::tower::SharedFuseLayer;
/// use tower::Layer;
/// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
/// let svc = SharedFuseLayer::new(fuse).layer(tower::service_fn(|_: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new(()))
/// }));
/// assert_eq!(svc.fuse().key(), "fuse:billing");
/// ```
#[derive(Clone)]
pub struct SharedFuseService<S, C = DefaultClassifier> {
    inner: S,
    fuse: Arc<SharedFuse>,
    classifier: C,
}

impl<S, C> SharedFuseService<S, C> {
    /// The shared circuit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::tower::SharedFuseLayer;
    /// use tower::Layer;
    /// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
    /// let svc = SharedFuseLayer::new(fuse.clone()).layer(());
    /// assert!(Arc::ptr_eq(svc.fuse(), &fuse));
    /// ```
    pub fn fuse(&self) -> &Arc<SharedFuse> {
        &self.fuse
    }
}

impl<S, C> fmt::Debug for SharedFuseService<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuseService")
            .field("fuse", &self.fuse)
            .finish_non_exhaustive()
    }
}

impl<S, C, Req> Service<Req> for SharedFuseService<S, C>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    S::Response: CarryPermit<C::ClassifyEos> + Send + 'static,
    C: ClassifyResponse<S::Response> + Clone + Send + 'static,
    C::ClassifyEos: Send + 'static,
    Req: Send + 'static,
{
    type Response = <S::Response as CarryPermit<C::ClassifyEos>>::Response;
    type Error = BoxError;
    type Future = SharedResponseFuture<S::Response, C::ClassifyEos>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The service `poll_ready` made ready goes into the future; this one
        // keeps a clone for the next call.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        SharedResponseFuture::new(self.fuse.clone(), inner, request, self.classifier.clone())
    }
}
