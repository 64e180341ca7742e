//! [`FuseLayer`]: wraps services in a [`FuseService`].

use std::sync::Arc;

use tower_layer::Layer;

use super::backed::LayerBacking;
use super::classify::DefaultClassifier;
use super::select::{OneCircuit, PerOperation};
use super::service::FuseService;
use crate::fuse::Fuse;
use crate::registry::Registry;

/// Puts a circuit in front of a service: a [`Layer`] that wraps services
/// in a [`FuseService`].
///
/// `P` picks the circuit of each request ([`OneCircuit`],
/// [`PerOperation`] or any [`SelectCircuit`](super::SelectCircuit)); `C`
/// classifies what the service returns ([`DefaultClassifier`] for HTTP
/// responses, or any [`ClassifyResponse`](super::ClassifyResponse)).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::FuseLayer;
/// use fuse_breaker::{Fuse, State};
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// let fuse = Arc::new(Fuse::new("billing", Default::default()));
/// let svc = ServiceBuilder::new()
///     .layer(FuseLayer::new(fuse.clone()))
///     .service(service_fn(|req: http::Request<()>| async move {
///         Ok::<_, std::io::Error>(http::Response::new(req.uri().path().to_owned()))
///     }));
/// let res = futures::executor::block_on(svc.oneshot(http::Request::new(()))).unwrap();
/// assert_eq!(res.body(), "/");
/// assert_eq!(fuse.state(), State::Closed);
/// ```
#[derive(Clone, Debug)]
pub struct FuseLayer<P = OneCircuit, C = DefaultClassifier> {
    select: P,
    classifier: C,
}

impl<B: LayerBacking> FuseLayer<OneCircuit<B>> {
    /// Every request through `fuse`, classified by [`DefaultClassifier`]:
    /// a circuit of this process, or a shared one, whose call's future
    /// asks the store for a permit and gives it the verdict.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let layer = fuse_breaker::tower::FuseLayer::new(fuse);
    /// assert_eq!(layer.selector().fuse().key(), "fuse:billing");
    /// ```
    pub fn new(fuse: Arc<Fuse<B>>) -> Self {
        FuseLayer::with_selector(OneCircuit::new(fuse))
    }
}

impl<F, B: LayerBacking> FuseLayer<PerOperation<F, B>> {
    /// Each request through the circuit of its operation: the circuit
    /// `registry.get_operation(name, select(&request))`, so that
    /// operations trip separately. Give the closure's argument its type;
    /// it returns a `&str` borrowed from the request or a `&'static str`.
    /// Select from a bounded set of operations (see [`PerOperation`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::FuseLayer;
    /// use fuse_breaker::{Registry, State};
    /// use tower::{Layer, ServiceExt, service_fn};
    ///
    /// let registry = Arc::new(Registry::new(Default::default()));
    /// let layer = FuseLayer::per_operation(registry.clone(), "billing", |req: &http::Request<()>| {
    ///     req.uri().path().trim_start_matches('/')
    /// });
    /// let billing = layer.layer(service_fn(|_req: http::Request<()>| async {
    ///     Ok::<_, std::io::Error>(http::Response::new(()))
    /// }));
    ///
    /// registry.get_operation("billing", "charge").force_open();
    /// let charge = http::Request::builder().uri("/charge").body(()).unwrap();
    /// let refund = http::Request::builder().uri("/refund").body(()).unwrap();
    /// futures::executor::block_on(async {
    ///     assert!(billing.clone().oneshot(charge).await.is_err());
    ///     assert!(billing.clone().oneshot(refund).await.is_ok());
    /// });
    /// assert_eq!(registry.get_operation("billing", "refund").state(), State::Closed);
    /// ```
    pub fn per_operation<Req>(
        registry: Arc<Registry<B>>,
        name: impl Into<String>,
        select: F,
    ) -> Self
    where
        F: for<'a> Fn(&'a Req) -> &'a str,
    {
        FuseLayer::with_selector(PerOperation::new(registry, name, select))
    }
}

impl<P> FuseLayer<P> {
    /// Each request through the circuit that `select` picks for it (see
    /// [`SelectCircuit`](super::SelectCircuit)), classified by
    /// [`DefaultClassifier`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::{FuseLayer, OneCircuit};
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let layer = FuseLayer::with_selector(OneCircuit::new(fuse));
    /// assert_eq!(layer.selector().fuse().name(), "billing");
    /// ```
    pub fn with_selector(select: P) -> Self {
        FuseLayer {
            select,
            classifier: DefaultClassifier,
        }
    }
}

impl<P, C> FuseLayer<P, C> {
    /// The same layer with another classifier.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::{FuseLayer, OkIsSuccess};
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("lookup", Default::default()));
    /// let layer = FuseLayer::new(fuse).classifier(OkIsSuccess);
    /// assert_eq!(*layer.get_classifier(), OkIsSuccess);
    /// ```
    pub fn classifier<C2>(self, classifier: C2) -> FuseLayer<P, C2> {
        FuseLayer {
            select: self.select,
            classifier,
        }
    }

    /// The circuit selector.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// let layer = fuse_breaker::tower::FuseLayer::new(fuse.clone());
    /// assert!(Arc::ptr_eq(layer.selector().fuse(), &fuse));
    /// ```
    pub fn selector(&self) -> &P {
        &self.select
    }

    /// The classifier.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::{DefaultClassifier, FuseLayer};
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(*FuseLayer::new(fuse).get_classifier(), DefaultClassifier);
    /// ```
    pub fn get_classifier(&self) -> &C {
        &self.classifier
    }
}

impl<S, P: Clone, C: Clone> Layer<S> for FuseLayer<P, C> {
    type Service = FuseService<S, P, C>;

    fn layer(&self, inner: S) -> Self::Service {
        FuseService::from_parts(inner, self.select.clone(), self.classifier.clone())
    }
}
